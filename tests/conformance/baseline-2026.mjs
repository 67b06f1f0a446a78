// Writes the expected-failures files of the 2026-07-28 runs from a results
// directory of tests/conformance/run.sh: what fails today, so CI is green on
// what is known and fails on any change. Review the reasons it writes (the
// first failing check's message) and replace them with the real cause.
//
//   node baseline-2026.mjs RESULTS_DIR/2026 REQUIREMENTS_YAML OUT_DIR
//
// A scenario whose checks all fail is listed whole; one where some pass is
// listed check by check (`scenario:check-id`), so the passing checks stay
// guarded.

import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { gradedScenarios } from "./graded-2026.mjs";

const [root, requirementsPath, out] = process.argv.slice(2);
if (!root || !requirementsPath || !out) {
  console.error("usage: baseline-2026.mjs RESULTS_DIR REQUIREMENTS_YAML OUT_DIR");
  process.exit(2);
}
const scored = new Set(gradedScenarios(requirementsPath));
const oneLine = (s) => String(s ?? "").replace(/\s+/g, " ").slice(0, 160);

const clientLines = [];
for (const run of readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory())) {
  const dir = join(root, run.name);
  if (!existsSync(join(dir, "run.json"))) continue;
  const meta = JSON.parse(readFileSync(join(dir, "run.json"), "utf8"));
  const lines = [];
  for (const entry of readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory())) {
    const file = join(dir, entry.name, "checks.json");
    if (!existsSync(file)) continue;
    const scenario = entry.name.replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "").replace(/^server-/, "");
    if (meta.kind === "server" && !scored.has(scenario)) continue;
    const checks = JSON.parse(readFileSync(file, "utf8"));
    const failing = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
    const passing = checks.filter((c) => c.status === "SUCCESS");
    if (failing.length === 0 && (meta.kind === "server" || meta.exitCode === 0)) continue;
    if (failing.length === 0 || passing.length === 0) {
      const reason = failing[0] ? `${failing[0].id}: ${failing[0].errorMessage ?? failing[0].description}` : `the client wrapper failed (exit ${meta.exitCode})`;
      lines.push(`  - ${scenario} # ${oneLine(reason)}`);
    } else {
      const seen = new Set();
      for (const c of failing) {
        if (seen.has(c.id)) continue;
        seen.add(c.id);
        lines.push(`  - ${scenario}:${c.id} # ${oneLine(c.errorMessage ?? c.description)}`);
      }
    }
  }
  if (meta.kind === "server") {
    const body = lines.length > 0 ? `server:\n${lines.sort().join("\n")}\n` : "server: []\n";
    writeFileSync(join(out, `${meta.name}.yml`), `# 2026-07-28 expected failures of the ${meta.name} run (tests/conformance/run.sh).\n${body}`);
  } else {
    clientLines.push(...lines);
  }
}
const body = clientLines.length > 0 ? `client:\n${clientLines.sort().join("\n")}\n` : "client: []\n";
writeFileSync(join(out, "client.yml"), `# 2026-07-28 expected failures of the client scenarios through toolgate (tests/conformance/run.sh).\n${body}`);
