/**
 * Deployments and routes as items. A deployment is `DEPLOYMENT#<id>` / `DEPLOYMENT`
 * with its routes beside it (`ROUTE#<index:4>`), so one Query reads a deployment whole; its and
 * its routes' history records live in their own partition (`DEPLOYMENT_HISTORY#<id>`), so that
 * Query never grows with history. Each entity is written whole, guarded by the status and
 * version it was planned from; a change of several items is one transaction.
 */
import { parseDeploymentSpec } from "../../core/deployments/spec.ts";
import type {
  Deployment,
  DeploymentWithRoutes,
  FamilyExecution,
  FamilyHistoryRecord,
  FamilyLeaving,
  FamilyStage,
  Maintained,
  Route,
} from "../../core/deployments/model.ts";
import type { RouteHealth } from "../../core/deployments/health.ts";
import {
  DEPLOYMENT_STATUSES,
  ROUTE_STATUSES,
  type DeploymentResult,
  type DeploymentStatus,
  type RouteResult,
  type RouteStatus,
} from "../../core/deployments/tables.ts";
import type { DeploymentChange, DeploymentRepository, Saved } from "../../core/ports/deployments.ts";
import { ConflictError, InvalidStoreRequestError } from "../../core/ports/errors.ts";
import { itemAbsent, sessionAt } from "./conditions.ts";
import type { DynamoRequests } from "./dynamo-requests.ts";
import { Fields, fromItem, toItem, type Item } from "./item-codec.ts";
import {
  DEPLOYMENT_HISTORY_SK_PREFIX,
  DEPLOYMENT_SK,
  deploymentHistoryPk,
  deploymentHistorySk,
  deploymentPk,
  DEPLOYMENTS_PK,
  ROUTE_SK_PREFIX,
  routeSk,
} from "./keys.ts";
import {
  guarded,
  MAX_TRANSACTION_ITEMS,
  type ItemRole,
  type PlannedTransaction,
} from "./transaction-plan.ts";
import { requireId, requireTime } from "./validation.ts";

const ItemKind = { DEPLOYMENT: "DEPLOYMENT", ROUTE: "ROUTE", HISTORY: "DEPLOYMENT_HISTORY" } as const;

export class DeploymentItems implements DeploymentRepository {
  readonly #requests: DynamoRequests;

  constructor(requests: DynamoRequests) {
    this.#requests = requests;
  }

  async saveDeployment(change: DeploymentChange): Promise<void> {
    const plan = this.#plan(change);
    if (plan.items.length === 0) return;
    const failures = await this.#requests.transact("saveDeployment", plan);
    const failed = failures?.[0];
    if (failed === undefined) return;
    const { role, reason } = failed;
    if (role.kind !== "deployment" && role.kind !== "route") {
      throw new Error(`saveDeployment: a ${role.kind} item's guard failed, which none has`);
    }
    const old = reason.Item ? fromItem(reason.Item) : undefined;
    const found =
      old === undefined
        ? { status: "(none)", version: -1 }
        : { status: String(old["status"]), version: Number(old["version"]) };
    const expected = role.expected === "absent" ? { status: "(none)", version: -1 } : role.expected;
    throw new ConflictError(
      role.id,
      expected,
      found,
      role.expected === "absent" ? "it exists already" : undefined,
      role.kind,
    );
  }

