#!/usr/bin/env bash
# Validates the Kubernetes manifests in deploy/kubernetes/, offline: the base
# (deploy/kubernetes/base, applied by deploy/kubernetes/kustomization.yaml) and
# the high-availability overlay (deploy/kubernetes/overlays/ha).
#
#   tests/deploy/validate.sh
#
# 1. kubernetes-validate (PyPI, pinned below) in a venv at
#    $CARGO_TARGET_DIR/k8s-validate-venv (default target/), installed when
#    missing or when the pin changed. It bundles the Kubernetes JSON schemas,
#    so validation needs no network: where `unshare -n` works (root on Linux)
#    it runs in a network namespace without interfaces, which proves that.
# 2. Every kustomization.yaml is checked: each resource and patch it lists
#    exists.
# 3. The overlay is rendered without kustomize: its own resources, plus the
#    base's with the overlay's JSON patches (RFC 6902; the only patch kind
#    this renderer knows, so keep the overlay's patches in that form) applied.
#    Where `kubectl kustomize` or `kustomize` is installed, the overlay is
#    also rendered with it, and both renderings must agree (images and
#    namespaces aside). The overlay must keep its promises: more than one
#    replica, TOOLGATE_STATE__REDIS_URL set, no sessionAffinity; the base keeps
#    ClientIP affinity (it has no Redis).
# 4. Every manifest (the base's files, the overlay's files, the rendered
#    overlay) is validated strictly (unknown fields are errors) against the
#    oldest and the newest Kubernetes version we support. A manifest whose
#    kind has no schema (a typo in `kind`) is a failure, not a warning.
# 5. The toolgate.toml of the ConfigMap loads with `toolgate check-config`
#    (with the Secret example's variables set), as is and with the overlay's
#    TOOLGATE_STATE__REDIS_URL.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"

VALIDATOR="kubernetes-validate==1.37.0"
KUBERNETES_VERSIONS=(1.30.0 1.37.0)
top=deploy/kubernetes
dir=deploy/kubernetes/base
overlay=deploy/kubernetes/overlays/ha

say() { printf 'tests/deploy/validate.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

target="${CARGO_TARGET_DIR:-$repo/target}"
venv="$target/k8s-validate-venv"
py="$venv/bin/python"
if [[ ! -x "$py" ]] || ! "$py" -c 'import sys' 2>/dev/null; then
    rm -rf "$venv"
    mkdir -p "$target"
    python3 -m venv "$venv" || die "python3 -m venv failed (install python3-venv)"
fi
if [[ "$(cat "$venv/.pin" 2>/dev/null || true)" != "$VALIDATOR" ]]; then
    say "installing $VALIDATOR into $venv"
    "$py" -m pip install --quiet --disable-pip-version-check --no-input "$VALIDATOR" || die "pip install $VALIDATOR failed"
    echo "$VALIDATOR" >"$venv/.pin"
fi

offline=()
if unshare -n true 2>/dev/null; then
    offline=(unshare -n)
else
    say "unshare -n is not available: validating without proving it is offline"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Every kustomization lists existing files; render the overlay.
"$py" - "$top" "$dir" "$overlay" "$tmp" <<'PY'
import copy, os, sys, yaml

top, base, overlay, out = sys.argv[1:]

def kustomization(d):
    path = os.path.join(d, "kustomization.yaml")
    doc = yaml.safe_load(open(path))
    if not isinstance(doc, dict) or doc.get("kind") != "Kustomization":
        sys.exit(f"{path}: not a Kustomization")
    listed = list(doc.get("resources", []))
    listed += [p["path"] for p in doc.get("patches", []) if "path" in p]
    missing = [r for r in listed if not os.path.exists(os.path.join(d, r))]
    if missing:
        sys.exit(f"{path}: missing resources or patches: {missing}")
    return doc

def pointer(path):
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]

