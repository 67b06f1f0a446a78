// Grades the conformance runs made by tests/conformance/run.sh and prints a
// compact table; exits non-zero on any unexpected failure.
//
//   node summarize.mjs RESULTS_DIR [--markdown FILE]
//
// RESULTS_DIR holds one directory per run, each with a `run.json`
// ({order, name, kind: "server"|"client", expected: path|null, exitCode},
// plus `scenario` for a client run)
// and the suite's own `<scenario>-<timestamp>/checks.json` files.
//
// A scenario fails when any of its checks is FAILURE or WARNING (what the
// suite's own --expected-failures comparison uses). Cells:
//   pass    passed, not expected to fail
//   pass†   passed, but a check passed on toolgate's TOOL_DESCRIPTION_REQUIRED
//           refusal (the scenario does not tell a refusal from a real result)
//   n/a     no check failed, and none passed either: only INFO (the
//           scenario found nothing it applies to)
//   xfail   failed, and listed in the run's expected-failures file
//   FAIL    failed, not listed                      -> exit 1
//   STALE   listed as expected to fail, but passed  -> exit 1
//   -       not run here (missing from a run that should have it -> exit 1)
// A client scenario also fails when the client wrapper exited non-zero or
// timed out (the suite's own rule), which run.sh records as exitCode.

import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { parse as parseYaml } from "yaml";

const [root, ...rest] = process.argv.slice(2);
if (!root) {
  console.error("usage: summarize.mjs RESULTS_DIR [--markdown FILE]");
  process.exit(2);
}
const markdownAt = rest[0] === "--markdown" ? rest[1] : null;

/** Scenario name from a results directory name (drops prefix and timestamp). */
function scenarioOf(dir, kind) {
  const bare = dir.replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "");
  return kind === "server" ? bare.replace(/^server-/, "") : bare;
}

