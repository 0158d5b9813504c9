/**
 * Agents end to end: agents are `cairn agent` processes talking to the embedded runtime only
 * through its AWS-protocol endpoints (SQS for commands, EventBridge for reports), exactly as they
 * would to a deployed stack. Real processes are killed, restarted and drained; forged traffic is
 * sent with the real SDK.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { GetQueueUrlCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { signDetail } from "../functions/topology/agent-signature.ts";
import { DetailType, toPutEventsEntry, type EventDetailInput } from "../functions/core/events.ts";
import type { SessionWithKernels } from "../functions/core/model.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import type { EventBridgeEvent } from "../local/eventbridge/index.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { until } from "./support/until.ts";

const sh = (script: string) => ["/bin/sh", "-c", script];
let n = 0;
const newId = (label: string) => `ag-${label}-${Date.now().toString(36)}-${n++}`;

/** Pids of live processes whose environment says they run this session's kernels. */
function kernelPids(sessionId: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const env = readFileSync(`/proc/${name}/environ`, "latin1").split("\0");
      const stat = readFileSync(`/proc/${name}/stat`, "latin1");
      if (env.includes(`CAIRN_SESSION_ID=${sessionId}`) && !/\) Z /.test(stat)) pids.push(Number(name));
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

describe("agents are processes of their own", () => {
  let rt: TestRuntime;
  // After every scenario: no session under way without a live execution, no ended one holding a token.
  afterEach(() => assertLifecycleInvariants(rt));
  const seen: EventBridgeEvent[] = [];
  beforeAll(async () => {
    rt = await startTestRuntime({
      agents: 3,
      agentCapacity: { cpu: 2, memoryMiB: 2048 },
      heartbeatMs: 300,
      // Short enough to watch an agent die within a test.
      agentTimeoutMs: 3_000,
    });
    rt.runtime.bus.onEvent((event) => seen.push(event));
  }, 120_000);
  afterAll(() => rt?.stop());

  const rejections = () =>
    seen
      .filter((e) => e["detail-type"] === "Event Rejected")
      .map((e) => (e.detail as { reason: string }).reason);

  test("an agent started as a user would (cairn agent, runtime file) runs what its labels select", async () => {
    const gpu = await rt.runtime.startAgent({ id: "gpu-box", labels: { gpu: "a100" } });
    expect(gpu.pid).toBeGreaterThan(0);
    const id = newId("selected");
    await rt.submit({
      sessionId: id,
      spec: { name: "sel", command: sh("echo on $CAIRN_AGENT_ID"), nodeSelector: { gpu: "a100" } },
    });
    const done = await rt.waitForEnd(id);
    expect(sessionResult(done)).toBe("succeeded");
    expect(done.kernels[0]?.agentId).toBe("gpu-box");
    await gpu.stop();
    expect(await gpu.exited).toBe(0);
  });

  test("cairn agent given only --endpoint (as against LocalStack) reaches the runtime through its edge port", async () => {
    const { info } = rt.runtime;
    const child = spawn(
      process.execPath,
      [
        fileURLToPath(new URL("../bin/cairn.js", import.meta.url)),
        "agent",
        "--endpoint",
        info.endpoints.edge,
        "--id",
        "edge-agent",
        "--cpu",
        "1",
        "--memory-mib",
        "512",
        "--labels",
        "via=edge",
        "--heartbeat-seconds",
        "0.3",
        "--work-root",
        join(rt.dataDir, "edge-work"),
      ],
      {
        // What a user exports for LocalStack: region, credentials (the agent's), names.
        env: {
          PATH: process.env["PATH"] ?? "/usr/bin:/bin",
          HOME: process.env["HOME"] ?? "/tmp",
          AWS_REGION: info.region,
          AWS_ACCESS_KEY_ID: info.credentials.agent.accessKeyId,
          AWS_SECRET_ACCESS_KEY: info.credentials.agent.secretAccessKey,
          CAIRN_TABLE_NAME: info.tableName,
          CAIRN_EVENT_BUS_NAME: info.eventBusName,
          CAIRN_AGENT_QUEUE_PREFIX: info.agentQueuePrefix,
          CAIRN_KERNEL_LOG_GROUP_NAME: info.kernelLogGroupName,
        },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    const lines: string[] = [];
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    createInterface({ input: child.stderr }).on("line", (line) => lines.push(line));
    try {
      await until("the edge agent to register", () =>
        Promise.resolve(lines.some((l) => l.includes("agent edge-agent: registered (")) ? true : undefined),
      );
      const id = newId("edge");
      await rt.submit({
        sessionId: id,
        spec: { name: "edge", command: sh("echo via edge"), nodeSelector: { via: "edge" } },
      });
      const done = await rt.waitForEnd(id);
      expect(sessionResult(done)).toBe("succeeded");
      expect(done.kernels[0]?.agentId).toBe("edge-agent");
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  }, 60_000);

  test("kill -9 of an agent under a running gang: its kernels WORKER_FAILED, the gang runs again elsewhere, one preemption spent", async () => {
    const id = newId("gang");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "gang",
        replicas: 2,
        perAgent: 1,
        resources: { cpu: 1, memoryMiB: 64 },
        command: sh('if [ "$CAIRN_RUN_INDEX" = 0 ]; then sleep 30; else echo second run; fi'),
      },
    });
    const running = await rt.waitForStatus(id, "RUNNING");
    const victimId = running.kernels[0]!.agentId!;
    const victim = rt.runtime.agents.find((a) => a.id === victimId)!;
    const orphans = kernelPids(id);
    victim.kill("SIGKILL");
    expect(await victim.exited).toBe("SIGKILL");

    const done = await rt.waitForEnd(id, 60_000);
    expect(sessionResult(done)).toBe("succeeded");
    expect(done.session.runIndex).toBe(1);
    expect(done.session.retry?.preemptionCount).toBe(1);
    expect(done.kernels.map((k) => k.agentId)).not.toContain(victimId);
    const runs = await rt.store.listRuns(id);
    expect(runs[0]?.outcome).toBe("WORKER_FAILED");
    const lost = runs[0]?.kernels.find((k) => k.agentId === victimId);
    expect(lost).toMatchObject({ outcome: "WORKER_FAILED", condition: "AgentLost" });
    expect(lost?.message).toMatch(new RegExp(`^agent ${victimId} lost: no heartbeat for \\d+ s`));
    // Capacity is conserved: nothing is held once the session has ended.
    expect(await rt.store.allocationsOf(id)).toEqual([]);
    for (const agent of await rt.store.listAgents()) {
      if (agent.lostAtMs === undefined) expect(agent.free).toEqual(agent.capacity);
    }
    // The dead agent's kernel outlived it (its own process group); a restart with the same id
    // finds and stops it, and registers a new incarnation.
    const before = (await rt.store.getAgent(victimId))!;
    expect(before.lostAtMs).toBeDefined();
    expect(orphans.length).toBeGreaterThan(0);
    await rt.runtime.startAgent({ id: victimId });
    const after = (await rt.store.getAgent(victimId))!;
    expect(after.incarnation).not.toBe(before.incarnation);
    expect(after.lostAtMs).toBeUndefined();
    await until("the orphaned kernel to be gone", () =>
      Promise.resolve(kernelPids(id).length === 0 ? true : undefined),
    );
  }, 120_000);

  test("SIGTERM drains: the agent takes no more work, its kernel is stopped and retried elsewhere, and it exits 0", async () => {
    const id = newId("drain");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "drain",
        resources: { cpu: 1, memoryMiB: 64 },
        command: sh('if [ "$CAIRN_RUN_INDEX" = 0 ]; then sleep 30; fi'),
      },
    });
    const running = await rt.waitForStatus(id, "RUNNING");
    const agent = rt.runtime.agents.find((a) => a.id === running.kernels[0]!.agentId)!;
    agent.kill("SIGTERM");
    expect(await agent.exited).toBe(0);
    expect(agent.lines.join("\n")).toContain("SIGTERM: draining");
    const done = await rt.waitForEnd(id, 60_000);
    expect(sessionResult(done)).toBe("succeeded");
    const runs = await rt.store.listRuns(id);
    expect(runs[0]?.kernels[0]).toMatchObject({
      agentId: agent.id,
      outcome: "WORKER_FAILED",
      condition: "Evicted",
    });
    expect(done.kernels[0]?.agentId).not.toBe(agent.id);
    expect((await rt.store.getAgent(agent.id))?.draining).toBe(true);
  }, 90_000);

  test("a kernel's setsid grandchild (new session, re-parented) is stopped with its session", async () => {
    const id = newId("escape");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "escape",
        resources: { cpu: 1, memoryMiB: 256 },
        command: sh("setsid sh -c 'sleep 120' & sleep 120"),
      },
    });
    await rt.waitForStatus(id, "RUNNING");
    // The kernel's shell, its sleep, and the escaped shell and sleep in a session of their own.
    await until("the escaped grandchild", () =>
      Promise.resolve(kernelPids(id).length >= 3 ? true : undefined),
    );
    await rt.cancel(id);
    expect(sessionResult(await rt.waitForEnd(id))).toBe("cancelled");
    await until(
      "every process of the session to be gone",
      () => Promise.resolve(kernelPids(id).length === 0 ? true : undefined),
      10_000,
    );
  }, 60_000);

  test("an agent cannot read another agent's queue, where the control plane sends its signing key: only its own", async () => {
    const [owner, other] = rt.runtime.agents;
    const { info } = rt.runtime;
    const sqsAs = (credentials: { accessKeyId: string; secretAccessKey: string }) =>
      new SQSClient({ endpoint: info.endpoints.sqs, region: info.region, credentials, maxAttempts: 1 });
    const queueName = (agentId: string) => `${info.agentQueuePrefix}${agentId}`;
    const refusal = (call: Promise<unknown>) =>
      call.then(
        () => "allowed",
        (error: Error) => `${error.name}: ${error.message}`,
      );
    // The credential the runtime handed the other agent's process: tagged with its id.
    const asOther = sqsAs(rt.runtime.agentCredential(other!.id));
    const ownerUrl = (
      await sqsAs(rt.runtime.agentCredential(owner!.id)).send(
        new GetQueueUrlCommand({ QueueName: queueName(owner!.id) }),
      )
    ).QueueUrl!;
    expect(
      await refusal(asOther.send(new GetQueueUrlCommand({ QueueName: queueName(owner!.id) }))),
    ).toContain(
      `sqs:GetQueueUrl on resource: arn:aws:sqs:local:000000000000:${queueName(owner!.id)} because`,
    );
    expect(
      await refusal(asOther.send(new ReceiveMessageCommand({ QueueUrl: ownerUrl, WaitTimeSeconds: 0 }))),
    ).toMatch(/^AccessDenied: .*sqs:ReceiveMessage/);
    // Its own queue it may find (and consume, as it does all along).
    expect(await refusal(asOther.send(new GetQueueUrlCommand({ QueueName: queueName(other!.id) })))).toBe(
      "allowed",
    );
    // A principal without the tag (every host under one role) reads every agent queue, as the
    // stack's AgentPolicy allows it.
    const untagged = sqsAs(info.credentials.agent);
    expect(await refusal(untagged.send(new GetQueueUrlCommand({ QueueName: queueName(owner!.id) })))).toBe(
      "allowed",
    );
    asOther.destroy();
    untagged.destroy();
  });

  test("forged agent traffic is refused with a reason and changes nothing", async () => {
    const id = newId("forged");
    await rt.submit({
      sessionId: id,
      spec: { name: "forged", resources: { cpu: 1, memoryMiB: 64 }, command: sh("sleep 4") },
    });
    const running: SessionWithKernels = await rt.waitForStatus(id, "RUNNING");
    const owner = (await rt.store.getAgent(running.kernels[0]!.agentId!))!;
    // Another registered agent (a real process) whose key the forger happens to hold: its own.
    const listed = (await rt.store.listAgents()).find(
      (a) => a.id !== owner.id && a.lostAtMs === undefined && a.incarnation !== undefined,
    )!;
    // Its key as the functions read it: listings leave keys out.
    const other = (await rt.store.getAgent(listed.id))!;
    const events = new EventBridgeClient({
      endpoint: rt.runtime.info.endpoints.eventBridge,
      region: rt.runtime.info.region,
      credentials: rt.runtime.info.credentials.agent,
    });
    const put = async (
      type: "Kernel Status Changed" | "Agent Heartbeat",
      detail: Record<string, unknown>,
    ) => {
      const out = await events.send(
        new PutEventsCommand({
          Entries: [
            toPutEventsEntry(rt.runtime.info.eventBusName, type, detail as EventDetailInput<typeof type>),
          ],
        }),
      );
      expect(out.FailedEntryCount ?? 0).toBe(0);
    };
    const report = (agentId: string, incarnation: string) => ({
      agentId,
      incarnation,
      sessionId: id,
      kernelIndex: 0,
      runIndex: 0,
      status: "TERMINATED",
      exitCode: 0,
      atMs: Date.now(),
      signature: "",
    });
    const before = rejections().length;
    // 1. Signed by another agent, claiming to be the owner.
    const asOwner = report(owner.id, owner.incarnation!);
    await put(DetailType.KernelStatusChanged, {
      ...asOwner,
      signature: signDetail(other.signingKey!, DetailType.KernelStatusChanged, asOwner),
    });
    // 2. Signed by another agent as itself, about a kernel that is not its own.
    const asOther = report(other.id, other.incarnation!);
    await put(DetailType.KernelStatusChanged, {
      ...asOther,
      signature: signDetail(other.signingKey!, DetailType.KernelStatusChanged, asOther),
    });
    // 3. A heartbeat offering a billion cpu.
    const inflated = {
      agentId: other.id,
      incarnation: other.incarnation!,
      capacity: { cpu: 1e9, memoryMiB: 1e9 },
      atMs: Date.now(),
      signature: "",
    };
    await put(DetailType.AgentHeartbeat, {
      ...inflated,
      signature: signDetail(other.signingKey!, DetailType.AgentHeartbeat, inflated),
    });
    // 4. A phantom agent nobody registered.
    await put(DetailType.AgentHeartbeat, {
      ...inflated,
      agentId: "phantom",
      signature: "0".repeat(64),
    });
    await until("four rejections", () =>
      Promise.resolve(rejections().length >= before + 4 ? true : undefined),
    );
    const reasons = rejections().slice(before).join("\n");
    expect(reasons).toContain(`detail.signature: does not match agent ${owner.id}'s key`);
    expect(reasons).toContain(
      `detail.agentId: kernel 0 of session ${id} is placed on agent ${owner.id}, not on ${other.id}`,
    );
    expect(reasons).toMatch(/detail\.capacity: cpu 1000000000 \/ memoryMiB 1000000000 exceeds what agent/);
    expect(reasons).toContain("detail.agentId: agent phantom is not registered");
    // Nothing changed: the kernel still runs, the capacity is what was registered, no phantom.
    expect((await rt.store.getSession(id))?.kernels[0]?.status).toBe("RUNNING");
    expect((await rt.store.getAgent(other.id))?.capacity).toEqual(other.capacity);
    expect(await rt.store.getAgent("phantom")).toBeUndefined();
    expect(sessionResult(await rt.waitForEnd(id))).toBe("succeeded");
    events.destroy();
  }, 60_000);
});