def apply(doc, ops, where):
    for op in ops:
        *parents, last = pointer(op["path"])
        node = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        kind = op["op"]
        if isinstance(node, list):
            if kind == "add":
                node.insert(len(node) if last == "-" else int(last), op["value"])
            elif kind == "replace":
                node[int(last)] = op["value"]
            elif kind == "remove":
                del node[int(last)]
            else:
                sys.exit(f"{where}: op {kind!r} not supported")
        else:
            if kind in ("add", "replace"):
                if kind == "replace" and last not in node:
                    sys.exit(f"{where}: replace of a missing {op['path']}")
                node[last] = op["value"]
            elif kind == "remove":
                if last not in node:
                    sys.exit(f"{where}: remove of a missing {op['path']}")
                del node[last]
            else:
                sys.exit(f"{where}: op {kind!r} not supported")

def render(d):
    k = kustomization(d)
    docs = []
    for r in k.get("resources", []):
        p = os.path.join(d, r)
        if os.path.isdir(p):
            docs += render(p)
        else:
            docs += [x for x in yaml.safe_load_all(open(p)) if x]
    for patch in k.get("patches", []):
        where = os.path.join(d, patch.get("path", "<inline>"))
        ops = yaml.safe_load(open(where)) if "path" in patch else yaml.safe_load(patch["patch"])
        if not isinstance(ops, list):
            sys.exit(f"{where}: not a JSON patch (a list of operations)")
        t = patch.get("target", {})
        hits = [x for x in docs if all(x.get("kind") == t["kind"] if key == "kind" else x["metadata"].get(key) == v
                                        for key, v in t.items())]
        if len(hits) != 1:
            sys.exit(f"{where}: target {t} matches {len(hits)} resources")
        apply(hits[0], ops, where)
    return docs

kustomization(top)
base_docs = render(base)
docs = render(overlay)
with open(os.path.join(out, "overlay.yaml"), "w") as f:
    yaml.safe_dump_all(docs, f, sort_keys=False)

def find(ds, kind, name):
    return next(x for x in ds if x["kind"] == kind and x["metadata"]["name"] == name)

# The overlay's promises, and the base's.
dep = find(docs, "Deployment", "toolgate")
env = {e["name"]: e for e in dep["spec"]["template"]["spec"]["containers"][0].get("env", [])}
redis = env.get("TOOLGATE_STATE__REDIS_URL", {})
url = redis.get("value")
problems = []
if dep["spec"]["replicas"] < 2:
    problems.append("the overlay's toolgate Deployment has fewer than 2 replicas")
if "valueFrom" in redis:
    # A managed Redis, its URL in a Secret (deploy/kubernetes/README.md).
    url = "rediss://user:password@redis.example.invalid:6380/0"
elif not url:
    problems.append("the overlay sets no TOOLGATE_STATE__REDIS_URL")
else:
    host = url.split("://", 1)[1].split("/", 1)[0].split(":")[0].split("@")[-1]
    if not any(x["kind"] == "Service" and x["metadata"]["name"] == host for x in docs):
        problems.append(f"TOOLGATE_STATE__REDIS_URL names {host!r}, which is no Service of the overlay")
if "sessionAffinity" in find(docs, "Service", "toolgate")["spec"]:
    problems.append("the overlay's toolgate Service keeps sessionAffinity")
if find(base_docs, "Service", "toolgate")["spec"].get("sessionAffinity") != "ClientIP":
    problems.append("the base's toolgate Service lost its ClientIP affinity (it has no Redis)")
if problems:
    sys.exit("\n".join(problems))
open(os.path.join(out, "redis_url"), "w").write(url)
PY
say "kustomization.yaml files list existing resources; overlays/ha renders (3 replicas, Redis, no affinity)"

# The same rendering by kustomize, where installed.
kustomize=()
if command -v kustomize >/dev/null; then
    kustomize=(kustomize build)
elif command -v kubectl >/dev/null && kubectl kustomize --help >/dev/null 2>&1; then
    kustomize=(kubectl kustomize)