  async getDeployment(id: string): Promise<DeploymentWithRoutes | undefined> {
    requireId("id", id);
    const items = await this.#requests.queryAll("getDeployment", {
      TableName: this.#requests.tableName,
      KeyConditionExpression: "#pk = :pk",
      ExpressionAttributeNames: { "#pk": "pk" },
      ExpressionAttributeValues: { ":pk": { S: deploymentPk(id) } },
      ConsistentRead: true,
    });
    const deployment = items.find((i) => i["sk"]?.S === DEPLOYMENT_SK);
    if (!deployment) return undefined;
    return {
      deployment: deploymentFromItem(deployment),
      routes: items.filter((i) => i["sk"]?.S?.startsWith(ROUTE_SK_PREFIX)).map(routeFromItem),
    };
  }

  async listDeployments(): Promise<Deployment[]> {
    return (
      await this.#requests.readRoster("listDeployments", DEPLOYMENTS_PK, {
        pkPrefix: deploymentPk(""),
        sk: DEPLOYMENT_SK,
      })
    )
      .map(deploymentFromItem)
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  async deploymentHistory(id: string): Promise<FamilyHistoryRecord[]> {
    requireId("id", id);
    const items = await this.#requests.queryAll("deploymentHistory", {
      TableName: this.#requests.tableName,
      KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :at)",
      ExpressionAttributeNames: { "#pk": "pk", "#sk": "sk" },
      ExpressionAttributeValues: {
        ":pk": { S: deploymentHistoryPk(id) },
        ":at": { S: DEPLOYMENT_HISTORY_SK_PREFIX },
      },
    });
    return items.map(historyFromItem);
  }

  #plan(change: DeploymentChange): PlannedTransaction {
    const items: PlannedTransaction["items"] = [];
    const roles: ItemRole[] = [];
    const table = this.#requests.tableName;
    const put = (item: Item, saved: Saved<unknown>, role: ItemRole) => {
      const condition = saved.expected === "absent" ? itemAbsent : sessionAt(saved.expected);
      items.push({ Put: { TableName: table, Item: item, ...guarded(condition) } });
      roles.push(role);
    };
    const version = (saved: Saved<unknown>) => (saved.expected === "absent" ? 0 : saved.expected.version + 1);
    const deploymentId = change.deployment?.next.id ?? change.routes?.[0]?.next.deploymentId;
    if (change.deployment) {
      const d = change.deployment;
      validateDeployment(d.next);
      put(deploymentItem({ ...d.next, version: version(d) }), d, {
        kind: "deployment",
        id: d.next.id,
        expected: d.expected,
      });
    }
    for (const r of change.routes ?? []) {
      if (r.next.deploymentId !== deploymentId) {
        throw new InvalidStoreRequestError(
          "routes",
          `route ${r.next.id} belongs to ${r.next.deploymentId}, not ${String(deploymentId)}: a change is one deployment's`,
        );
      }
      validateRoute(r.next);
      put(routeItem({ ...r.next, version: version(r) }), r, {
        kind: "route",
        id: r.next.id,
        expected: r.expected,
      });
    }
    const versions = new Map<string, number>([
      ...(change.deployment ? [[change.deployment.next.id, version(change.deployment)] as const] : []),
      ...(change.routes ?? []).map((r) => [r.next.id, version(r)] as const),
    ]);
    const seqs = new Map<string, number>();
    for (const record of change.history ?? []) {
      if (deploymentId === undefined) {
        throw new InvalidStoreRequestError("history", "records must come with the entity they describe");
      }
      requireTime("history.atMs", record.atMs);
      const at = versions.get(record.id);
      if (at === undefined) {
        throw new InvalidStoreRequestError("history", `${record.id} is not written by this change`);
      }
      const seq = seqs.get(record.id) ?? 0;
      seqs.set(record.id, seq + 1);
      items.push({
        Put: { TableName: table, Item: historyItem(deploymentId, record, at, seq) },
      });
      roles.push({ kind: "deploymentHistory" });
    }
    if (items.length > MAX_TRANSACTION_ITEMS) {
      throw new InvalidStoreRequestError(
        "change",
        `${items.length} items in one write; at most ${MAX_TRANSACTION_ITEMS} (DynamoDB's transaction limit)`,
      );
    }
    return { items, roles };
  }
}

function validateDeployment(d: Deployment): void {
  requireId("deployment.id", d.id);
  requireTime("deployment.createdAtMs", d.createdAtMs);
  requireTime("deployment.updatedAtMs", d.updatedAtMs);
}

function validateRoute(r: Route): void {
  requireId("route.id", r.id);
  requireId("route.sessionId", r.sessionId);
  requireTime("route.updatedAtMs", r.updatedAtMs);
}

function deploymentItem(d: Deployment): Item {
  return toItem({
    pk: deploymentPk(d.id),
    sk: DEPLOYMENT_SK,
    type: ItemKind.DEPLOYMENT,
    // The roster of deployments (listings index), by id.
    gsi3pk: DEPLOYMENTS_PK,
    gsi3sk: d.id,
    ...d,
  });
}

function deploymentFromItem(item: Item): Deployment {
  const r = new Fields(fromItem(item), "deployment");
  const status = r.string("status");
  if (!DEPLOYMENT_STATUSES.includes(status as DeploymentStatus)) r.fail("status", "a deployment status");
  return {
    id: r.string("id"),
    spec: parseDeploymentSpec(r.object("spec")),
    status: status as DeploymentStatus,
    version: r.number("version"),
    execution: executionFrom(new Fields(r.object("execution"), "deployment.execution")),
    stage: stageFrom(new Fields(r.object("stage"), "deployment.stage")),
    nextRouteIndex: r.number("nextRouteIndex"),
    ...optionalFamilyFields(r),
    ...destroyRequestFrom(r),
    ...failedStartsFrom(r),
    createdAtMs: r.number("createdAtMs"),
    updatedAtMs: r.number("updatedAtMs"),
  };
}

function routeItem(route: Route): Item {
  return toItem({
    pk: deploymentPk(route.deploymentId),
    sk: routeSk(route.index),
    type: ItemKind.ROUTE,
    ...route,
  });
}

