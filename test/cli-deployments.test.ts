/**
 * `cairn deployment`: arguments and specs refused before anything is sent, with
 * verbatim messages; the events each request publishes (and the requests the control plane
 * would refuse, refused here first); get, list and routes rendered from deployment and route
 * items saved through DeploymentItems in DynamoDB Local; and `--wait` following items the test
 * writes itself between polls, on a simulated clock. No deployment machinery runs here.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { CairnApi } from "../bin/cli/cairn-api.ts";
import { renderDeployment } from "../bin/cli/deployment-render.ts";
import { printable } from "../bin/cli/terminal-text.ts";
import { deploymentView } from "../bin/cli/deployment-views.ts";
import { runCli } from "../bin/cli/main.ts";
import { DeploymentItems } from "../functions/adapters/dynamo/deployment-items.ts";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { initialHealth } from "../functions/core/deployments/health.ts";
import {
  routeId,
  type Deployment,
  type FamilyHistoryRecord,
  type Route,
} from "../functions/core/deployments/model.ts";
import { parseDeploymentSpec } from "../functions/core/deployments/spec.ts";
import type { PutEventsEntry } from "../functions/core/events.ts";
import { fakeCliIo, simulatedClock, usageErrorOf } from "./support/cli-helpers.ts";
import { freshTable, T0, type TestTable } from "./store-fixtures.ts";

// ---------------------------------------------------------------------------------------------
// Fixtures: literal times (T0 is 2027-01-15T08:00:00.000Z), deployments written as items.

const NOW = T0 + 300_000;
const RUNTIME_FILE = {
  region: "local",
  tableName: "cairn",
  eventBusName: "cairn",
  stateMachineArn: "arn:aws:states:local:000000000000:stateMachine:SessionLifecycle",
  endpoints: { dynamoDb: "http://127.0.0.1:8000", eventBridge: "http://127.0.0.1:8002" },
  pid: 1,
};
const SVC_YAML = `name: web
replicas: 2
service:
  command: [python3, -m, http.server]
  resources: { cpu: 0.5, memoryMiB: 256 }
`;
const SPEC = parseDeploymentSpec({
  name: "web",
  replicas: 2,
  service: { command: ["python3", "-m", "http.server"], resources: { cpu: 0.5, memoryMiB: 256 } },
});

function deployment(id: string, over: Partial<Deployment> = {}): Deployment {
  return {
    id,
    spec: { ...SPEC, name: id },
    status: "READY",
    version: 0,
    execution: { name: id, generation: 1, transitions: 2, startedAtMs: T0 },
    stage: { enteredAtMs: T0 + 20_000, taskToken: "tok" },
    nextRouteIndex: 3,
    createdAtMs: T0,
    updatedAtMs: T0 + 20_000,
    ...over,
  };
}

function route(deploymentId: string, index: number, over: Partial<Route> = {}): Route {
  const id = routeId(deploymentId, index);
  return {
    id,
    deploymentId,
    index,
    status: "PROVISIONING",
    version: 0,
    sessionId: id,
    execution: { name: id, generation: 1, transitions: 0, startedAtMs: T0 },
    stage: { enteredAtMs: T0 },
    health: initialHealth(T0),
    createdAtMs: T0 + 1_000,
    updatedAtMs: T0 + 1_000,
    ...over,
  };
}

const history = (
  id: string,
  atMs: number,
  fields: Pick<FamilyHistoryRecord, "handler" | "result" | "fromStatus"> & Partial<FamilyHistoryRecord>,
): FamilyHistoryRecord => ({ entity: id.includes("-r") ? "route" : "deployment", id, atMs, ...fields });

/** What a user's service (or a replica's probe) may say: a newline and a terminal escape. */
const HOSTILE = "refused\n\u001b[2J\u001b]0;owned\u0007 by 10.0.0.9";

/** web-r1's health as `-o json` shows it (its message aside). */
const HEALTH_R1 = {
  lastProbeAt: "2027-01-15T08:04:58.000Z",
  consecutiveSuccesses: 0,
  consecutiveFailures: 2,
  checkedSince: "2027-01-15T08:00:10.000Z",
};

