/**
 * Deployments and routes end to end on the embedded runtime, with real processes on
 * local agents. Each replica is a session whose kernel is a real HTTP server on $CAIRN_PORT,
 * probed by the agent that hosts it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DeploymentItems } from "../functions/adapters/dynamo/deployment-items.ts";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { storeRetryConfig } from "../functions/adapters/dynamo/retry.ts";
import { DetailType, toPutEventsEntry, type EventDetailInput } from "../functions/core/events.ts";
import type { DeploymentWithRoutes } from "../functions/core/deployments/model.ts";
import { signDetail } from "../functions/topology/agent-signature.ts";
import { runCairn } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
let deployments: DeploymentItems;

beforeAll(async () => {
  rt = await startTestRuntime({
    agents: 2,
    agentCapacity: { cpu: 4, memoryMiB: 4096 },
    ...(process.env["DEBUG_E2E"]
      ? { log: (m: string) => console.log(m), handlerLogLevel: "warn" as const }
      : {}),
  });
  const { info } = rt.runtime;
  deployments = new DeploymentItems(
    new DynamoRequests(
      new DynamoDBClient({
        endpoint: rt.runtime.tableEndpoint,
        region: info.region,
        credentials: rt.runtime.tableCredential,
        ...storeRetryConfig(),
      }),
      info.tableName,
      undefined,
    ),
  );
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

async function send<T extends "Deployment Created" | "Deployment Scaled" | "Deployment Destroy Requested">(
  type: T,
  detail: EventDetailInput<T>,
): Promise<void> {
  await rt.put(toPutEventsEntry(rt.runtime.info.eventBusName, type as DetailType, detail as never));
}

async function waitDeployment(
  id: string,
  predicate: (d: DeploymentWithRoutes) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<DeploymentWithRoutes> {
  const deadline = Date.now() + timeoutMs;
  let last: DeploymentWithRoutes | undefined;
  while (Date.now() < deadline) {
    last = await deployments.getDeployment(id);
    if (last && predicate(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  const history = (await deployments.deploymentHistory(id)).map(
    (h) => `${h.id} ${h.handler} ${h.result} ${h.fromStatus}->${h.toStatus ?? "="} ${h.message ?? ""}`,
  );
  throw new Error(
    `deployment ${id} did not reach ${what} in ${timeoutMs} ms; history:\n  ${history.join("\n  ")}\nlast: ${JSON.stringify(
      last && {
        status: last.deployment.status,
        stage: last.deployment.stage,
        routes: last.routes.map((r) => ({ id: r.id, status: r.status, stage: r.stage, health: r.health })),
      },
    )}`,
  );
}

const statuses = (d: DeploymentWithRoutes) => d.routes.map((r) => `${r.id}:${r.status}`);
const live = (d: DeploymentWithRoutes) => d.routes.filter((r) => r.status !== "TERMINATED");
const healthy = (d: DeploymentWithRoutes) => d.routes.filter((r) => r.status === "HEALTHY");

/**
 * The entity's status changes, as its history records them: `HANDLER RESULT FROM→TO`, without
 * staleness. A healthy route whose probe reports a loaded machine delivers later than its stale
 * window (5 s here) goes DEGRADED, as it should, and HEALTHY again with the next report: these
 * scenarios are about the changes around it.
 */
async function transitions(deploymentId: string, id: string): Promise<string[]> {
  const all = (await deployments.deploymentHistory(deploymentId))
    .filter((h) => h.id === id && h.toStatus !== undefined)
    .map((h) => `${h.handler} ${h.result} ${h.fromStatus}→${h.toStatus}`);
  return withoutPassedStaleness(
    all,
    "HealthCheckRoute STALE HEALTHY→DEGRADED",
    "HealthCheckRoute SUCCESS DEGRADED→HEALTHY",
  );
}

/** `changes` without each `stale` that is the last change or is followed by `recovered` (and that too). */
function withoutPassedStaleness(changes: readonly string[], stale: string, recovered: string): string[] {
  const kept: string[] = [];
  for (let i = 0; i < changes.length; i++) {
    if (changes[i] === stale && i === changes.length - 1) continue;
    if (changes[i] === stale && changes[i + 1] === recovered) i++;
    else kept.push(changes[i]!);
  }
  return kept;
}

