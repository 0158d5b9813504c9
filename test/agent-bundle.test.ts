/**
 * dist/cairn-agent.js, the agent for hosts without a development checkout: built the way
 * `npm run build:agent` builds it, copied alone into a folder with no node_modules and no
 * package.json, and run there by Node against the embedded runtime, as it would run on a host
 * against a stack: it registers, takes a kernel from its queue and reports it to the end.
 */
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { isBuiltin } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sessionResult } from "../functions/core/sessions.ts";
import { buildAgent } from "../scripts/build-agent.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { until } from "./support/until.ts";

/** The Node the npm scripts run (the `node` devDependency): the bundle needs none of its modules. */
const NODE = process.execPath;

describe("the bundled agent", () => {
  let rt: TestRuntime;
  let folder: string;
  let bundle: string;
  let externalImports: readonly string[];
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), "cairn-agent-host-"));
    const built = join(mkdtempSync(join(tmpdir(), "cairn-agent-build-")), "cairn-agent.js");
    ({ externalImports } = await buildAgent(built));
    bundle = join(folder, "cairn-agent.js");
    copyFileSync(built, bundle);
    rt = await startTestRuntime({ agents: 0 });
  }, 120_000);
  afterAll(async () => {
    await rt?.stop();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  const run = (args: readonly string[], env: NodeJS.ProcessEnv = {}) =>
    spawn(NODE, [bundle, ...args], {
      cwd: folder,
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: folder, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });

  test("stands alone: nothing beside it to import from", () => {
    expect(existsSync(join(folder, "node_modules"))).toBe(false);
    expect(existsSync(join(folder, "package.json"))).toBe(false);
    // Every import left in the file is one of Node's own modules.
    expect(externalImports.length).toBeGreaterThan(0);
    expect(externalImports.filter((name) => !isBuiltin(name))).toEqual([]);
    expect(readFileSync(bundle, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
  });

  test("--help lists cairn agent's options", async () => {
    const child = run(["--help"]);
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    expect(code).toBe(0);
    expect(stdout).toContain("Usage: cairn agent [options]");
    for (const option of [
      "--id <ID>",
      "--cpu <N>",
      "--memory-mib <N>",
      "--labels <K=V,...>",
      "--work-root <DIR>",
      "--heartbeat-seconds <N>",
      "--drain-grace-seconds <N>",
      "--stack <NAME>",
      "--endpoint <URL>",
    ]) {
      expect(stdout).toContain(option);
    }
  });

  test("a bad option is refused as cairn agent refuses it", async () => {
    const child = run(["--cpu", "0"]);
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('cairn: --cpu must be a number greater than 0, got "0"');
  });

  test("registers with the runtime and runs a kernel to the end", async () => {
    const { info } = rt.runtime;
    const child = run(
      [
        "--endpoint",
        info.endpoints.edge,
        "--id",
        "bundled-agent",
        "--cpu",
        "1",
        "--memory-mib",
        "512",
        "--labels",
        "built=bundle",
        "--heartbeat-seconds",
        "0.5",
        "--work-root",
        join(folder, "work"),
      ],
      {
        // What a host is given: a region, the agent's credentials and Cairn's names.
        AWS_REGION: info.region,
        AWS_ACCESS_KEY_ID: info.credentials.agent.accessKeyId,
        AWS_SECRET_ACCESS_KEY: info.credentials.agent.secretAccessKey,
        CAIRN_TABLE_NAME: info.tableName,
        CAIRN_EVENT_BUS_NAME: info.eventBusName,
        CAIRN_AGENT_QUEUE_PREFIX: info.agentQueuePrefix,
        CAIRN_KERNEL_LOG_GROUP_NAME: info.kernelLogGroupName,
      },
    );
    const lines: string[] = [];
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    createInterface({ input: child.stderr }).on("line", (line) => lines.push(line));
    try {
      await until("the bundled agent to register", () => {
        if (child.exitCode !== null)
          throw new Error(`the agent exited ${child.exitCode}:\n${lines.join("\n")}`);
        return lines.some((l) => l.includes("agent bundled-agent: registered (")) ? true : undefined;
      });
      const sessionId = `bundled-${Date.now().toString(36)}`;
      await rt.submit({
        sessionId,
        spec: {
          name: "bundled",
          command: ["/bin/sh", "-c", "echo ran on $CAIRN_AGENT_ID"],
          nodeSelector: { built: "bundle" },
        },
      });
      const done = await rt.waitForEnd(sessionId);
      expect(sessionResult(done)).toBe("succeeded");
      expect(done.kernels[0]?.agentId).toBe("bundled-agent");
      expect(done.kernels[0]?.exitCode).toBe(0);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(lines.join("\n")).toContain("agent bundled-agent: stopped");
  }, 90_000);
});