const WEB_ROUTES: Route[] = [
  route("web", 0, {
    status: "HEALTHY",
    agentId: "agent-1",
    port: 8080,
    health: {
      consecutiveSuccesses: 3,
      consecutiveFailures: 0,
      lastProbeAtMs: NOW - 4_000,
      checkedSinceMs: T0,
    },
  }),
  route("web", 1, {
    status: "DEGRADED",
    agentId: "agent-2",
    port: 8081,
    health: {
      consecutiveSuccesses: 0,
      consecutiveFailures: 2,
      lastProbeAtMs: NOW - 2_000,
      lastMessage: HOSTILE,
      checkedSinceMs: T0 + 10_000,
    },
  }),
  route("web", 2, { status: "TERMINATED", agentId: "agent-3", port: 8082, removeRequestedAtMs: T0 + 15_000 }),
];

const WEB_HISTORY: FamilyHistoryRecord[] = [
  history("web", T0 + 1_000, {
    handler: "CheckPendingDeployment",
    result: "SUCCESS",
    fromStatus: "PENDING",
    toStatus: "SCALING",
    message: "scaling to 2 replica(s)",
  }),
  history("web-r0", T0 + 5_000, {
    handler: "ProvisioningRoute",
    result: "SUCCESS",
    fromStatus: "PROVISIONING",
    toStatus: "DEGRADED",
    message: "replica running on agent-1:8080",
  }),
  history("web-r1", T0 + 6_000, {
    handler: "HealthCheckRoute",
    result: "FAILURE",
    fromStatus: "DEGRADED",
    message: `GET / failed 2 time(s) in a row: ${HOSTILE}`,
  }),
  history("web", T0 + 20_000, {
    handler: "ScalingDeployment",
    result: "SUCCESS",
    fromStatus: "SCALING",
    toStatus: "READY",
    message: "2 replica(s)",
  }),
];

// ---------------------------------------------------------------------------------------------

let table: TestTable;
let items: DeploymentItems;

beforeAll(async () => {
  table = await freshTable("cairn-cli-deployments");
  items = new DeploymentItems(new DynamoRequests(table.client, table.tableName, undefined));
  await items.saveDeployment({
    deployment: { next: deployment("web"), expected: "absent" },
    routes: WEB_ROUTES.map((r) => ({ next: r, expected: "absent" as const })),
    history: WEB_HISTORY,
  });
  await items.saveDeployment({
    deployment: {
      next: deployment("api", {
        status: "DESTROYED",
        spec: { ...SPEC, name: "api", replicas: 0 },
        destroyRequest: { atMs: T0 + 30_000, reason: "replaced by web" },
        createdAtMs: T0 - 3_600_000,
      }),
      expected: "absent",
    },
  });
});
afterAll(() => table.drop());

/** runCli against the test's table, capturing the events put; `onSleep` changes the items between polls. */
function cli(files: Record<string, string> = {}, onSleep?: (slept: number) => Promise<void>) {
  const puts: PutEventsEntry[] = [];
  const api: CairnApi = {
    store: {} as CairnApi["store"],
    admin: {} as CairnApi["admin"],
    agents: {} as CairnApi["agents"],
    census: {} as CairnApi["census"],
    deployments: items,
    eventBusName: "cairn",
    logs: { readable: false, why: "no logs here" },
    put: (entry) => {
      puts.push(entry);
      return Promise.resolve();
    },
    close: () => {},
  };
  const clock = simulatedClock(NOW);
  let slept = 0;
  const { io, out, err } = fakeCliIo(
    { "/work/.cairn/runtime.json": JSON.stringify(RUNTIME_FILE), ...files },
    {
      nowMs: clock.nowMs,
      sleep: async (ms) => {
        await clock.sleep(ms);
        await onSleep?.(++slept);
      },
      openApi: () => Promise.resolve(api),
      stackOutputs: () => Promise.resolve({}),
    },
  );
  const events = () => puts.map((p) => [p.DetailType, p.Source, JSON.parse(p.Detail) as unknown]);
  return { io, out, err, events };
}

// ---------------------------------------------------------------------------------------------

