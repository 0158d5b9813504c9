/**
 * The dashboard's deployments pages over deployments saved through DeploymentItems in
 * DynamoDB Local: the list (status, replicas live of those asked for, healthy routes, age), a
 * deployment's page (spec, routes with their sessions, endpoints and health, history newest last,
 * execution links), what users and replicas wrote rendered escaped, and 404s. Executions: the
 * local engine's pages read the deployment's and the route's own state machines; deployed, the
 * console's ARN is the session lifecycle's sibling.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DeploymentItems } from "../functions/adapters/dynamo/deployment-items.ts";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { initialHealth } from "../functions/core/deployments/health.ts";
import { routeId, type Deployment, type Route } from "../functions/core/deployments/model.ts";
import { parseDeploymentSpec } from "../functions/core/deployments/spec.ts";
import { familyExecutions } from "../dashboard/deployments-page.ts";
import type { DashboardDeps, DashboardStore, ExecutionEvent, Executions } from "../dashboard/deps.ts";
import { startDashboard, type DashboardServer } from "../dashboard/server.ts";
import { freshTable, T0, type TestTable } from "./store-fixtures.ts";

const SCRIPT = `<script>alert("x")</script>`;
const ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;";
const LOCAL_MACHINE = "arn:aws:states:local:000000000000:stateMachine:SessionLifecycle";

const spec = parseDeploymentSpec({
  name: "web",
  replicas: 3,
  service: { command: ["python3", "-c", `print('${SCRIPT}')`], resources: { cpu: 2, memoryMiB: 512 } },
  healthCheck: { path: "/healthz", intervalSeconds: 10, timeoutSeconds: 3, unhealthyThreshold: 4 },
});

function deployment(id: string, over: Partial<Deployment> = {}): Deployment {
  return {
    id,
    spec: { ...spec, name: id },
    status: "READY",
    version: 0,
    execution: { name: id, generation: 1, transitions: 4, startedAtMs: T0 },
    stage: { enteredAtMs: T0 + 20_000, taskToken: "tok-d" },
    nextRouteIndex: 3,
    createdAtMs: T0,
    updatedAtMs: T0 + 20_000,
    ...over,
  };
}

function route(deploymentId: string, index: number, over: Partial<Route> = {}): Route {
  return {
    id: routeId(deploymentId, index),
    deploymentId,
    index,
    status: "HEALTHY",
    version: 0,
    sessionId: routeId(deploymentId, index),
    execution: { name: routeId(deploymentId, index), generation: 1, transitions: 2, startedAtMs: T0 },
    stage: { enteredAtMs: T0 + 10_000, taskToken: `tok-${index}` },
    health: {
      ...initialHealth(T0 + 5_000),
      consecutiveSuccesses: 7,
      lastProbeAtMs: T0 + 60_000,
    },
    agentId: `agent-${index}`,
    port: 8000 + index,
    createdAtMs: T0,
    updatedAtMs: T0 + 60_000,
    ...over,
  };
}

/** A route whose replica has not started: no agent, no port. */
function withoutEndpoint(r: Route): Route {
  const { agentId: _agent, port: _port, ...rest } = r;
  return rest;
}

