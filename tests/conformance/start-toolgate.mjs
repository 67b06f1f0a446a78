// Starts toolgate in passthrough mode with one Streamable HTTP upstream: what
// the client wrappers (client-wrapper.mjs for the 0.1.16 suite,
// client-wrapper-2026.mjs for 0.2.0) put between the suite's test server and
// their downstream client.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

/** Starts `toolgateBin` in front of `url`; resolves to {url, stop}. */
export async function startToolgate(toolgateBin, url) {
  const dir = mkdtempSync(join(tmpdir(), "toolgate-conformance-client-"));
  const config = join(dir, "toolgate.toml");
  writeFileSync(
    config,
    [
      "[server]",
      'listen = "127.0.0.1:0"',
      "",
      "[[upstream]]",
      'name = "conformance"',
      `url = ${JSON.stringify(url)}`,
      'mode = "passthrough"',
      // The suite's servers answer within milliseconds; a stuck call should
      // fail the scenario well before the suite's own 30 s client timeout.
      'timeout = "20s"',
      "",
    ].join("\n"),
  );
  const child = spawn(toolgateBin, ["serve", "--config", config], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, TOOLGATE_LOG: process.env.TOOLGATE_LOG ?? "info,toolgate=debug" },
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // toolgate's log goes to our stderr, which the suite saves beside the checks.
  const lines = createInterface({ input: child.stderr });
  const listening = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("toolgate did not start listening within 20 s")), 20000);
    child.once("exit", (code) => reject(new Error(`toolgate exited (code ${code}) before listening`)));
    lines.on("line", (line) => {
      process.stderr.write(`[toolgate] ${line}\n`);
      const at = line.indexOf("listening on ");
      if (at >= 0) {
        clearTimeout(timer);
        resolve(line.slice(at + "listening on ".length).trim());
      }
    });
  });
  try {
    return { url: await listening, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