/** Probed every 2 s (timeout 1 s); one pass makes it HEALTHY, two failures UNHEALTHY; STALE after 5 s. */
const FAST_CHECK = { intervalSeconds: 2, timeoutSeconds: 1, healthyThreshold: 1, unhealthyThreshold: 2 };

/**
 * A real HTTP server on $CAIRN_PORT answering `status`, which writes its pid where the test can
 * kill it. It runs under a shell that outlives it: a killed server leaves a kernel that still
 * runs but no longer serves, as a hung replica does.
 */
function service(status: number) {
  const server = [
    'const fs = require("node:fs");',
    'fs.writeFileSync(process.env.PIDS + "/" + process.env.CAIRN_SESSION_ID, String(process.pid));',
    'require("node:http").createServer((req, res) => { res.statusCode = Number(process.env.STATUS); res.end("ok"); })',
    '  .listen(Number(process.env.CAIRN_PORT), "127.0.0.1");',
  ].join("\n");
  return {
    command: ["/bin/sh", "-c", 'node -e "$SERVER"; sleep 3600'],
    env: { SERVER: server, STATUS: String(status), PIDS: pidDir() },
    resources: { cpu: 0.25, memoryMiB: 64 },
  };
}
const pidDir = () => rt.dataDir;
const serverPid = (sessionId: string) => Number(readFileSync(join(pidDir(), sessionId), "utf8"));

/** Route Status Changed events as `routeId: from→to`, from now on. */
function routeEvents(deploymentId: string): string[] {
  const seen: string[] = [];
  rt.runtime.bus.onEvent((e) => {
    const d = e.detail as { deploymentId?: string; routeId?: string; from?: string; to?: string };
    if (e["detail-type"] === "Route Status Changed" && d.deploymentId === deploymentId) {
      seen.push(`${d.routeId}: ${d.from}→${d.to}`);
    }
  });
  return seen;
}

