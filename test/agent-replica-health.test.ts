/**
 * Deployment replicas on an agent: a kernel started with a service binding gets
 * its port as CAIRN_PORT (pinned or picked) and is probed there while it runs, and the probes
 * go out as signed `Route Health Reported` events; a report that could not be sent is kept
 * for the next. Real replicas (`node -e` and `python3 -m http.server`), a real LocalAgent, and
 * for the host fakes of SQS and EventBridge that record what it sends and fail on demand.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { LocalAgent, type KernelLaunch, type KernelReport } from "../agent/index.ts";
import { freePort } from "../agent/health-probe.ts";
import { keepNewest, MAX_PROBES_PER_REPORT, type RouteHealthReport } from "../agent/replica-health.ts";
import type { ProbeReport } from "../functions/core/deployments/health.ts";
import { DetailType } from "../functions/core/events.ts";
import { RouteHealthReportedDetailSchema } from "../functions/core/deployment-events.ts";
import type { ServiceBinding } from "../functions/core/service-binding.ts";
import { signatureMatches } from "../functions/topology/agent-signature.ts";
import { fakeHost, SIGNING_KEY } from "./support/agent-host.ts";
import { until } from "./support/until.ts";

const workRoot = mkdtempSync(join(tmpdir(), "cairn-replica-test-"));
const NODE = process.execPath;
const stops: (() => Promise<unknown>)[] = [];
let counter = 0;

afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});
afterAll(() => rmSync(workRoot, { recursive: true, force: true }));

/** A replica answering every GET with `status`; it says which port it was given, and exits after `lifeMs` if given. */
const replica = (status: number, lifeMs?: number) => [
  NODE,
  "-e",
  `const port = Number(process.env.CAIRN_PORT);
   require("node:http").createServer((q, r) => { r.statusCode = ${status}; r.end("x"); }).listen(port, "127.0.0.1");
   console.log("port=" + process.env.CAIRN_PORT);
   ${lifeMs !== undefined ? `setTimeout(() => process.exit(0), ${lifeMs});` : ""}`,
];

const binding = (over: Partial<ServiceBinding> = {}): ServiceBinding => ({
  deploymentId: "web",
  routeId: "web-r0",
  probe: { path: "/healthz", intervalSeconds: 1, timeoutSeconds: 1 },
  ...over,
});

function launch(
  command: string[],
  service: ServiceBinding | undefined,
  env: Record<string, string> = {},
): KernelLaunch {
  return {
    sessionId: `replica-${++counter}`,
    kernelIndex: 0,
    numKernels: 1,
    runIndex: 0,
    command,
    env,
    cpu: 1,
    memoryMiB: 256,
    ...(service !== undefined ? { service } : {}),
  };
}

interface Harness {
  readonly agent: LocalAgent;
  readonly reports: KernelReport[];
  readonly health: RouteHealthReport[];
  readonly warnings: string[];
}

/** A LocalAgent whose route health sink records reports, and refuses the first `failFirst`. */
function newAgent(failFirst = 0): Harness {
  const reports: KernelReport[] = [];
  const health: RouteHealthReport[] = [];
  const warnings: string[] = [];
  let calls = 0;
  const agent = new LocalAgent({
    id: "agent-r",
    capacity: { cpu: 4, memoryMiB: 4096 },
    workRoot,
    warn: (message) => warnings.push(message),
    info: () => undefined,
    onReport: (report) => reports.push(report),
    onRouteHealth: (report) => {
      if (++calls <= failFirst) throw new Error("the bus is away");
      health.push(report);
    },
  });
  stops.push(() => agent.shutdown({ graceMs: 0 }));
  return { agent, reports, health, warnings };
}

const ended = (reports: KernelReport[], l: KernelLaunch) =>
  reports.find((r) => r.sessionId === l.sessionId && (r.status === "TERMINATED" || r.status === "ERROR"));

async function logText(agent: LocalAgent, l: KernelLaunch): Promise<string> {
  return (await agent.readLogs(l.sessionId, 0, 0)).map((line) => line.text).join("\n");
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a replica's port", () => {
  test("given a pinned port, the process gets it as CAIRN_PORT, over the spec's own", async () => {
    const { agent, reports } = newAgent();
    const port = await freePort();
    const l = launch(["/bin/sh", "-c", "echo port=$CAIRN_PORT"], binding({ port }), { CAIRN_PORT: "1" });
    await agent.start(l);
    await until("the kernel ends", () => ended(reports, l));
    expect(await logText(agent, l)).toBe(`port=${port}`);
  });

  test("without one, the agent picks a free port, keeps it with the running kernel, and the replica serves there", async () => {
    const { agent, reports, health } = newAgent();
    const l = launch(replica(200), binding());
    await agent.start(l);
    const [running] = agent.running();
    expect(running?.port).toBeGreaterThan(0);
    await until("the replica says its port", async () =>
      (await logText(agent, l)) !== "" ? true : undefined,
    );
    expect(await logText(agent, l)).toBe(`port=${running?.port}`);
    await until("a health report", () => health[0]);
    expect(health[0]).toMatchObject({
      agentId: "agent-r",
      deploymentId: "web",
      routeId: "web-r0",
      sessionId: l.sessionId,
      runIndex: 0,
      port: running?.port,
    });
    expect(health[0]?.probes[0]).toMatchObject({ ok: true, httpStatus: 200 });
    expect(ended(reports, l)).toBeUndefined();
  });

  test("a kernel without a service binding gets no port and no prober", async () => {
    const { agent, reports, health } = newAgent();
    const l = launch(["/bin/sh", "-c", 'echo "port=${CAIRN_PORT-none}"; sleep 1.5'], undefined);
    await agent.start(l);
    expect(agent.running()[0]?.port).toBeUndefined();
    await until("the kernel ends", () => ended(reports, l));
    expect(await logText(agent, l)).toBe("port=none");
    expect(health).toEqual([]);
  });

  test("a malformed service binding is refused before anything runs", async () => {
    const { agent, reports } = newAgent();
    const bad = binding({ probe: { path: "healthz", intervalSeconds: 1, timeoutSeconds: 1 } });
    await expect(agent.start(launch(["/bin/true"], bad))).rejects.toMatchObject({
      code: "InvalidAgentInput",
      field: "launch.service.probe.path",
    });
    expect(reports).toEqual([]);
  });
});

