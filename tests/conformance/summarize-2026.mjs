// Grades the 2026-07-28 runs of tests/conformance/run.sh (the 0.2.0 suite,
// installed as conformance-next) and prints one table per side; exits
// non-zero on any unexpected failure or stale expectation.
//
//   node summarize-2026.mjs RESULTS_DIR REQUIREMENTS_YAML [--markdown FILE]
//
// RESULTS_DIR holds one directory per run, each with a `run.json`
// ({order, name, kind: "server"|"client", expected: path|null, exitCode},
// plus `scenario` for a client run) and the suite's own
// `<scenario>-<timestamp>/checks.json` files. REQUIREMENTS_YAML is the
// suite's `requirements/2026-07-28.yaml`: its `server:` scenarios, and the
// unscored ones in graded-2026.mjs, are graded on the server side (the suite
// also runs other unscored ones).
//
// Judging follows the suite's own expected-failures rules (0.2.0): a
// scenario fails when a check is FAILURE or WARNING; an entry `scenario`
// expects the whole scenario to fail, `scenario:check-id` expects that check
// to fail (or to be absent or SKIPPED) and the rest to pass. Cells:
//   pass    every check passed, nothing expected to fail
//   xfail   failed, and every failing check is expected to
//   FAIL    a check failed that is not expected to     -> exit 1
//   STALE   an expected failure passes                 -> exit 1
//   -       did not run                                -> exit 1
// The reason after each entry (`- name  # reason`) is shown in the table.

import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { parse as parseYaml } from "yaml";

import { gradedScenarios } from "./graded-2026.mjs";

const [root, requirementsPath, ...rest] = process.argv.slice(2);
if (!root || !requirementsPath) {
  console.error("usage: summarize-2026.mjs RESULTS_DIR REQUIREMENTS_YAML [--markdown FILE]");
  process.exit(2);
}
const markdownAt = rest[0] === "--markdown" ? rest[1] : null;
// The scored scenarios, plus the unscored ones graded all the same.
const scored = gradedScenarios(requirementsPath);