describe("a deployment of 3 replicas", () => {
  const id = "svc";

  test("create: 3 routes PROVISIONING → DEGRADED → HEALTHY, the deployment READY", async () => {
    const events = routeEvents(id);
    await send(DetailType.DeploymentCreated, {
      deploymentId: id,
      spec: { name: id, replicas: 3, service: service(200), healthCheck: FAST_CHECK },
    });
    const ready = await waitDeployment(
      id,
      (d) => d.deployment.status === "READY" && healthy(d).length === 3,
      "READY with 3 HEALTHY routes",
    );
    expect(statuses(ready)).toEqual(["svc-r0:HEALTHY", "svc-r1:HEALTHY", "svc-r2:HEALTHY"]);
    for (const route of ready.routes) {
      expect(await transitions(id, route.id)).toEqual([
        "ProvisioningRoute SUCCESS PROVISIONING→DEGRADED",
        "HealthCheckRoute SUCCESS DEGRADED→HEALTHY",
      ]);
      // Where it serves: the agent that hosts it, on the port it gave the process.
      expect(route.agentId).toMatch(/^agent-/);
      expect(route.port).toBeGreaterThan(0);
      const answer = await fetch(`http://127.0.0.1:${route.port}/`);
      expect(answer.status).toBe(200);
      const routeChanges = events.filter((e) => e.startsWith(`${route.id}:`));
      expect(
        withoutPassedStaleness(
          routeChanges,
          `${route.id}: HEALTHY→DEGRADED`,
          `${route.id}: DEGRADED→HEALTHY`,
        ),
      ).toEqual([
        `${route.id}: PROVISIONING→PROVISIONING`,
        `${route.id}: PROVISIONING→DEGRADED`,
        `${route.id}: DEGRADED→HEALTHY`,
      ]);
    }
    expect(await transitions(id, id)).toEqual([
      "CheckPendingDeployment SUCCESS PENDING→SCALING",
      "ScalingDeployment SUCCESS SCALING→READY",
    ]);
  }, 90_000);

  test("a replica's process killed: UNHEALTHY → TERMINATING → TERMINATED, replaced; READY again with 3 HEALTHY", async () => {
    process.kill(serverPid("svc-r0"), "SIGKILL");
    const replaced = await waitDeployment(
      id,
      (d) =>
        d.deployment.status === "READY" &&
        healthy(d).length === 3 &&
        d.routes.find((r) => r.id === "svc-r0")?.status === "TERMINATED",
      "svc-r0 TERMINATED and 3 HEALTHY routes again",
    );
    expect(statuses(replaced)).toEqual([
      "svc-r0:TERMINATED",
      "svc-r1:HEALTHY",
      "svc-r2:HEALTHY",
      "svc-r3:HEALTHY",
    ]);
    expect((await transitions(id, "svc-r0")).slice(2)).toEqual([
      "HealthCheckRoute FAILURE HEALTHY→UNHEALTHY",
      "RouteEviction SUCCESS UNHEALTHY→TERMINATING",
      "TerminatingRoute SUCCESS TERMINATING→TERMINATED",
    ]);
    expect((await transitions(id, id)).slice(2)).toEqual([
      "CheckReplicaDeployment SUCCESS READY→SCALING",
      "ScalingDeployment SUCCESS SCALING→READY",
    ]);
    // The evicted replica's session was cancelled: its kernel (the shell) is gone too.
    const session = await rt.waitForEnd("svc-r0", 30_000);
    expect(session.session.status).toMatch(/^(TERMINATED|CANCELLED)$/);
  }, 90_000);

  test("an agent that stops reporting makes its routes STALE (DEGRADED); reporting again, HEALTHY", async () => {
    const before = await deployments.getDeployment(id);
    const route = healthy(before!)[0]!;
    const agent = rt.runtime.agents.find((a) => a.id === route.agentId)!;
    process.kill(agent.pid, "SIGSTOP");
    try {
      await waitDeployment(
        id,
        (d) => d.routes.find((r) => r.id === route.id)?.status === "DEGRADED",
        `${route.id} DEGRADED`,
        30_000,
      );
    } finally {
      process.kill(agent.pid, "SIGCONT");
    }
    const history = await deployments.deploymentHistory(id);
    const stale = history.find((h) => h.id === route.id && h.result === "STALE");
    expect(stale?.toStatus).toBe("DEGRADED");
    expect(stale?.message).toMatch(/^last health report \d+ s ago \(expected every 2 s\)$/);
    await waitDeployment(
      id,
      (d) => d.routes.find((r) => r.id === route.id)?.status === "HEALTHY",
      `${route.id} HEALTHY again`,
      30_000,
    );
  }, 90_000);

  test("scale 3 → 5 → 2, then destroy: DESTROYING → DESTROYED, every route TERMINATED, capacity released", async () => {
    await send(DetailType.DeploymentScaled, { deploymentId: id, replicas: 5 });
    await waitDeployment(
      id,
      (d) => d.deployment.status === "READY" && healthy(d).length === 5 && live(d).length === 5,
      "READY with 5 HEALTHY routes",
    );
    await send(DetailType.DeploymentScaled, { deploymentId: id, replicas: 2 });
    const two = await waitDeployment(
      id,
      (d) => d.deployment.status === "READY" && live(d).length === 2 && healthy(d).length === 2,
      "READY with 2 routes",
    );
    expect(two.deployment.spec.replicas).toBe(2);
    await send(DetailType.DeploymentDestroyRequested, { deploymentId: id, reason: "test over" });
    const destroyed = await waitDeployment(id, (d) => d.deployment.status === "DESTROYED", "DESTROYED");
    expect(destroyed.routes.every((r) => r.status === "TERMINATED")).toBe(true);
    expect((await transitions(id, id)).slice(-2)).toEqual([
      "Destroy SUCCESS READY→DESTROYING",
      "DestroyingDeployment SUCCESS DESTROYING→DESTROYED",
    ]);
    for (const route of destroyed.routes) {
      const s = await rt.waitForEnd(route.sessionId, 30_000);
      expect(s.session.status).toMatch(/^(TERMINATED|CANCELLED)$/);
    }
    for (const agent of rt.runtime.agents) {
      expect(await rt.store.allocationsOnAgent(agent.id)).toEqual([]);
    }
  }, 120_000);
});