describe("probing a replica", () => {
  test("a replica answering 500 yields failed probes carrying the status", async () => {
    const { agent, health } = newAgent();
    await agent.start(launch(replica(500), binding()));
    await until("a health report", () => health[0]);
    const probes = health[0]?.probes ?? [];
    expect(probes).toHaveLength(1);
    expect(probes[0]).toMatchObject({ ok: false, httpStatus: 500, message: "HTTP 500" });
  });

  test("probing stops when the kernel ends on its own", async () => {
    const { agent, reports, health } = newAgent();
    const l = launch(replica(200, 1_600), binding());
    await agent.start(l);
    const end = await until("the kernel ends", () => ended(reports, l));
    expect(health.length).toBeGreaterThan(0);
    const seen = health.length;
    await sleep(2_500);
    expect(health.length).toBe(seen);
    expect(health.every((r) => r.atMs <= end.atMs)).toBe(true);
  });

  test("probing stops when the kernel is stopped", async () => {
    const { agent, health } = newAgent();
    const l = launch(replica(200), binding());
    await agent.start(l);
    await until("a health report", () => health[0]);
    await agent.stop(l.sessionId, 0, { graceMs: 0 });
    const seen = health.length;
    await sleep(2_500);
    expect(health.length).toBe(seen);
  });

  test("probes of reports that were not sent go with the next one, oldest first", async () => {
    const { agent, health, warnings } = newAgent(2);
    await agent.start(launch(replica(200), binding()));
    const report = await until("a report sent", () => health[0], 10_000);
    expect(report.probes).toHaveLength(3);
    const times = report.probes.map((p) => p.atMs);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(warnings.filter((w) => w.includes("was not sent; its probes go with the next"))).toHaveLength(2);
  });

  test("at most 20 unsent probes are kept, the oldest dropped first", () => {
    const at = (atMs: number): ProbeReport => ({ ok: true, atMs });
    const unsent = Array.from({ length: 19 }, (_, i) => at(i));
    const kept = keepNewest(unsent, [at(19), at(20), at(21)]);
    expect(kept).toHaveLength(MAX_PROBES_PER_REPORT);
    expect(kept[0]?.atMs).toBe(2);
    expect(kept.at(-1)?.atMs).toBe(21);
  });
});

describe("the agent host publishes a replica's health", () => {
  test("as signed Route Health Reported events; one that failed to go is carried by the next", async () => {
    // The first report whose probe reached the server is refused. (On a loaded machine the
    // server may not be listening yet at the first probe: a report of that is let through.)
    let refusedAt: number | undefined;
    const { host, put, logs, start, command } = fakeHost("host-r", workRoot, {
      refuse: (entry, sent) => {
        if (
          entry.DetailType !== DetailType.RouteHealthReported ||
          refusedAt !== undefined ||
          !RouteHealthReportedDetailSchema.parse(JSON.parse(entry.Detail!)).probes.some((p) => p.ok)
        )
          return undefined;
        refusedAt = sent.length;
        return Object.assign(new Error("AccessDenied"), { $fault: "client" });
      },
    });
    stops.push(() => host.drain());
    await start();
    command({
      action: "start",
      sessionId: "web-r0-s1",
      kernelIndex: 0,
      numKernels: 1,
      runIndex: 2,
      // http.server takes its port as an argument: through a shell, from CAIRN_PORT.
      command: ["/bin/sh", "-c", 'exec python3 -m http.server --bind 127.0.0.1 "$CAIRN_PORT"'],
      env: {},
      cpu: 1,
      memoryMiB: 256,
      service: binding({ probe: { path: "/", intervalSeconds: 1, timeoutSeconds: 1 } }),
    });

    const reported = () =>
      refusedAt === undefined
        ? []
        : put.slice(refusedAt).filter((e) => e.DetailType === DetailType.RouteHealthReported);
    await until("a route health event after the refused one", () => reported()[0], 15_000);
    expect(logs.some((line) => line.includes("could not send Route Health Reported"))).toBe(true);

    const entry = reported()[0]!;
    expect(entry.Source).toBe("cairn.agent");
    const detail = RouteHealthReportedDetailSchema.parse(JSON.parse(entry.Detail!));
    expect(signatureMatches(SIGNING_KEY, DetailType.RouteHealthReported, detail)).toBe(true);
    expect(detail).toMatchObject({
      agentId: "host-r",
      incarnation: host.incarnation,
      deploymentId: "web",
      routeId: "web-r0",
      sessionId: "web-r0-s1",
      runIndex: 2,
      port: host.agent.running()[0]?.port,
    });
    // The refused report's probe (one that reached the server) came with the next one's.
    expect(detail.probes).toHaveLength(2);
    expect(detail.probes[0]).toMatchObject({ ok: true, httpStatus: 200 });
    expect(detail.probes[0]!.atMs).toBeLessThan(detail.probes[1]!.atMs);
  }, 30_000);
});