function routeFromItem(item: Item): Route {
  const r = new Fields(fromItem(item), "route");
  const status = r.string("status");
  if (!ROUTE_STATUSES.includes(status as RouteStatus)) r.fail("status", "a route status");
  const agentId = r.optString("agentId");
  const port = r.optNumber("port");
  const removeRequestedAtMs = r.optNumber("removeRequestedAtMs");
  return {
    id: r.string("id"),
    deploymentId: r.string("deploymentId"),
    index: r.number("index"),
    status: status as RouteStatus,
    version: r.number("version"),
    sessionId: r.string("sessionId"),
    execution: executionFrom(new Fields(r.object("execution"), "route.execution")),
    stage: stageFrom(new Fields(r.object("stage"), "route.stage")),
    health: healthFrom(new Fields(r.object("health"), "route.health")),
    ...(agentId !== undefined ? { agentId } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(removeRequestedAtMs !== undefined ? { removeRequestedAtMs } : {}),
    ...optionalFamilyFields(r),
    createdAtMs: r.number("createdAtMs"),
    updatedAtMs: r.number("updatedAtMs"),
  };
}

function executionFrom(r: Fields): FamilyExecution {
  return {
    name: r.string("name"),
    generation: r.number("generation"),
    transitions: r.number("transitions"),
    startedAtMs: r.number("startedAtMs"),
  };
}

function stageFrom(r: Fields): FamilyStage {
  const taskToken = r.optString("taskToken");
  const leaving = r.optObject("leaving");
  return {
    enteredAtMs: r.number("enteredAtMs"),
    ...(taskToken !== undefined ? { taskToken } : {}),
    ...(leaving !== undefined ? { leaving: leavingFrom(new Fields(leaving, "stage.leaving")) } : {}),
  };
}

function leavingFrom(r: Fields): FamilyLeaving {
  const t = new Fields(r.object("transition"), "stage.leaving.transition");
  const message = t.optString("message");
  const error = r.optString("error");
  return {
    transition: {
      from: t.string("from"),
      to: t.string("to"),
      result: t.string("result"),
      handler: t.string("handler"),
      ...(message !== undefined ? { message } : {}),
    },
    ...(error !== undefined ? { error } : {}),
  };
}

function optionalFamilyFields(r: Fields): { maintained?: Maintained } {
  const maintained = r.optObject("maintained");
  if (maintained === undefined) return {};
  const m = new Fields(maintained, "maintained");
  return { maintained: Object.fromEntries(Object.keys(maintained).map((k) => [k, m.string(k)])) };
}

function failedStartsFrom(r: Fields): Pick<Deployment, "failedStarts"> {
  const failed = r.optObject("failedStarts");
  if (failed === undefined) return {};
  const f = new Fields(failed, "deployment.failedStarts");
  const lastReason = f.optString("lastReason");
  return {
    failedStarts: {
      count: f.number("count"),
      lastAtMs: f.number("lastAtMs"),
      ...(lastReason !== undefined ? { lastReason } : {}),
    },
  };
}

function destroyRequestFrom(r: Fields): Pick<Deployment, "destroyRequest"> {
  const request = r.optObject("destroyRequest");
  if (request === undefined) return {};
  const d = new Fields(request, "deployment.destroyRequest");
  return { destroyRequest: { atMs: d.number("atMs"), reason: d.string("reason") } };
}

function healthFrom(r: Fields): RouteHealth {
  const lastProbeAtMs = r.optNumber("lastProbeAtMs");
  const lastMessage = r.optString("lastMessage");
  return {
    consecutiveSuccesses: r.number("consecutiveSuccesses"),
    consecutiveFailures: r.number("consecutiveFailures"),
    ...(lastProbeAtMs !== undefined ? { lastProbeAtMs } : {}),
    ...(lastMessage !== undefined ? { lastMessage } : {}),
    checkedSinceMs: r.number("checkedSinceMs"),
  };
}

function historyItem(deploymentId: string, record: FamilyHistoryRecord, version: number, seq: number): Item {
  return toItem({
    pk: deploymentHistoryPk(deploymentId),
    sk: deploymentHistorySk(record.atMs, record.id, version, seq),
    type: ItemKind.HISTORY,
    ...record,
  });
}

function historyFromItem(item: Item): FamilyHistoryRecord {
  const r = new Fields(fromItem(item), "deployment history");
  const entity = r.string("entity");
  if (entity !== "deployment" && entity !== "route") return r.fail("entity", "deployment or route");
  const toStatus = r.optString("toStatus");
  const message = r.optString("message");
  return {
    entity,
    id: r.string("id"),
    handler: r.string("handler"),
    result: r.string("result") as DeploymentResult | RouteResult,
    fromStatus: r.string("fromStatus") as DeploymentStatus | RouteStatus,
    ...(toStatus !== undefined ? { toStatus: toStatus as DeploymentStatus | RouteStatus } : {}),
    ...(message !== undefined ? { message } : {}),
    atMs: r.number("atMs"),
  };
}