describe("arguments", () => {
  test.each([
    [
      "deployment",
      "missing what to do with deployment (expected one of create, get, list, scale, destroy, routes)",
    ],
    ["deployment create", "missing the deployment spec: -f FILE"],
    [
      "deployment create a.yaml -f b.yaml",
      'give the deployment spec once: either FILE or -f, not both ("a.yaml", "b.yaml")',
    ],
    ["deployment create -f a.yaml --timeout 5", "--timeout only applies with --wait"],
    [
      "deployment create -f a.yaml --wait --timeout 0",
      '--timeout must be a positive number of seconds, got "0"',
    ],
    ["deployment get", "missing NAME"],
    [
      "deployment get Web",
      `NAME "Web" is not a deployment name: must be 3 to 63 lowercase letters, digits or '-', starting with a letter or digit`,
    ],
    [
      `deployment get ${"w".repeat(57)}`,
      `NAME "${"w".repeat(57)}" is not a deployment name: must be at most 56 characters (its routes are named <id>-r<index>)`,
    ],
    ["deployment scale web", "missing NAME REPLICAS"],
    ["deployment scale web 65", 'REPLICAS must be a whole number from 0 to 64, got "65"'],
    ["deployment scale web 1.5", 'REPLICAS must be a whole number from 0 to 64, got "1.5"'],
    ["deployment scale web -1", "unknown option -1"],
    ["deployment scale web 3 --timeout 9", "--timeout only applies with --wait"],
    ["deployment destroy web --all", "unknown option --all"],
    ["deployment routes web --all=yes", "option --all takes no value"],
    ["deployment list web", 'unexpected argument "web"'],
    [
      "deployment launch",
      'unknown deployment command "launch" (expected one of create, get, list, scale, destroy, routes)',
    ],
  ])("%j: %s", (line, message) => {
    const error = usageErrorOf(line);
    expect(error.message).toBe(message);
  });

  test("a usage error points at the command's help", async () => {
    const c = cli();
    expect(await runCli(["deployment", "scale", "web", "99"], c.io)).toBe(2);
    expect(c.err).toEqual([
      'cairn: REPLICAS must be a whole number from 0 to 64, got "99"',
      "see `cairn deployment scale --help`",
    ]);
  });
});

describe("deployment create: the spec is checked before anything is sent", () => {
  test.each([
    [
      "replicas out of range, an unknown field, a port out of range",
      "name: web\nreplicas: 65\nservice:\n  command: [serve]\n  port: 70000\n  prot: 80\n",
      [
        "cairn: invalid deployment spec svc.yaml (3 problems):",
        "  replicas: must be at most 64",
        "  service.port: must be at most 65535",
        "  service.prot: unknown field (expected one of command, env, resources, queue, priority, nodeSelector, port)",
      ],
    ],
    [
      "a name that cannot be a deployment's id",
      "name: Web_1\nreplicas: 1\nservice: { command: [serve] }\n",
      [
        "cairn: invalid deployment spec svc.yaml (1 problem):",
        `  name: "Web_1" cannot be a deployment's id: must be 3 to 63 lowercase letters, digits or '-', starting with a letter or digit`,
      ],
    ],
    [
      "YAML that does not parse",
      "name: web\nreplicas: [1\n",
      [
        expect.stringMatching(
          /^cairn: svc\.yaml: invalid deployment spec: YAML syntax error at line 3, column 1: /,
        ),
      ],
    ],
    [
      "a health check whose probe outlasts its interval",
      "name: web\nreplicas: 1\nservice: { command: [serve] }\nhealthCheck: { intervalSeconds: 2 }\n",
      [
        "cairn: invalid deployment spec svc.yaml (1 problem):",
        "  healthCheck.timeoutSeconds: is 2 (2 when not given) and must be less than intervalSeconds (2): a probe ends before the next one starts",
      ],
    ],
  ])("%s", async (_label, text, expected) => {
    const c = cli({ "/work/svc.yaml": text });
    expect(await runCli(["deployment", "create", "-f", "svc.yaml"], c.io)).toBe(2);
    expect(c.err.join("\n").split("\n")).toEqual(expected);
    expect(c.events()).toEqual([]);
  });

  test("a missing file", async () => {
    const c = cli();
    expect(await runCli(["deployment", "create", "nope.yaml"], c.io)).toBe(2);
    expect(c.err).toEqual(["cairn: cannot read the deployment spec nope.yaml: no such file"]);
  });
});