/** `{scenarios: [...], reasons: {scenario: text}}` of an expected-failures file. */
function readExpected(path) {
  if (!path) return { file: null, scenarios: [], reasons: {} };
  const text = readFileSync(path, "utf8");
  const parsed = parseYaml(text) ?? {};
  const reasons = {};
  for (const line of text.split("\n")) {
    const m = line.match(/^\s*-\s*([^\s#]+)\s*#\s*(.+)$/);
    if (m) reasons[m[1]] = m[2].trim();
  }
  return { file: path, scenarios: (parsed.server ?? parsed.client ?? []).map(String), reasons };
}

/** Whether `value` holds toolgate's refusal: a text that is the JSON
 * `{"error": {"code": "TOOL_DESCRIPTION_REQUIRED", ...}}`. */
function holdsRefusal(value) {
  if (typeof value === "string") {
    if (!value.includes("TOOL_DESCRIPTION_REQUIRED")) return false;
    try {
      return JSON.parse(value)?.error?.code === "TOOL_DESCRIPTION_REQUIRED";
    } catch {
      return false;
    }
  }
  if (value && typeof value === "object") return Object.values(value).some(holdsRefusal);
  return false;
}

/** The suite's results directory names end with the time they were made. */
function timeOf(dir) {
  return dir.match(/-(\d{4}-\d{2}-\d{2}T[\d-]+Z)$/)?.[1] ?? "";
}

function loadRun(dir) {
  const meta = JSON.parse(readFileSync(join(dir, "run.json"), "utf8"));
  const expected = readExpected(meta.expected);
  const scenarios = new Map();
  for (const entry of readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory())) {
    const file = join(dir, entry.name, "checks.json");
    if (!existsSync(file)) continue;
    const checks = JSON.parse(readFileSync(file, "utf8"));
    const count = (s) => checks.filter((c) => c.status === s).length;
    const failed = count("FAILURE") > 0 || count("WARNING") > 0;
    const onRefusal = checks.some((c) => c.status === "SUCCESS" && holdsRefusal(c.details));
    const problems = checks
      .filter((c) => c.status === "FAILURE" || c.status === "WARNING")
      .map((c) => `${c.status} ${c.name}: ${c.errorMessage ?? c.description}`);
    scenarios.set(scenarioOf(entry.name, meta.kind), {
      dir: entry.name,
      failed,
      onRefusal,
      problems,
      success: count("SUCCESS"),
      failure: count("FAILURE"),
      warning: count("WARNING"),
    });
  }
  return { ...meta, dir, expected, scenarios };
}

const runs = readdirSync(root, { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(join(root, e.name, "run.json")))
  .map((e) => loadRun(join(root, e.name)))
  .sort((a, b) => a.order - b.order);
if (runs.length === 0) {
  console.error(`summarize: no runs under ${root}`);
  process.exit(1);
}

const problems = [];

/** Notes a problem of `run` (once per run for the exit-code cross-check). */
function problem(run, text) {
  problems.push(`${run.name}: ${text}`);
  run.hasProblem = true;
}

/** The suite's exit code must agree with the grading: a failure it saw that
 * the checks do not show (a crashed scenario, a client wrapper that exited
 * non-zero or timed out) is still a failure. */
function crossCheckExit(run) {
  if (run.exitCode !== 0 && !run.hasProblem) {
    problem(run, `the suite exited ${run.exitCode} (see ${join(run.dir, "suite.log")})`);
  }
}

/** Server runs: one row per scenario (in the order the suite ran them), one
 * column per run. */
function gradeServer() {
  const these = runs.filter((r) => r.kind === "server");
  const names = [];
  for (const run of these) {
    const ordered = [...run.scenarios.entries()].sort((a, b) => timeOf(a[1].dir).localeCompare(timeOf(b[1].dir)));
    for (const [name] of ordered) if (!names.includes(name)) names.push(name);
  }
  const cells = new Map(names.map((n) => [n, []]));
  for (const run of these) {
    for (const name of names) {
      const s = run.scenarios.get(name);
      const expected = run.expected.scenarios.includes(name);
      let cell;
      if (!s) {
        cell = "-";
        problem(run, `scenario ${name} did not run`);
      } else if (s.failed && expected) {
        cell = "xfail";
      } else if (s.failed) {
        cell = "FAIL";
        problem(run, `${name} failed unexpectedly:\n      ${s.problems.join("\n      ")}`);
      } else if (expected) {
        cell = "STALE";
        problem(run, `${name} passes but is listed in ${run.expected.file}; remove it (stale baseline)`);
      } else if (s.success === 0) {
        cell = "n/a";
      } else {
        cell = s.onRefusal ? "pass†" : "pass";
      }
      cells.get(name).push(cell);
    }
    for (const name of run.expected.scenarios) {
      if (!run.scenarios.has(name)) problem(run, `expected failure ${name} did not run (renamed or removed from the suite?)`);
    }
    crossCheckExit(run);
  }
  return { these, names, cells };
}

/** Client runs: one scenario each. */
function gradeClient() {
  return runs
    .filter((r) => r.kind === "client")
    .map((run) => {
      const s = run.scenarios.get(run.scenario);
      let verdict = "pass";
      if (!s) {
        verdict = "-";
        problem(run, `scenario ${run.scenario} left no results`);
      } else if (s.failed) {
        verdict = "FAIL";
        problem(run, `failed:\n      ${s.problems.join("\n      ")}`);
      }
      crossCheckExit(run);
      if (run.exitCode !== 0) verdict = "FAIL";
      return { run, s, verdict };
    });
}

function pad(s, n) {
  return s + " ".repeat(Math.max(0, n - [...s].length));
}

const server = gradeServer();
const client = gradeClient();

if (server.these.length > 0) {
  const label = "checks (ok/fail/warn)";
  const first = Math.max(...server.names.map((n) => n.length), label.length) + 2;
  const widths = server.these.map((r) => Math.max(r.name.length, 9) + 2);
  const line = (head, values) => pad(head, first) + values.map((v, i) => pad(v, widths[i])).join("").trimEnd();
  console.log(line("server scenario", server.these.map((r) => r.name)));
  for (const name of server.names) console.log(line(name, server.cells.get(name)));
  const totals = server.these.map((r) => {
    const all = [...r.scenarios.values()];
    const sum = (k) => all.reduce((n, s) => n + s[k], 0);
    return `${sum("success")}/${sum("failure")}/${sum("warning")}`;
  });
  console.log(line(label, totals));
  console.log(line("suite exit code", server.these.map((r) => String(r.exitCode))));
  if (server.names.some((n) => server.cells.get(n).includes("pass†"))) {
    console.log("pass† = passed on toolgate's TOOL_DESCRIPTION_REQUIRED refusal (the scenario cannot tell it from a result)");
  }
  if (server.names.some((n) => server.cells.get(n).includes("n/a"))) {
    console.log("n/a   = no failure, but no passed check either (only INFO: nothing the scenario applies to)");
  }
}
if (client.length > 0) {
  const first = Math.max(...client.map((c) => c.run.scenario.length), "client scenario".length) + 2;
  console.log("");
  console.log(pad("client scenario", first) + "through toolgate (passthrough, HTTP upstream)");
  for (const { run, s, verdict } of client) {
    const detail = s ? ` (checks ${s.success}/${s.failure}/${s.warning}, suite exit ${run.exitCode})` : "";
    console.log(pad(run.scenario, first) + verdict + detail);
  }
}

if (markdownAt) {
  const reasons = Object.assign({}, ...server.these.map((r) => r.expected.reasons));
  const md = [];
  md.push(`| scenario | ${server.these.map((r) => r.name).join(" | ")} | note |`);
  md.push(`|---|${server.these.map(() => "---").join("|")}|---|`);
  for (const name of server.names) {
    const cells = server.cells.get(name).map((c) => (c === "xfail" ? "expected fail" : c));
    let note = reasons[name] ?? "";
    if (cells.every((c) => c === "n/a")) {
      note = "no graded check ran anywhere (INFO only)";
    }
    if (cells.includes("pass†")) {
      note = "† in progressive mode it passes on the refusal itself (a text result with `isError: true`), which the scenario cannot tell from a real result";
    }
    md.push(`| \`${name}\` | ${cells.join(" | ")} | ${note} |`);
  }
  if (client.length > 0) {
    md.push("");
    md.push("| client scenario | through toolgate | checks passed |");
    md.push("|---|---|---|");
    for (const { run, s, verdict } of client) md.push(`| \`${run.scenario}\` | ${verdict} | ${s ? s.success : 0} |`);
  }
  writeFileSync(markdownAt, md.join("\n") + "\n");
}

if (problems.length > 0) {
  console.log(`\nconformance: ${problems.length} problem(s):`);
  for (const p of problems) console.log(`  - ${p}`);
  process.exit(1);
}
console.log("\nconformance: every scenario as expected");