test("a replica whose health endpoint answers 500 becomes UNHEALTHY and is evicted", async () => {
  const id = "five-hundred";
  await send(DetailType.DeploymentCreated, {
    deploymentId: id,
    spec: { name: id, replicas: 1, service: service(500), healthCheck: FAST_CHECK },
  });
  await waitDeployment(
    id,
    (d) => d.routes.some((r) => r.index > 0) && d.routes[0]?.status === "TERMINATED",
    "r0 TERMINATED and a replacement route",
  );
  expect(await transitions(id, `${id}-r0`)).toEqual([
    "ProvisioningRoute SUCCESS PROVISIONING→DEGRADED",
    "HealthCheckRoute FAILURE DEGRADED→UNHEALTHY",
    "RouteEviction SUCCESS UNHEALTHY→TERMINATING",
    "TerminatingRoute SUCCESS TERMINATING→TERMINATED",
  ]);
  const evicted = (await deployments.deploymentHistory(id)).find((h) => h.handler === "RouteEviction");
  // FAST_CHECK's unhealthyThreshold 2: UNHEALTHY after 2 failures, evicted after 2 more.
  expect(evicted?.message).toBe("evicted: failed 4 health checks in a row without recovering (HTTP 500)");
  await send(DetailType.DeploymentDestroyRequested, { deploymentId: id });
  await waitDeployment(id, (d) => d.deployment.status === "DESTROYED", "DESTROYED");
}, 90_000);

test("Backend.AI's route lifecycle: an UNHEALTHY replica whose health recovers goes back to HEALTHY instead of being evicted", async () => {
  // HealthCheckRoute | HEALTHY, UNHEALTHY, DEGRADED | HEALTHY; "UNHEALTHY → HEALTHY: On health recovery".
  const id = "recovers";
  const statusFile = join(pidDir(), `${id}-status`);
  writeFileSync(statusFile, "200");
  const server = [
    'const fs = require("node:fs");',
    'require("node:http").createServer((req, res) => {',
    '  res.statusCode = Number(fs.readFileSync(process.env.STATUS_FILE, "utf8"));',
    '  res.end("ok");',
    '}).listen(Number(process.env.CAIRN_PORT), "127.0.0.1");',
  ].join("\n");
  await send(DetailType.DeploymentCreated, {
    deploymentId: id,
    spec: {
      name: id,
      replicas: 1,
      service: {
        command: ["/bin/sh", "-c", 'node -e "$SERVER"; sleep 3600'],
        env: { SERVER: server, STATUS_FILE: statusFile },
        resources: { cpu: 0.25, memoryMiB: 64 },
      },
      // Four failures make it UNHEALTHY and four more evict it: eight seconds to see it recover.
      healthCheck: { ...FAST_CHECK, unhealthyThreshold: 4 },
    },
  });
  const r0 = `${id}-r0`;
  const status = (d: DeploymentWithRoutes) => d.routes.find((r) => r.id === r0)?.status;
  await waitDeployment(id, (d) => status(d) === "HEALTHY", "r0 HEALTHY");
  writeFileSync(statusFile, "500");
  await waitDeployment(id, (d) => status(d) === "UNHEALTHY", "r0 UNHEALTHY");
  writeFileSync(statusFile, "200");
  const recovered = await waitDeployment(id, (d) => status(d) === "HEALTHY", "r0 HEALTHY again");
  expect(statuses(recovered)).toEqual([`${r0}:HEALTHY`]);
  expect(await transitions(id, r0)).toEqual([
    "ProvisioningRoute SUCCESS PROVISIONING→DEGRADED",
    "HealthCheckRoute SUCCESS DEGRADED→HEALTHY",
    "HealthCheckRoute FAILURE HEALTHY→UNHEALTHY",
    "HealthCheckRoute SUCCESS UNHEALTHY→HEALTHY",
  ]);
  await send(DetailType.DeploymentDestroyRequested, { deploymentId: id });
  await waitDeployment(id, (d) => d.deployment.status === "DESTROYED", "DESTROYED");
}, 120_000);