describe("the events each request publishes", () => {
  test("create: Deployment Created with the spec, defaults filled in; its id is the spec's name", async () => {
    const c = cli({ "/work/svc.yaml": SVC_YAML.replace("name: web", "name: shop") });
    expect(await runCli(["deployment", "create", "-f", "svc.yaml"], c.io)).toBe(0);
    expect(c.events()).toEqual([
      ["Deployment Created", "cairn.client", { deploymentId: "shop", spec: { ...SPEC, name: "shop" } }],
    ]);
    expect(c.out).toEqual([
      "create requested for deployment shop (2 replicas); follow it with `cairn deployment get shop`",
    ]);
  });

  test("create again with the same spec sends nothing; with another spec it is refused (exit 2)", async () => {
    const same = cli({ "/work/svc.yaml": SVC_YAML });
    expect(await runCli(["deployment", "create", "svc.yaml", "-o", "json"], same.io)).toBe(0);
    expect(same.err).toEqual(["deployment web already exists with this spec (READY); not sent again"]);
    expect(JSON.parse(same.out.join(""))).toEqual({ deploymentId: "web", created: false });
    const other = cli({ "/work/svc.yaml": SVC_YAML.replace("replicas: 2", "replicas: 3") });
    expect(await runCli(["deployment", "create", "svc.yaml"], other.io)).toBe(2);
    expect(other.err).toEqual([
      "cairn: deployment web exists (READY) with another spec: change its replicas with `cairn deployment scale web N`, " +
        "or destroy it first (`cairn deployment destroy web`)",
    ]);
    expect([...same.events(), ...other.events()]).toEqual([]);
  });

  test("a DESTROYED deployment's name may be used again", async () => {
    const c = cli({ "/work/svc.yaml": SVC_YAML.replace("name: web", "name: api") });
    expect(await runCli(["deployment", "create", "svc.yaml"], c.io)).toBe(0);
    expect(c.events()).toEqual([
      ["Deployment Created", "cairn.client", { deploymentId: "api", spec: { ...SPEC, name: "api" } }],
    ]);
  });

  test("scale: Deployment Scaled; the same count sends nothing; a destroyed one is refused; a missing one is exit 3", async () => {
    const c = cli();
    expect(await runCli(["deployment", "scale", "web", "5"], c.io)).toBe(0);
    expect(c.events()).toEqual([["Deployment Scaled", "cairn.client", { deploymentId: "web", replicas: 5 }]]);
    expect(c.out).toEqual([
      "scale requested for deployment web: 2 → 5 replicas (it was READY); follow it with `cairn deployment get web`",
    ]);
    const same = cli();
    expect(await runCli(["deployment", "scale", "web", "2", "-o", "json"], same.io)).toBe(0);
    expect(JSON.parse(same.out.join(""))).toEqual({
      deploymentId: "web",
      replicas: 2,
      from: 2,
      scaleRequested: false,
      status: "READY",
    });
    const destroyed = cli();
    expect(await runCli(["deployment", "scale", "api", "1"], destroyed.io)).toBe(2);
    expect(destroyed.err).toEqual(["cairn: deployment api is DESTROYED: it cannot be scaled"]);
    const missing = cli();
    expect(await runCli(["deployment", "scale", "nope", "1"], missing.io)).toBe(3);
    expect(missing.err).toEqual(["cairn: deployment nope not found (`cairn deployment list` lists them)"]);
    expect([...same.events(), ...destroyed.events(), ...missing.events()]).toEqual([]);
  });

  test("destroy: Deployment Destroy Requested with the reason; an already destroyed one sends nothing", async () => {
    const c = cli();
    expect(await runCli(["deployment", "destroy", "web", "--reason", "moving to v2"], c.io)).toBe(0);
    expect(c.events()).toEqual([
      ["Deployment Destroy Requested", "cairn.client", { deploymentId: "web", reason: "moving to v2" }],
    ]);
    expect(c.out).toEqual([
      "destroy requested for deployment web (it was READY); follow it with `cairn deployment get web`",
    ]);
    const done = cli();
    expect(await runCli(["deployment", "destroy", "api", "-o", "json"], done.io)).toBe(0);
    expect(JSON.parse(done.out.join(""))).toEqual({
      deploymentId: "api",
      destroyRequested: false,
      status: "DESTROYED",
    });
    expect(done.events()).toEqual([]);
    const missing = cli();
    expect(await runCli(["deployment", "destroy", "nope"], missing.io)).toBe(3);
  });
});