describe("the deployments pages, over DynamoDB Local", () => {
  let table: TestTable;
  let server: DashboardServer;
  let bare: DashboardServer;
  const historiesRead: string[] = [];

  beforeAll(async () => {
    table = await freshTable("cairn-dashboard-deployments");
    const items = new DeploymentItems(new DynamoRequests(table.client, table.tableName, undefined));
    // "web": READY, two healthy routes, one failing its probes, one terminated.
    await items.saveDeployment({
      deployment: { next: deployment("web"), expected: "absent" },
      routes: [
        { next: route("web", 0), expected: "absent" },
        {
          next: route("web", 1, {
            status: "UNHEALTHY",
            health: {
              ...initialHealth(T0 + 5_000),
              consecutiveFailures: 4,
              lastProbeAtMs: T0 + 61_000,
              lastMessage: `HTTP 500 ${SCRIPT}`,
            },
          }),
          expected: "absent",
        },
        {
          next: route("web", 2, { status: "TERMINATED", removeRequestedAtMs: T0 + 30_000 }),
          expected: "absent",
        },
        {
          next: withoutEndpoint(
            route("web", 3, { status: "PROVISIONING", health: initialHealth(T0 + 62_000) }),
          ),
          expected: "absent",
        },
        { next: route("web", 4), expected: "absent" },
      ],
      history: [
        {
          entity: "deployment",
          id: "web",
          handler: "CheckPendingDeployment",
          result: "SUCCESS",
          fromStatus: "PENDING",
          toStatus: "SCALING",
          atMs: T0 + 1_000,
        },
        {
          entity: "route",
          id: "web-r1",
          handler: "HealthCheckRoute",
          result: "FAILURE",
          fromStatus: "HEALTHY",
          toStatus: "UNHEALTHY",
          message: `probe failed: ${SCRIPT}`,
          atMs: T0 + 61_000,
        },
        {
          entity: "deployment",
          id: "web",
          handler: "ScalingDeployment",
          result: "SUCCESS",
          fromStatus: "SCALING",
          toStatus: "READY",
          atMs: T0 + 20_000,
        },
      ],
    });
    await items.saveDeployment({
      deployment: {
        next: deployment("old-api", {
          status: "DESTROYED",
          createdAtMs: T0 - 3_600_000,
          destroyRequest: { atMs: T0 - 60_000, reason: "no longer needed" },
          stage: { enteredAtMs: T0 - 30_000 },
        }),
        expected: "absent",
      },
    });
    await items.saveDeployment({
      deployment: {
        next: deployment("api", {
          status: "SCALING",
          nextRouteIndex: 0,
          failedStarts: { count: 2, lastAtMs: T0 + 60_000 },
        }),
        expected: "absent",
      },
    });
    const executions: Executions = {
      kind: "local",
      stateMachineArn: LOCAL_MACHINE,
      history: (arn): Promise<ExecutionEvent[] | undefined> => {
        historiesRead.push(arn);
        return Promise.resolve(
          arn.endsWith(":web")
            ? [{ id: 1, timestamp: T0, type: "ExecutionStarted" }]
            : [{ id: 1, timestamp: T0, type: "TaskStateEntered", state: "HealthCheckRoute" }],
        );
      },
    };
    const deps: DashboardDeps = {
      store: {} as DashboardStore,
      census: { countSessions: () => Promise.resolve({ count: 0, exact: true }) },
      deployments: items,
      cancel: () => Promise.resolve(),
      executions,
      where: "test",
      nowMs: () => T0 + 90_000,
    };
    server = await startDashboard(deps);
    // A connection that cannot read deployments (a test's hand-built deps).
    const { deployments: _none, ...withoutDeployments } = deps;
    bare = await startDashboard(withoutDeployments);
  });
  afterAll(async () => {
    await server?.close();
    await bare?.close();
    await table?.drop();
  });

  const get = async (s: DashboardServer, path: string) => {
    const res = await fetch(new URL(path, s.url));
    return { status: res.status, body: await res.text() };
  };
  /** A table row's cells as text, tags and spacing left out. */
  const cells = (body: string, rowId: string): string[] => {
    const row = new RegExp(`<tr id="${rowId}"[^>]*>([\\s\\S]*?)</tr>`).exec(body)?.[1] ?? "";
    return [...row.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) =>
      (m[1] ?? "")
        .replace(/<[^>]+>/g, " ")
        .replace(/\s+/g, " ")
        .trim(),
    );
  };

  test("given deployments, the list shows each by name: status, replicas live / asked, healthy routes, age", async () => {
    const { status, body } = await get(server, "/deployments");
    expect(status).toBe(200);
    expect(body).toContain('<a href="/deployments">Deployments</a>');
    const order = [...body.matchAll(/<tr id="deployment-([^"]+)"/g)].map((m) => m[1]);
    expect(order).toEqual(["api", "old-api", "web"]);
    // web: r0, r1, r3, r4 are replicas (r2 terminated); r0 and r4 healthy; 3 asked for: its
    // reason says why it is not serving every replica.
    expect(cells(body, "deployment-web")).toEqual([
      "web",
      "READY Unhealthy",
      "4 / 3",
      "2",
      "1 min 30 s",
      "2027-01-15 08:00:20Z",
    ]);
    expect(body).toMatch(/<tr id="deployment-web"[\s\S]*?class="badge deployment-ready" data-status="READY"/);
    expect(cells(body, "deployment-old-api").slice(0, 5)).toEqual([
      "old-api",
      "DESTROYED",
      "0 / 3",
      "0",
      "1 h 1 min",
    ]);
    expect(cells(body, "deployment-api").slice(1, 4)).toEqual(["SCALING Unhealthy", "0 / 3", "0"]);
    expect(body).toContain('href="/deployments/web"');
  });

  test("a deployment's page: status, spec, routes with sessions and health, history newest last", async () => {
    const { status, body } = await get(server, "/deployments/web");
    expect(status).toBe(200);
    expect(body).toContain("<h1>Deployment web</h1>");
    expect(body).toContain('class="badge deployment-ready" data-status="READY"');
    expect(body).toContain("3 asked for: 4 live, 2 healthy");
    expect(body).toContain("2 cpu, 512 MiB");
    expect(body).toContain("GET <code>/healthz</code> every 10 s (timeout 3 s)");
    expect(body.replace(/\s+/g, " ")).toContain("healthy after 1 passed, unhealthy after 4 failed in a row");
    expect(cells(body, "route-web-r0")).toEqual([
      "web-r0",
      "HEALTHY",
      "agent-0:8000",
      "web-r0",
      "2027-01-15 08:01:00Z",
      "7 / 0",
      "",
      "local execution history arn:aws:states:local:000000000000:execution:RouteLifecycle:web-r0",
    ]);
    expect(body).toContain('<a href="/sessions/web-r0">web-r0</a>');
    expect(cells(body, "route-web-r1").slice(1, 7)).toEqual([
      "UNHEALTHY",
      "agent-1:8001",
      "web-r1",
      "2027-01-15 08:01:01Z",
      "0 / 4",
      `HTTP 500 ${ESCAPED}`,
    ]);
    expect(body).toContain('class="badge route-unhealthy" data-status="UNHEALTHY"');
    expect(cells(body, "route-web-r2")[1]).toBe("TERMINATED removal requested 2027-01-15 08:00:30Z");
    expect(cells(body, "route-web-r3").slice(1, 5)).toEqual([
      "PROVISIONING",
      "not started",
      "web-r3",
      "none since 2027-01-15 08:01:02Z",
    ]);
    // History, oldest first (newest last), each with its entity.
    const history = body.slice(body.indexOf('class="deployment-history"'));
    const rows = [
      ...history.matchAll(/<tr>\s*<td>([^<]*)<\/td>\s*<td>([^<]*)<\/td>\s*<td>([^<]*)<\/td>/g),
    ].map((m) => `${m[1]} ${m[2]} ${m[3]}`);
    expect(rows).toEqual([
      "2027-01-15 08:00:01Z deployment web CheckPendingDeployment",
      "2027-01-15 08:00:20Z deployment web ScalingDeployment",
      "2027-01-15 08:01:01Z route web-r1 HealthCheckRoute",
    ]);
    expect(history).toContain("HEALTHY → UNHEALTHY");
  });

  test("a crash-looping deployment's page: its reason, its failed replicas and until when new ones are held back", async () => {
    const { status, body } = await get(server, "/deployments/api");
    expect(status).toBe(200);
    const text = body.replace(/\s+/g, " ");
    expect(text).toContain(
      '<dt>failed replicas</dt> <dd class="failed-starts"> 2 in a row, the latest 2027-01-15 08:01:00Z; new replicas held back until 2027-01-15 08:01:20Z </dd>',
    );
    expect(text).toContain(
      '<dt>reason</dt> <dd class="deployment-reason"><strong>Unhealthy</strong>: 0 of 3 replica(s) healthy; 2 replica(s) failed in a row</dd>',
    );
    const web = await get(server, "/deployments/web");
    expect(web.body).not.toContain("failed replicas");
  });

  test("what users and replicas wrote (command, probe and history messages) is rendered escaped", async () => {
    const { body } = await get(server, "/deployments/web");
    expect(body).not.toContain(SCRIPT);
    expect(body).not.toContain("<script>alert");
    expect(body).toContain(`<code>print(&#39;${ESCAPED}&#39;)</code>`);
    expect(body).toContain(`HTTP 500 ${ESCAPED}`);
    expect(body).toContain(`probe failed: ${ESCAPED}`);
    // The only scripts on the page are the dashboard's own.
    expect([...body.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual([
      '<script src="/static/dashboard.js" defer>',
    ]);
    const destroyed = await get(server, "/deployments/old-api");
    expect(destroyed.body).toContain("destroy requested 2027-01-15 07:59:00Z: no longer needed");
    expect(destroyed.body).toContain("No route.");
  });

  test("locally, the deployment's and each route's executions are read from their own state machines", async () => {
    const { body } = await get(server, "/deployments/web");
    expect(body).toContain('href="/deployments/web/execution"');
    expect(body).toContain('href="/deployments/web/routes/web-r1/execution"');
    const mine = await get(server, "/deployments/web/execution");
    expect(mine.status).toBe(200);
    expect(mine.body).toContain('Execution of <a href="/deployments/web">deployment web</a>');
    expect(mine.body).toContain("ExecutionStarted");
    const routes = await get(server, "/deployments/web/routes/web-r1/execution");
    expect(routes.status).toBe(200);
    expect(routes.body).toContain('<a href="/deployments/web#route-web-r1">route web-r1</a>');
    expect(routes.body).toContain("HealthCheckRoute");
    expect(historiesRead).toEqual([
      "arn:aws:states:local:000000000000:execution:DeploymentLifecycle:web",
      "arn:aws:states:local:000000000000:execution:RouteLifecycle:web-r1",
    ]);
  });

  test("an unknown deployment or route is a 404 page naming it; a bad id a 400", async () => {
    const unknown = await get(server, "/deployments/no-such");
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatch(/<h1>\s*Not found\s*<\/h1>/);
    expect(unknown.body).toContain("deployment no-such not found");
    const noRoute = await get(server, "/deployments/web/routes/web-r9/execution");
    expect(noRoute.status).toBe(404);
    expect(noRoute.body).toContain("deployment web has no route web-r9");
    const bad = await get(server, "/deployments/%3Cscript%3E");
    expect(bad.status).toBe(400);
    expect(bad.body).toContain("deployment: &quot;&lt;script&gt;&quot; is not an id");
  });

  test("a connection that cannot read deployments says so", async () => {
    const list = await get(bare, "/deployments");
    expect(list.status).toBe(200);
    expect(list.body).toContain("Deployments are not readable through this connection.");
    expect((await get(bare, "/deployments/web")).status).toBe(404);
  });
});

describe("where a deployment's and a route's executions are", () => {
  test("deployed: the console's page, on the stack's sibling state machines", () => {
    const uuid = "8b1e2c40-0a57-11f1-9d5e-0a1b2c3d4e5f";
    const arn = (name: string) =>
      `arn:aws:states:eu-west-1:123456789012:stateMachine:Cairn-Cairn-1A2B3C4D-${name}-${uuid}`;
    const machine = arn("SessionLifecycle");
    expect(familyExecutions({ kind: "console", stateMachineArn: machine }, "DeploymentLifecycle")).toEqual({
      kind: "console",
      stateMachineArn: arn("DeploymentLifecycle"),
    });
    expect(familyExecutions({ kind: "console", stateMachineArn: machine }, "RouteLifecycle")).toMatchObject({
      stateMachineArn: arn("RouteLifecycle"),
    });
    // The local runtime names each by its declared name alone.
    const local = "arn:aws:states:local:000000000000:stateMachine:SessionLifecycle";
    expect(familyExecutions({ kind: "console", stateMachineArn: local }, "RouteLifecycle")).toMatchObject({
      stateMachineArn: "arn:aws:states:local:000000000000:stateMachine:RouteLifecycle",
    });
  });

  test("a name that does not say where its siblings are is not guessed at", () => {
    const other = "arn:aws:states:eu-west-1:123456789012:stateMachine:MyLifecycle";
    expect(familyExecutions({ kind: "console", stateMachineArn: other }, "RouteLifecycle")).toEqual({
      kind: "none",
      why: `the RouteLifecycle state machine is not known here (${other} does not name it)`,
    });
    // A family name longer than Step Functions' 80 characters cannot be the sibling's.
    const long = `arn:aws:states:eu-west-1:123456789012:stateMachine:${"p".repeat(62)}-SessionLifecycle`;
    expect(familyExecutions({ kind: "console", stateMachineArn: long }, "DeploymentLifecycle").kind).toBe(
      "none",
    );
    expect(familyExecutions({ kind: "console", stateMachineArn: long }, "RouteLifecycle").kind).toBe(
      "console",
    );
    expect(familyExecutions({ kind: "none", why: "x" }, "RouteLifecycle")).toEqual({
      kind: "none",
      why: "x",
    });
  });
});