test("a replica whose command exits at once is FAILED_TO_START → TERMINATING, and replaced after a hold-back", async () => {
  const id = "crash";
  await send(DetailType.DeploymentCreated, {
    deploymentId: id,
    spec: {
      name: id,
      replicas: 1,
      service: { command: ["/bin/sh", "-c", "exit 3"], resources: { cpu: 0.25, memoryMiB: 64 } },
      healthCheck: FAST_CHECK,
    },
  });
  await waitDeployment(
    id,
    (d) => d.routes.some((r) => r.index > 0) && d.routes[0]?.status === "TERMINATED",
    "r0 TERMINATED and a replacement route",
  );
  expect(await transitions(id, `${id}-r0`)).toEqual([
    "ProvisioningRoute FAILURE PROVISIONING→FAILED_TO_START",
    "RunningRoute FAILURE FAILED_TO_START→TERMINATING",
    "TerminatingRoute SUCCESS TERMINATING→TERMINATED",
  ]);
  const history = await deployments.deploymentHistory(id);
  const failed = history.find((h) => h.handler === "ProvisioningRoute");
  expect(failed?.message).toBe("its session ended TERMINATED (failed) before it ran");
  // A crash loop: the replacement waited out the hold-back after the failed start (10 s for the first).
  const replaced = await deployments.getDeployment(id);
  const r1 = replaced!.routes.find((r) => r.index === 1)!;
  expect(r1.createdAtMs - failed!.atMs).toBeGreaterThanOrEqual(10_000);
  expect(history.find((h) => h.handler === "ScalingDeployment" && h.result === "FAILURE")?.message).toMatch(
    /^1 replica\(s\) in a row failed: new ones held back until \d{4}-/,
  );
  expect(replaced!.deployment.failedStarts?.count).toBeGreaterThanOrEqual(1);
  await send(DetailType.DeploymentDestroyRequested, { deploymentId: id });
  await waitDeployment(id, (d) => d.deployment.status === "DESTROYED", "DESTROYED");
}, 90_000);