describe("get, list and routes, from the items", () => {
  test("get: status, replicas, the spec, live routes with their health, history; user text escaped", async () => {
    const c = cli();
    expect(await runCli(["deployment", "get", "web"], c.io)).toBe(0);
    expect(c.out.join("\n")).toBe(
      [
        "deployment web: READY",
        "  replicas   2 asked for: 2 live, 1 healthy",
        "  reason     Unhealthy: 1 of 2 replica(s) healthy: web-r1 DEGRADED (refused \\u001b[2J\\u001b]0;owned\\u0007 by 10.0.0.9)",
        "  command    python3 -m http.server",
        "  resources  0.5 cpu, 256 MiB",
        "  queue      default, service priority 0 (the queue's priority is added)",
        "  port       picked by each replica's agent (CAIRN_PORT)",
        "  health     GET / every 5 s (timeout 2 s); healthy after 1 passed, unhealthy after 3 failed in a row, evicted after 6",
        "  created    2027-01-15T08:00:00.000Z (5m00s ago)",
        "  updated    2027-01-15T08:00:20.000Z (4m40s ago)",
        "  execution  web",
        "  ROUTE   STATUS    AGENT:PORT    SESSION  LAST PROBE  IN A ROW  MESSAGE",
        "  web-r0  HEALTHY   agent-1:8080  web-r0   4.0s ago    3 passed  -",
        "  web-r1  DEGRADED  agent-2:8081  web-r1   2.0s ago    2 failed  refused \\u001b[2J\\u001b]0;owned\\u0007 by 10.0.0.9",
        "  (1 terminated route not shown: `cairn deployment routes web --all`)",
        "  history:",
        "    AT                        OF      HANDLER                 RESULT   STATUS                   MESSAGE",
        "    2027-01-15T08:00:01.000Z  web     CheckPendingDeployment  SUCCESS  PENDING → SCALING        scaling to 2 replica(s)",
        "    2027-01-15T08:00:05.000Z  web-r0  ProvisioningRoute       SUCCESS  PROVISIONING → DEGRADED  replica running on agent-1:8080",
        "    2027-01-15T08:00:06.000Z  web-r1  HealthCheckRoute        FAILURE  DEGRADED (kept)          GET / failed 2 time(s) in a row: refused \\u001b[2J\\u001b]0;owned\\u0007 by 10.0.0.9",
        "    2027-01-15T08:00:20.000Z  web     ScalingDeployment       SUCCESS  SCALING → READY          2 replica(s)",
      ].join("\n"),
    );
    expect(c.out.join("\n")).not.toContain("\u001b");
  });

  test("get of a crash-looping deployment: CrashLoopBackOff, its failed replicas and until when new ones are held back", () => {
    const lastReason =
      "loop-r2 failed: evicted: failed 6 health checks in a row without recovering (ECONNREFUSED)";
    const looping = deploymentView(
      {
        deployment: deployment("loop", {
          status: "SCALING",
          failedStarts: { count: 3, lastAtMs: T0 + 60_000, lastReason },
        }),
        routes: [],
      },
      [],
      T0 + 70_000,
    );
    expect(looping.failedStarts).toEqual({
      count: 3,
      last: "2027-01-15T08:01:00.000Z",
      lastReason,
      heldUntil: "2027-01-15T08:01:40.000Z",
    });
    expect(looping.reason).toEqual({
      reason: "CrashLoopBackOff",
      message: `3 replica(s) in a row failed (latest: ${lastReason}); the next one starts in 30 s (2027-01-15T08:01:40.000Z)`,
    });
    const text = renderDeployment(looping, T0 + 70_000);
    expect(text).toContain(
      `  reason     CrashLoopBackOff: 3 replica(s) in a row failed (latest: ${lastReason})`,
    );
    expect(text).toContain(
      `  failed     3 replica(s) in a row, the latest 2027-01-15T08:01:00.000Z (${lastReason}); new replicas held back until 2027-01-15T08:01:40.000Z`,
    );
  });

  test("get -o json: every route (ended ones too), the spec with its defaults, history newest last", async () => {
    const c = cli();
    expect(await runCli(["deployment", "get", "web", "-o", "json"], c.io)).toBe(0);
    const view = JSON.parse(c.out.join("")) as Record<string, unknown>;
    expect(view).toMatchObject({
      deploymentId: "web",
      status: "READY",
      replicas: { asked: 2, live: 2, healthy: 1 },
      spec: SPEC,
      destroyRequest: null,
      failedStarts: null,
      executionName: "web",
      createdAt: "2027-01-15T08:00:00.000Z",
    });
    expect(view["routes"]).toEqual([
      {
        routeId: "web-r0",
        index: 0,
        status: "HEALTHY",
        sessionId: "web-r0",
        agent: "agent-1",
        port: 8080,
        health: {
          lastProbeAt: "2027-01-15T08:04:56.000Z",
          consecutiveSuccesses: 3,
          consecutiveFailures: 0,
          lastMessage: null,
          checkedSince: "2027-01-15T08:00:00.000Z",
        },
        removeRequestedAt: null,
        createdAt: "2027-01-15T08:00:01.000Z",
        updatedAt: "2027-01-15T08:00:01.000Z",
      },
      expect.objectContaining({ routeId: "web-r1", health: { ...HEALTH_R1, lastMessage: HOSTILE } }),
      expect.objectContaining({
        routeId: "web-r2",
        status: "TERMINATED",
        removeRequestedAt: "2027-01-15T08:00:15.000Z",
      }),
    ]);
    expect((view["history"] as { at: string; to: string | null }[]).map((h) => [h.at, h.to])).toEqual([
      ["2027-01-15T08:00:01.000Z", "SCALING"],
      ["2027-01-15T08:00:05.000Z", "DEGRADED"],
      ["2027-01-15T08:00:06.000Z", null],
      ["2027-01-15T08:00:20.000Z", "READY"],
    ]);
  });

  test("get of a missing deployment: exit 3, as the other gets", async () => {
    const c = cli();
    expect(await runCli(["deployment", "get", "nope"], c.io)).toBe(3);
    expect(c.err).toEqual(["cairn: deployment nope not found (`cairn deployment list` lists them)"]);
  });

  test("list: one line per deployment; JSON", async () => {
    const c = cli();
    expect(await runCli(["deployment", "list"], c.io)).toBe(0);
    expect(c.out.join("\n")).toBe(
      [
        "NAME  STATUS             REPLICAS  HEALTHY  AGE",
        "api   DESTROYED          0/0       0        1h05m ago",
        "web   READY (Unhealthy)  2/2       1        5m00s ago",
      ].join("\n"),
    );
    const json = cli();
    expect(await runCli(["deployment", "list", "-o", "json"], json.io)).toBe(0);
    expect(JSON.parse(json.out.join(""))).toEqual({
      deployments: [
        {
          deploymentId: "api",
          status: "DESTROYED",
          replicas: { asked: 0, live: 0, healthy: 0 },
          reason: null,
          createdAt: "2027-01-15T07:00:00.000Z",
          updatedAt: "2027-01-15T08:00:20.000Z",
        },
        {
          deploymentId: "web",
          status: "READY",
          replicas: { asked: 2, live: 2, healthy: 1 },
          reason: {
            reason: "Unhealthy",
            message: expect.stringContaining(
              "1 of 2 replica(s) healthy: web-r1 DEGRADED (refused",
            ) as unknown,
          },
          createdAt: "2027-01-15T08:00:00.000Z",
          updatedAt: "2027-01-15T08:00:20.000Z",
        },
      ],
    });
  });

  test("routes: the live ones; --all adds the TERMINATED; JSON", async () => {
    const c = cli();
    expect(await runCli(["deployment", "routes", "web"], c.io)).toBe(0);
    expect(
      c.out
        .join("\n")
        .split("\n")
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(["ROUTE", "web-r0", "web-r1"]);
    const all = cli();
    expect(await runCli(["deployment", "routes", "web", "--all"], all.io)).toBe(0);
    expect(all.out.join("\n").split("\n").at(-1)).toBe(
      "web-r2  TERMINATED  agent-3:8082  web-r2   -           -         -",
    );
    const json = cli();
    expect(await runCli(["deployment", "routes", "web", "-o", "json"], json.io)).toBe(0);
    const view = JSON.parse(json.out.join("")) as { all: boolean; routes: { routeId: string }[] };
    expect([view.all, view.routes.map((r) => r.routeId)]).toEqual([false, ["web-r0", "web-r1"]]);
    const none = cli();
    expect(await runCli(["deployment", "routes", "api"], none.io)).toBe(0);
    expect(none.out).toEqual(["deployment api (DESTROYED) has no live routes"]);
  });

  test("printable: control characters are escaped, whitespace folded, the rest kept", () => {
    expect(printable("a\tb\nc\u001b[31m\u009b\u202eé")).toBe("a b c\\u001b[31m\\u009b\\u202eé");
  });
});

describe("--wait, following items the test writes between polls", () => {
  test("create --wait: each status change of the deployment and its routes and why, then the deployment; exit 0 once READY and every replica HEALTHY", async () => {
    const id = "cart";
    const spec = { ...SPEC, name: id };
    const d0 = deployment(id, { spec, status: "PENDING", nextRouteIndex: 0 });
    const steps: (() => Promise<void>)[] = [
      () => items.saveDeployment({ deployment: { next: d0, expected: "absent" } }),
      () =>
        items.saveDeployment({
          deployment: {
            next: { ...d0, status: "SCALING", nextRouteIndex: 2 },
            expected: { status: "PENDING", version: 0 },
          },
          routes: [0, 1].map((i) => ({ next: route(id, i), expected: "absent" as const })),
        }),
      async () => {
        const { routes } = (await items.getDeployment(id))!;
        await items.saveDeployment({
          routes: routes.map((r, i) => ({
            next: { ...r, status: "DEGRADED" as const, agentId: `agent-${i + 1}`, port: 9000 + i },
            expected: r,
          })),
        });
      },
      () =>
        items.saveDeployment({
          deployment: {
            next: { ...d0, status: "READY", nextRouteIndex: 2 },
            expected: { status: "SCALING", version: 1 },
          },
        }),
      // READY with replicas that do not pass their health check yet is not the end of the wait.
      async () => {
        const { routes } = (await items.getDeployment(id))!;
        await items.saveDeployment({
          routes: routes.map((r) => ({ next: { ...r, status: "HEALTHY" as const }, expected: r })),
        });
      },
    ];
    const c = cli({ "/work/svc.yaml": SVC_YAML.replace("name: web", `name: ${id}`) }, async (n) => {
      await steps[n - 1]?.();
    });
    expect(await runCli(["deployment", "create", "svc.yaml", "--wait"], c.io)).toBe(0);
    expect(c.events().map((e) => e[0])).toEqual(["Deployment Created"]);
    expect(c.err).toEqual([
      "waiting for deployment cart to be READY with 2 healthy replica(s) for up to 600 s (Ctrl-C stops waiting, not the deployment)",
      "deployment cart: PENDING (0 of 2 replica(s) live)",
      "deployment cart: PENDING → SCALING (2 of 2 replica(s) live)",
      "route cart-r0: PROVISIONING",
      "route cart-r1: PROVISIONING",
      "route cart-r0: PROVISIONING → DEGRADED on agent-1:9000",
      "route cart-r1: PROVISIONING → DEGRADED on agent-2:9001",
      "deployment cart: SCALING → READY (2 of 2 replica(s) live)",
      "route cart-r0: DEGRADED → HEALTHY on agent-1:9000",
      "route cart-r1: DEGRADED → HEALTHY on agent-2:9001",
    ]);
    expect(c.out[0]).toMatch(/^deployment cart: READY\n {2}replicas {3}2 asked for: 2 live, 2 healthy\n/);
  });

  test("scale --wait ends only once the new count is READY; destroyed instead is exit 1", async () => {
    const id = "feed";
    const d0 = deployment(id, { spec: { ...SPEC, name: id, replicas: 1 }, nextRouteIndex: 1 });
    await items.saveDeployment({
      deployment: { next: d0, expected: "absent" },
      routes: [{ next: route(id, 0, { status: "HEALTHY" }), expected: "absent" }],
    });
    // The scale is not handled yet on the first polls (still READY with 1), then the deployment is destroyed.
    const steps: (() => Promise<void>)[] = [
      () => Promise.resolve(),
      () =>
        items.saveDeployment({
          deployment: {
            next: { ...d0, status: "DESTROYING", destroyRequest: { atMs: NOW, reason: "x" } },
            expected: d0,
          },
        }),
    ];
    const c = cli({}, async (n) => {
      await steps[n - 1]?.();
    });
    expect(await runCli(["deployment", "scale", id, "3", "--wait", "-o", "json"], c.io)).toBe(1);
    expect(c.events()).toEqual([["Deployment Scaled", "cairn.client", { deploymentId: id, replicas: 3 }]]);
    expect(c.err).toEqual([
      "waiting for deployment feed to be READY with 3 healthy replica(s) for up to 600 s (Ctrl-C stops waiting, not the deployment)",
      "deployment feed: READY (1 of 1 replica(s) live)",
      "route feed-r0: HEALTHY",
      "deployment feed: READY → DESTROYING (1 of 1 replica(s) live)",
      "deployment feed is DESTROYING instead: it will not be READY",
    ]);
    expect(JSON.parse(c.out.join(""))).toMatchObject({ deploymentId: id, status: "DESTROYING" });
  });

  test("create --wait of a DESTROYED deployment's name: the old DESTROYED item ends nothing", async () => {
    const old = (await items.getDeployment("api"))!.deployment;
    const again = deployment("api", { spec: { ...SPEC, name: "api" }, nextRouteIndex: 2 });
    const c = cli({ "/work/svc.yaml": SVC_YAML.replace("name: web", "name: api") }, async (n) => {
      if (n !== 2) return;
      await items.saveDeployment({
        deployment: { next: again, expected: old },
        routes: [0, 1].map((i) => ({
          next: route("api", i, { status: "HEALTHY" }),
          expected: "absent" as const,
        })),
      });
    });
    expect(await runCli(["deployment", "create", "svc.yaml", "--wait", "-o", "json"], c.io)).toBe(0);
    expect(c.events().map((e) => e[0])).toEqual(["Deployment Created"]);
    expect(c.err).toEqual([
      "waiting for deployment api to be READY with 2 healthy replica(s) for up to 600 s (Ctrl-C stops waiting, not the deployment)",
      "deployment api: DESTROYED (0 of 0 replica(s) live)",
      "deployment api: DESTROYED → READY (2 of 2 replica(s) live)",
      "route api-r0: HEALTHY",
      "route api-r1: HEALTHY",
    ]);
    expect(JSON.parse(c.out.join(""))).toMatchObject({ deploymentId: "api", status: "READY" });
  });

  test("destroy --wait --timeout: exit 124 with the last status; a deployment already being destroyed is not sent again", async () => {
    const c = cli();
    expect(await runCli(["deployment", "destroy", "feed", "--wait", "--timeout", "2"], c.io)).toBe(124);
    expect(c.events()).toEqual([]);
    expect(c.err).toEqual([
      "deployment feed is already being destroyed (DESTROYING); not sent again",
      "waiting for deployment feed to be DESTROYED for up to 2 s (Ctrl-C stops waiting, not the deployment)",
      "deployment feed: DESTROYING (1 of 1 replica(s) live)",
      "route feed-r0: HEALTHY",
      "cairn: timed out after 2 s waiting for deployment feed to be DESTROYED (last status DESTROYING); " +
        "it keeps going: follow it with `cairn deployment get feed`",
    ]);
  });
});