fi
rendered=("$tmp/overlay.yaml")
if ((${#kustomize[@]})); then
    "${offline[@]}" "${kustomize[@]}" "$overlay" >"$tmp/overlay.kustomize.yaml" \
        || die "${kustomize[*]} $overlay failed"
    "${offline[@]}" "${kustomize[@]}" "$top" >/dev/null || die "${kustomize[*]} $top failed"
    "$py" - "$tmp/overlay.yaml" "$tmp/overlay.kustomize.yaml" <<'PY' || die "the two renderings of $overlay differ"
import sys, yaml
def norm(path):
    docs = []
    for d in yaml.safe_load_all(open(path)):
        if not d:
            continue
        d["metadata"].pop("namespace", None)
        for c in d.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
            c.pop("image", None)
        docs.append(d)
    return sorted(docs, key=lambda d: (d["kind"], d["metadata"]["name"]))
a, b = norm(sys.argv[1]), norm(sys.argv[2])
if a != b:
    for x, y in zip(a, b):
        if x != y:
            print(yaml.safe_dump(x), "---- kustomize:\n", yaml.safe_dump(y), file=sys.stderr)
    sys.exit(1)
PY
    rendered+=("$tmp/overlay.kustomize.yaml")
    say "${kustomize[*]} renders $top and $overlay, and agrees with this script's rendering"
else
    say "neither kustomize nor kubectl is installed: the overlay is rendered by this script only"
fi

manifests=()
for d in "$dir" "$overlay"; do
    for f in "$d"/*.yaml; do
        case "$(basename "$f")" in
            kustomization.yaml | *.patch.yaml) ;;
            *) manifests+=("$f") ;;
        esac
    done
done
((${#manifests[@]})) || die "no manifests in $dir"

for version in "${KUBERNETES_VERSIONS[@]}"; do
    out="$("${offline[@]}" "$venv/bin/kubernetes-validate" --strict -k "$version" "${manifests[@]}" "${rendered[@]}" 2>&1)" \
        || { printf '%s\n' "$out" >&2; die "manifests invalid for Kubernetes $version"; }
    if grep -Ev '^INFO ' <<<"$out" | grep -q .; then
        printf '%s\n' "$out" >&2
        die "unexpected warnings for Kubernetes $version (an unknown kind?)"
    fi
    say "${#manifests[@]} manifests and ${#rendered[@]} rendering(s) of overlays/ha valid for Kubernetes $version (strict)"
done

# The ConfigMap's toolgate.toml loads, with the Secret example's variables.
"$py" - "$dir/configmap.yaml" "$dir/secret.example.yaml" "$tmp" <<'PY'
import sys, yaml
configmap, secret, out = sys.argv[1:]
open(f"{out}/toolgate.toml", "w").write(yaml.safe_load(open(configmap))["data"]["toolgate.toml"])
with open(f"{out}/secret.env", "w") as f:
    for k, v in yaml.safe_load(open(secret))["stringData"].items():
        f.write(f"{k}={v}\n")
PY
cargo build --locked --quiet --bin toolgate
exe="$(cargo metadata --format-version 1 --no-deps | "$py" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug/toolgate"
check_config() {
    (
        set -a
        # shellcheck disable=SC1091
        . "$tmp/secret.env"
        set +a
        TOOLGATE_SERVER__LISTEN=0.0.0.0:8080 "$@" "$exe" check-config --config "$tmp/toolgate.toml" >/dev/null
    )
}
check_config env || die "the ConfigMap's toolgate.toml does not load (see above)"
say "the ConfigMap's toolgate.toml loads with toolgate check-config"
check_config env TOOLGATE_STATE__REDIS_URL="$(cat "$tmp/redis_url")" \
    || die "the ConfigMap's toolgate.toml does not load with overlays/ha's TOOLGATE_STATE__REDIS_URL (see above)"
say "... and with overlays/ha's TOOLGATE_STATE__REDIS_URL"