test("a server that refuses connections: create --wait exits 124 saying why; its replacements back off 10 s, then 20 s", async () => {
  const id = "refuses";
  // A real server, listening on a port of its own choosing instead of $CAIRN_PORT: every probe
  // of the replica's port is refused (ECONNREFUSED) while the process runs on.
  const server = 'require("node:http").createServer((req, res) => res.end("ok")).listen(0, "127.0.0.1");';
  const file = join(rt.dataDir, `${id}.yaml`);
  writeFileSync(
    file,
    JSON.stringify({
      name: id,
      replicas: 1,
      service: { command: ["node", "-e", server], resources: { cpu: 0.25, memoryMiB: 64 } },
      healthCheck: FAST_CHECK,
    }),
  );
  const created = await runCairn(rt.dataDir, [
    "deployment",
    "create",
    "-f",
    file,
    "--wait",
    "--timeout",
    "20",
  ]);
  expect(created.code, created.stderr).toBe(124);
  expect(created.stderr).toMatch(
    /cairn: timed out after 20 s waiting for deployment refuses to be READY with 1 healthy replica\(s\) \(last status (SCALING|READY); (Unhealthy|CrashLoopBackOff): .*ECONNREFUSED/,
  );
  // Each change of why was said as it happened, not only at the end.
  expect(created.stderr).toMatch(
    /deployment refuses: Unhealthy: 0 of 1 replica\(s\) healthy: refuses-r0 (DEGRADED|UNHEALTHY) \(ECONNREFUSED\)/,
  );

  // Two replicas evicted in a row; the third is created only after the second hold-back.
  const third = await waitDeployment(
    id,
    (d) => d.routes.some((r) => r.index === 2),
    "a third route",
    120_000,
  );
  const history = await deployments.deploymentHistory(id);
  const evictedAt = (routeId: string) =>
    history.find((h) => h.id === routeId && h.handler === "RouteEviction")!.atMs;
  const createdAt = (index: number) => third.routes.find((r) => r.index === index)!.createdAtMs;
  expect(history.find((h) => h.id === `${id}-r0` && h.handler === "RouteEviction")?.message).toBe(
    "evicted: failed 4 health checks in a row without recovering (ECONNREFUSED)",
  );
  expect(createdAt(1) - evictedAt(`${id}-r0`)).toBeGreaterThanOrEqual(10_000);
  expect(createdAt(2) - evictedAt(`${id}-r1`)).toBeGreaterThanOrEqual(20_000);
  expect(third.deployment.failedStarts).toMatchObject({
    count: 2,
    lastReason: `${id}-r1 failed: evicted: failed 4 health checks in a row without recovering (ECONNREFUSED)`,
  });

  // `deployment get` says why.
  const got = await runCairn(rt.dataDir, ["deployment", "get", id, "-o", "json"]);
  const view = JSON.parse(got.stdout) as { reason: { reason: string; message: string } | null };
  expect(view.reason?.reason).toMatch(/^(Unhealthy|CrashLoopBackOff)$/);
  expect(view.reason?.message).toContain("2 replica(s)");
  await send(DetailType.DeploymentDestroyRequested, { deploymentId: id });
  await waitDeployment(id, (d) => d.deployment.status === "DESTROYED", "DESTROYED");
}, 200_000);

test("bad specs are rejected with the field named", async () => {
  const reasons: string[] = [];
  rt.runtime.bus.onEvent((e) => {
    const d = e.detail as { detailType?: string; reason: string };
    if (e["detail-type"] === "Event Rejected" && d.detailType === "Deployment Created")
      reasons.push(d.reason);
  });
  const spec = { name: "bad", replicas: 1, service: { command: ["true"] } };
  for (const detail of [
    { deploymentId: "bad-replicas", spec: { ...spec, replicas: -1 } },
    { deploymentId: "bad-port", spec: { ...spec, service: { ...spec.service, port: 70_000 } } },
    { deploymentId: "bad-field", spec: { ...spec, replica: 2 } },
  ]) {
    await rt.put({
      Source: "cairn.client",
      DetailType: "Deployment Created",
      Detail: JSON.stringify(detail),
    });
  }
  await expect.poll(() => reasons.length, { timeout: 15_000 }).toBe(3);
  // As the coordinator words a rejection: the event, then each field and why.
  expect(
    reasons.map((r) => r.replace(/^rejected event [0-9a-f-]+ \(Deployment Created\): /, "")).sort(),
  ).toEqual([
    "detail.spec.replica: unknown field (expected one of name, replicas, service, healthCheck)",
    "detail.spec.replicas: must be at least 0",
    "detail.spec.service.port: must be at most 65535",
  ]);
  for (const id of ["bad-replicas", "bad-port", "bad-field"]) {
    expect(await deployments.getDeployment(id)).toBeUndefined();
  }
}, 30_000);

describe("from the CLI: examples/service.yaml", () => {
  const cairn = (...args: string[]) => runCairn(rt.dataDir, args);

  test("create --wait, routes, scale --wait, destroy --wait", async () => {
    const created = await cairn(
      "deployment",
      "create",
      "-f",
      "examples/service.yaml",
      "--wait",
      "--timeout",
      "90",
    );
    expect(created.stderr).toContain("waiting for deployment service to be READY with 3 healthy replica(s)");
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/READY/);
    // The wait ends only once every replica passes its health check.
    expect(created.stdout).toContain("3 asked for: 3 live, 3 healthy");
    const routes = await cairn("deployment", "routes", "service", "-o", "json");
    expect(routes.code, routes.stderr).toBe(0);
    const listed = JSON.parse(routes.stdout) as { routes: { routeId: string; status: string }[] };
    expect(listed.routes.map((r) => `${r.routeId}:${r.status}`)).toEqual([
      "service-r0:HEALTHY",
      "service-r1:HEALTHY",
      "service-r2:HEALTHY",
    ]);

    // Each replica answers on the port its agent gave it.
    const found = await deployments.getDeployment("service");
    for (const route of found!.routes) {
      const answer = await fetch(`http://127.0.0.1:${route.port}/`);
      expect(await answer.text()).toBe(`hello from ${route.sessionId}\n`);
    }

    const scaled = await cairn("deployment", "scale", "service", "1", "--wait", "--timeout", "90");
    expect(scaled.code, scaled.stderr).toBe(0);
    const destroyed = await cairn("deployment", "destroy", "service", "--wait", "--timeout", "90");
    expect(destroyed.code, destroyed.stderr).toBe(0);
    expect(destroyed.stdout).toMatch(/DESTROYED/);
  }, 200_000);

  test("a request the control plane refuses is recorded under the deployment's id, for the sender to read", async () => {
    await send(DetailType.DeploymentScaled, { deploymentId: "no-such-deployment", replicas: 2 });
    await expect
      .poll(async () => (await rt.store.listRejections("no-such-deployment")).map((r) => r.reason), {
        timeout: 15_000,
      })
      .toEqual(["detail.deploymentId: no deployment no-such-deployment"]);
  }, 30_000);
});

