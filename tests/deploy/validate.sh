#!/usr/bin/env bash
# Validates the Kubernetes manifests in deploy/kubernetes/, offline.
#
#   tests/deploy/validate.sh
#
# 1. kubernetes-validate (PyPI, pinned below) in a venv at
#    target/k8s-validate-venv, installed when missing or when the pin changed.
#    It bundles the Kubernetes JSON schemas, so validation needs no network:
#    where `unshare -n` works (root on Linux) it runs in a network namespace
#    without interfaces, which proves that.
# 2. Every manifest is validated strictly (unknown fields are errors) against
#    the oldest and the newest Kubernetes version we support. A manifest whose
#    kind has no schema (a typo in `kind`) is a failure, not a warning.
#    kustomization.yaml is checked separately: each resource it lists exists.
# 3. The toolgate.toml of the ConfigMap loads with `toolgate check-config`
#    (with the Secret example's variables set).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"

VALIDATOR="kubernetes-validate==1.37.0"
KUBERNETES_VERSIONS=(1.30.0 1.37.0)
dir=deploy/kubernetes

say() { printf 'tests/deploy/validate.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

venv="$repo/target/k8s-validate-venv"
py="$venv/bin/python"
if [[ ! -x "$py" ]] || ! "$py" -c 'import sys' 2>/dev/null; then
    rm -rf "$venv"
    mkdir -p "$repo/target"
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

manifests=()
for f in "$dir"/*.yaml; do
    [[ "$(basename "$f")" == kustomization.yaml ]] || manifests+=("$f")
done
((${#manifests[@]})) || die "no manifests in $dir"

for version in "${KUBERNETES_VERSIONS[@]}"; do
    out="$("${offline[@]}" "$venv/bin/kubernetes-validate" --strict -k "$version" "${manifests[@]}" 2>&1)" \
        || { printf '%s\n' "$out" >&2; die "manifests invalid for Kubernetes $version"; }
    if grep -Ev '^INFO ' <<<"$out" | grep -q .; then
        printf '%s\n' "$out" >&2
        die "unexpected warnings for Kubernetes $version (an unknown kind?)"
    fi
    say "${#manifests[@]} manifests valid for Kubernetes $version (strict)"
done

# kustomization.yaml: every listed resource exists.
"$py" - "$dir/kustomization.yaml" <<'PY'
import os, sys, yaml
path = sys.argv[1]
doc = yaml.safe_load(open(path))
missing = [r for r in doc.get("resources", []) if not os.path.exists(os.path.join(os.path.dirname(path), r))]
if doc.get("kind") != "Kustomization" or missing:
    sys.exit(f"{path}: kind {doc.get('kind')!r}, missing resources: {missing}")
PY
say "kustomization.yaml lists existing resources"

# The ConfigMap's toolgate.toml loads, with the Secret example's variables.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
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
(
    set -a
    # shellcheck disable=SC1091
    . "$tmp/secret.env"
    set +a
    TOOLGATE_SERVER__LISTEN=0.0.0.0:8080 "$exe" check-config --config "$tmp/toolgate.toml" >/dev/null
) || die "the ConfigMap's toolgate.toml does not load (see above)"
say "the ConfigMap's toolgate.toml loads with toolgate check-config"
