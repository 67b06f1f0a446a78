// Which server scenarios of the 0.2.0 suite the 2026-07-28 runs grade: the
// scored ones (`server:` in the suite's requirements/2026-07-28.yaml), plus
// the header-validation scenarios the suite runs without scoring them
// (pending upstream), which toolgate passes in passthrough mode; their
// expected failures elsewhere are in expected-2026/ like any other.

import { readFileSync } from "node:fs";

import { parse as parseYaml } from "yaml";

/** Unscored scenarios graded all the same. */
export const ALSO_GRADED = ["http-header-validation", "http-custom-header-server-validation"];

/** The graded server scenarios, scored ones first. */
export function gradedScenarios(requirementsPath) {
  const requirements = parseYaml(readFileSync(requirementsPath, "utf8")) ?? {};
  const scored = (requirements.server ?? []).map((s) => (typeof s === "string" ? s : s.name ?? s.id ?? String(s)));
  return [...scored, ...ALSO_GRADED.filter((name) => !scored.includes(name))];
}