test("a health report not signed by the agent it names is refused, and changes nothing", async () => {
  const reasons: string[] = [];
  rt.runtime.bus.onEvent((e) => {
    const d = e.detail as { detailType?: string; reason: string };
    if (e["detail-type"] === "Event Rejected" && d.detailType === "Route Health Reported")
      reasons.push(d.reason);
  });
  const agent = (await rt.store.listAgents())[0]!;
  const forged = {
    agentId: agent.id,
    incarnation: agent.incarnation!,
    deploymentId: "nobody",
    routeId: "nobody-r0",
    sessionId: "nobody-r0",
    runIndex: 0,
    port: 8080,
    probes: [{ ok: true, atMs: Date.now(), httpStatus: 200 }],
    atMs: Date.now(),
    signature: "0".repeat(64),
  };
  await rt.put(
    { Source: "cairn.agent", DetailType: "Route Health Reported", Detail: JSON.stringify(forged) },
    "agent",
  );
  await expect
    .poll(() => reasons, { timeout: 15_000 })
    .toEqual([`detail.signature: does not match agent ${agent.id}'s key: the event is not from that agent`]);
}, 30_000);

test("a health report signed by an agent that does not run the route's session is refused", async () => {
  const id = "owned";
  const reasons: string[] = [];
  rt.runtime.bus.onEvent((e) => {
    const d = e.detail as { detailType?: string; reason: string };
    if (e["detail-type"] === "Event Rejected" && d.detailType === "Route Health Reported")
      reasons.push(d.reason);
  });
  await send(DetailType.DeploymentCreated, {
    deploymentId: id,
    spec: { name: id, replicas: 1, service: service(200), healthCheck: FAST_CHECK },
  });
  const ready = await waitDeployment(id, (d) => healthy(d).length === 1, "1 HEALTHY route");
  const route = ready.routes[0]!;
  const listed = (await rt.store.listAgents()).find(
    (a) => a.id !== route.agentId && a.incarnation !== undefined,
  )!;
  // Its key as the functions read it: listings leave keys out.
  const other = (await rt.store.getAgent(listed.id))!;
  const detail = {
    agentId: other.id,
    incarnation: other.incarnation!,
    deploymentId: id,
    routeId: route.id,
    sessionId: route.sessionId,
    runIndex: 0,
    port: route.port!,
    // A stream of failures that would evict a healthy replica, were it believed.
    probes: [1, 2, 3].map((n) => ({ ok: false, atMs: Date.now() + n, message: "forged" })),
    atMs: Date.now(),
  };
  await rt.put(
    {
      Source: "cairn.agent",
      DetailType: "Route Health Reported",
      Detail: JSON.stringify({
        ...detail,
        signature: signDetail(other.signingKey!, DetailType.RouteHealthReported, {
          ...detail,
          signature: "",
        }),
      }),
    },
    "agent",
  );
  await expect
    .poll(() => reasons, { timeout: 15_000 })
    .toEqual([`detail.agentId: agent ${other.id} does not run route ${route.id}'s session`]);
  const after = await deployments.getDeployment(id);
  expect(after!.routes[0]!.status).toBe("HEALTHY");
  expect(after!.routes[0]!.health.lastMessage).not.toBe("forged");
  await send(DetailType.DeploymentDestroyRequested, { deploymentId: id });
  await waitDeployment(id, (d) => d.deployment.status === "DESTROYED", "DESTROYED");
}, 60_000);