/** Entries of an expected-failures file for one side: {whole, checks, reasons}. */
function readExpected(path, side) {
  const out = { file: path, whole: new Set(), checks: new Map(), reasons: {} };
  if (!path) return out;
  const text = readFileSync(path, "utf8");
  for (const entry of (parseYaml(text) ?? {})[side] ?? []) {
    const [scenario, check] = String(entry).split(":");
    if (check) {
      if (!out.checks.has(scenario)) out.checks.set(scenario, new Set());
      out.checks.get(scenario).add(check);
    } else {
      out.whole.add(scenario);
    }
  }
  for (const line of text.split("\n")) {
    const m = line.match(/^\s*-\s*([^\s#]+)\s*#\s*(.+)$/);
    if (m) reasons(out, m[1], m[2].trim());
  }
  return out;
}

function reasons(expected, entry, reason) {
  const scenario = entry.split(":")[0];
  expected.reasons[scenario] = expected.reasons[scenario] ? `${expected.reasons[scenario]}; ${reason}` : reason;
}

function scenarioOf(dir, kind) {
  const bare = dir.replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "");
  return kind === "server" ? bare.replace(/^server-/, "") : bare;
}

function loadRun(dir) {
  const meta = JSON.parse(readFileSync(join(dir, "run.json"), "utf8"));
  const expected = readExpected(meta.expected, meta.kind);
  const scenarios = new Map();
  for (const entry of readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory())) {
    const file = join(dir, entry.name, "checks.json");
    if (!existsSync(file)) continue;
    scenarios.set(scenarioOf(entry.name, meta.kind), JSON.parse(readFileSync(file, "utf8")));
  }
  return { ...meta, dir, expected, scenarios };
}

/** Grades one scenario's checks against the run's expectations. */
function grade(run, name, checks) {
  if (!checks) return { cell: "-", problem: "did not run" };
  const failing = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
  const describe = (list) => list.map((c) => `${c.status} ${c.id}: ${c.errorMessage ?? c.description}`);
  const passed = checks.filter((c) => c.status === "SUCCESS").length;
  const counts = `${passed}/${checks.length}`;
  if (run.expected.whole.has(name)) {
    return failing.length > 0
      ? { cell: "xfail", counts }
      : { cell: "STALE", counts, problem: `passes but is listed in ${run.expected.file}` };
  }
  const allowed = run.expected.checks.get(name) ?? new Set();
  const unexpected = failing.filter((c) => !allowed.has(c.id));
  if (unexpected.length > 0) return { cell: "FAIL", counts, problem: describe(unexpected).join("\n      ") };
  const stale = [...allowed].filter((id) => checks.some((c) => c.id === id && c.status === "SUCCESS") && !failing.some((c) => c.id === id));
  if (stale.length > 0) return { cell: "STALE", counts, problem: `checks ${stale.join(", ")} pass but are listed in ${run.expected.file}` };
  return { cell: failing.length > 0 ? "xfail" : "pass", counts };
}

const runs = readdirSync(root, { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(join(root, e.name, "run.json")))
  .map((e) => loadRun(join(root, e.name)))
  .sort((a, b) => a.order - b.order);
if (runs.length === 0) {
  console.error(`summarize-2026: no runs under ${root}`);
  process.exit(1);
}

const problems = [];
const pad = (s, n) => s + " ".repeat(Math.max(0, n - [...s].length));
const md = [];

const servers = runs.filter((r) => r.kind === "server");
if (servers.length > 0) {
  const grades = servers.map((run) => new Map(scored.map((name) => [name, grade(run, name, run.scenarios.get(name))])));
  const first = Math.max(...scored.map((n) => n.length), 24) + 2;
  const widths = servers.map((r) => Math.max(r.name.length, 9) + 2);
  const line = (head, values) => pad(head, first) + values.map((v, i) => pad(v, widths[i])).join("").trimEnd();
  console.log(line("server scenario (2026)", servers.map((r) => r.name)));
  for (const name of scored) console.log(line(name, grades.map((g) => g.get(name).cell)));
  console.log(line("passed", grades.map((g) => `${[...g.values()].filter((x) => x.cell === "pass").length}/${scored.length}`)));
  console.log(line("suite exit code", servers.map((r) => String(r.exitCode))));
  servers.forEach((run, i) => {
    for (const [name, g] of grades[i]) if (g.problem) problems.push(`${run.name}: ${name} ${g.cell}:\n      ${g.problem}`);
    const graded = [...grades[i].values()].some((g) => g.problem);
    if (run.exitCode !== 0 && !graded) problems.push(`${run.name}: the suite exited ${run.exitCode} (see ${join(run.dir, "suite.log")})`);
  });
  md.push(`| scenario (2026-07-28) | ${servers.map((r) => r.name).join(" | ")} | note |`);
  md.push(`|---|${servers.map(() => "---").join("|")}|---|`);
  for (const name of scored) {
    const note = servers.map((r) => r.expected.reasons[name] && `${r.name}: ${r.expected.reasons[name]}`).filter(Boolean).join("; ");
    md.push(`| \`${name}\` | ${grades.map((g) => (g.get(name).cell === "xfail" ? "expected fail" : g.get(name).cell)).join(" | ")} | ${note} |`);
  }
}

const clients = runs.filter((r) => r.kind === "client");
if (clients.length > 0) {
  const first = Math.max(...clients.map((c) => c.scenario.length), 24) + 2;
  console.log("");
  console.log(pad("client scenario (2026)", first) + "through toolgate (passthrough, HTTP upstream)");
  md.push("", "| client scenario (2026-07-28) | through toolgate | checks passed | note |", "|---|---|---|---|");
  for (const run of clients) {
    const g = grade(run, run.scenario, run.scenarios.get(run.scenario));
    // The suite also fails a scenario whose client exited non-zero.
    if (run.exitCode !== 0 && g.cell === "pass") {
      g.cell = "FAIL";
      g.problem = `the client wrapper or the suite failed (exit ${run.exitCode}; see ${join(run.dir, "suite.log")})`;
    }
    if (run.exitCode !== 0 && g.cell === "STALE") {
      g.cell = "xfail";
      delete g.problem;
    }
    if (g.problem) problems.push(`${run.name}: ${g.cell}:\n      ${g.problem}`);
    console.log(pad(run.scenario, first) + `${g.cell} (checks ${g.counts ?? "0/0"}, suite exit ${run.exitCode})`);
    md.push(`| \`${run.scenario}\` | ${g.cell === "xfail" ? "expected fail" : g.cell} | ${g.counts ?? "0/0"} | ${run.expected.reasons[run.scenario] ?? ""} |`);
  }
}

if (markdownAt) writeFileSync(markdownAt, md.join("\n") + "\n");
if (problems.length > 0) {
  console.log(`\nconformance 2026: ${problems.length} problem(s):`);
  for (const p of problems) console.log(`  - ${p}`);
  process.exit(1);
}
console.log("\nconformance 2026: every scenario as expected");
