/**
 * A kernel is the user's code: it must not reach Cairn's credentials, and a kernel Cairn
 * considers ended must not keep running. End to end, with `cairn agent` processes and real
 * kernels in the embedded runtime:
 *
 * - A kernel that walks up from its work directory finds the runtime file, but no agent
 *   credentials in it; nor in its agent's environment, argv or open descriptors.
 * - A forged "exit 0" (signed with a key an attacker read from the table) ends the session as
 *   succeeded while the process still runs: the agent learns from the answer to its next
 *   heartbeat that Cairn considers the run ended, stops the process and says so.
 *
 * As a kernel user (`--kernel-user`), e2e-kernel-user.test.ts (one runtime per test file).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DetailType, toPutEventsEntry, type EventDetailInput } from "../functions/core/events.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { signDetail } from "../functions/topology/agent-signature.ts";
import { runLogPaths } from "../agent/work-dir.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { LOOK_AROUND } from "./support/kernel-probe.ts";
import { until } from "./support/until.ts";

let n = 0;
const newId = (label: string) => `iso-${label}-${Date.now().toString(36)}-${n++}`;
const sh = (script: string) => ["/bin/sh", "-c", script];

/** Whether a process is alive (signal 0 is a check, not a signal). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("as the runtime's own user", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime({ agents: 1 });
  }, 120_000);
  afterAll(() => rt?.stop());

  test("a kernel finds no agent credentials: not in the runtime file, nor its agent's environment, argv or descriptors", async () => {
    const id = newId("look");
    await rt.submit({ sessionId: id, spec: { name: "look", command: sh(LOOK_AROUND) } });
    const s = await rt.waitForEnd(id, 60_000);
    expect(sessionResult(s)).toBe("succeeded");
    const out = readFileSync(runLogPaths(join(rt.dataDir, "work"), id, 0, 0).stdout, "utf8");
    // It did look: it found the runtime file and read its agent's environment.
    expect(out).toContain(`== runtime file ${join(rt.dataDir, "runtime.json")}`);
    expect(out).toMatch(/== agent environment\n(.+\n)*PATH=/);
    // Neither the credential its own agent holds (tagged with its id) nor the untagged one.
    for (const agent of [
      rt.runtime.agentCredential(s.kernels[0]!.agentId!),
      rt.runtime.info.credentials.agent,
    ]) {
      expect(out).not.toContain(agent.secretAccessKey);
      expect(out).not.toContain(agent.accessKeyId);
    }
    const file = JSON.parse(readFileSync(join(rt.dataDir, "runtime.json"), "utf8")) as {
      credentials: Record<string, unknown>;
    };
    expect(Object.keys(file.credentials)).not.toContain("agent");
    // The agent got its credentials on descriptor 3, and closed it before any kernel started.
    expect(out).toMatch(/== agent argv\n.*--credentials-fd 3/);
    const own = out.split("== own descriptors\n")[1]!.split("==")[0]!.trim().split(/\s+/);
    expect(own).toEqual(expect.arrayContaining(["0", "1", "2"]));
    expect(own).not.toContain("3");
  }, 90_000);

  test("a forged exit 0 ends the session; the agent stops the process that kept running, and says why", async () => {
    const id = newId("forged");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "forged",
        resources: { cpu: 1, memoryMiB: 64 },
        command: sh("echo $$ > pid; exec sleep 600"),
      },
    });
    const running = await rt.waitForStatus(id, "RUNNING", 60_000);
    const pidFile = join(runLogPaths(join(rt.dataDir, "work"), id, 0, 0).workDir, "pid");
    const pid = await until("the kernel to write its pid", () =>
      existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== ""
        ? Number(readFileSync(pidFile, "utf8"))
        : undefined,
    );
    expect(alive(pid)).toBe(true);
    // The attacker holds the owner's key (read from the table) and an agent principal.
    const owner = (await rt.store.getAgent(running.kernels[0]!.agentId!))!;
    const forged: EventDetailInput<"Kernel Status Changed"> = {
      agentId: owner.id,
      incarnation: owner.incarnation!,
      sessionId: id,
      kernelIndex: 0,
      runIndex: 0,
      placement: 0,
      status: "TERMINATED",
      exitCode: 0,
      atMs: Date.now(),
      signature: "",
    };
    const events = new EventBridgeClient({
      endpoint: rt.runtime.info.endpoints.eventBridge,
      region: rt.runtime.info.region,
      credentials: rt.runtime.info.credentials.agent,
    });
    try {
      const out = await events.send(
        new PutEventsCommand({
          Entries: [
            toPutEventsEntry(rt.runtime.info.eventBusName, DetailType.KernelStatusChanged, {
              ...forged,
              signature: signDetail(owner.signingKey!, DetailType.KernelStatusChanged, forged),
            }),
          ],
        }),
      );
      expect(out.FailedEntryCount ?? 0).toBe(0);
    } finally {
      events.destroy();
    }
    // The forgery works on the control plane: the session ends as succeeded, its capacity freed.
    const ended = await rt.waitForEnd(id, 30_000);
    expect(sessionResult(ended)).toBe("succeeded");
    // The agent reconciles: the answer to its next heartbeat names the run, and it stops it.
    const agent = rt.runtime.agents.find((a) => a.id === owner.id)!;
    const said = `agent ${owner.id}: stopped ${id}/0 run 0 placement 0: Cairn considers it ended: session ${id} ended (TERMINATED)`;
    await until("the agent to stop the kernel Cairn considers ended, and say why", () =>
      agent.lines.find((l) => l.includes(said)),
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}; the agent's last lines:\n  ${agent.lines.slice(-15).join("\n  ")}`);
    });
    expect(alive(pid)).toBe(false);
  }, 90_000);
});
