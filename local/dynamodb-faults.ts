/**
 * DynamoDB's faults under load, which DynamoDB Local never produces (it does not throttle, its
 * transactions never conflict, and its BatchGetItem answers every key), switched on by rule so
 * that the functions meet them end to end: when a rule is given, the functions reach DynamoDB
 * Local through this proxy, which answers chosen requests as DynamoDB would:
 *
 * - `throttle`: HTTP 400 `ProvisionedThroughputExceededException`; the request does not reach the
 *   table (the API reference: the request rate is too high; the SDKs retry it).
 * - `transaction-conflict`: a TransactWriteItems is cancelled, `TransactionCanceledException`
 *   with the reason `TransactionConflict` for its first item and `None` for the others; nothing
 *   is written (another transaction or a write was under way on the item).
 * - `unprocessed-keys`: a BatchGetItem of two keys or more reads only the first half of them and
 *   answers the rest in `UnprocessedKeys` (DynamoDB sheds part of a request rather than fail it;
 *   the caller must ask again for them).
 * - `lost-response`: the request runs, then its answer is lost (HTTP 500 InternalServerError, as
 *   DynamoDB answers a request whose outcome it cannot tell): the SDK sends it again, and the
 *   retry meets the write already done (a conditional write finds its condition false).
 * - `index-lag`: a Query on a global secondary index answers as the index stood `lagMs`
 *   milliseconds earlier, for as long as the rule is in force. DynamoDB updates a GSI
 *   asynchronously (its developer guide: eventually consistent, usually within a fraction of a
 *   second, with no bound); DynamoDB Local updates it at once. After each write it passes
 *   (PutItem, UpdateItem, DeleteItem, TransactWriteItems, BatchWriteItem) the proxy reads the
 *   items written, consistently, and notes when each index's keys of an item took their values;
 *   it leaves out of a GSI Query's answer (its `Items` and `Count`) every item whose keys in that
 *   index changed less than `lagMs` ago: a new entry not yet visible. An update that leaves an
 *   index's keys as they were leaves the entry visible (an item the proxy has not seen yet is
 *   read before its write too, so its entries from before the rule count as old). It does not bring back an entry the item
 *   no longer has (that would mean matching the old keys against the Query's key condition), so
 *   a moved entry is missed rather than seen at its old place.
 *
 * Each rule names the operation it may fire on (default: any it applies to) and fires `count`
 * times (default 1) after letting `skip` matching requests through (default 0); `index-lag`
 * takes `lagMs` instead and holds until the rules are replaced. `npm start` reads the rules
 * from `CAIRN_DYNAMODB_FAULTS`:
 *
 *   CAIRN_DYNAMODB_FAULTS='{"rules":[{"fault":"throttle","operation":"TransactWriteItems","count":3}]}'
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { randomUUID } from "node:crypto";
import { isPlainObject, signRequest } from "./aws-json/index.ts";
import { readBody } from "./aws-json/http-body.ts";
import { listenOnLoopback } from "./loopback-server.ts";
import { TABLE_SCHEMA } from "../functions/topology/table-schema.ts";

export const DynamoDbFault = {
  Throttle: "throttle",
  TransactionConflict: "transaction-conflict",
  UnprocessedKeys: "unprocessed-keys",
  LostResponse: "lost-response",
  IndexLag: "index-lag",
} as const;
export type DynamoDbFault = (typeof DynamoDbFault)[keyof typeof DynamoDbFault];

export interface DynamoDbFaultRule {
  readonly fault: DynamoDbFault;
  /** Only requests of this operation (`TransactWriteItems`, `UpdateItem`, …). @default any */
  readonly operation?: string;
  /** @default 1 */
  readonly count?: number;
  /** Matching requests let through before the rule fires. @default 0 */
  readonly skip?: number;
  /** `index-lag` only: how far behind the table a GSI Query answers. */
  readonly lagMs?: number;
}

export interface DynamoDbFaults {
  readonly rules: readonly DynamoDbFaultRule[];
}

export class DynamoDbFaultConfigError extends Error {
  override readonly name = "DynamoDbFaultConfigError";
  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`);
  }
}

/** The operations each fault can answer. */
const APPLIES_TO: Readonly<Record<DynamoDbFault, (operation: string) => boolean>> = {
  throttle: () => true,
  "transaction-conflict": (op) => op === "TransactWriteItems",
  "unprocessed-keys": (op) => op === "BatchGetItem",
  "lost-response": () => true,
  "index-lag": (op) => op === "Query",
};

/** The longest index lag a rule may ask for: far beyond any DynamoDB shows, short of stalling a run. */
const MAX_LAG_MS = 60_000;

/** Checks every field of every rule; the error names the field and the reason. */
export function parseDynamoDbFaults(value: unknown, field = "dynamoDbFaults"): DynamoDbFaults {
  if (!isPlainObject(value)) throw new DynamoDbFaultConfigError(field, "must be an object { rules }");
  for (const key of Object.keys(value)) {
    if (key !== "rules") throw new DynamoDbFaultConfigError(`${field}.${key}`, "is not a known field");
  }
  const rules = value["rules"];
  if (!Array.isArray(rules))
    throw new DynamoDbFaultConfigError(`${field}.rules`, "must be an array of rules");
  return {
    rules: (rules as unknown[]).map((rule, i): DynamoDbFaultRule => {
      const at = `${field}.rules[${i}]`;
      if (!isPlainObject(rule)) throw new DynamoDbFaultConfigError(at, "must be an object");
      for (const key of Object.keys(rule)) {
        if (!["fault", "operation", "count", "skip", "lagMs"].includes(key)) {
          throw new DynamoDbFaultConfigError(`${at}.${key}`, "is not a known field");
        }
      }
      const fault = rule["fault"];
      const kinds: readonly string[] = Object.values(DynamoDbFault);
      if (typeof fault !== "string" || !kinds.includes(fault)) {
        throw new DynamoDbFaultConfigError(
          `${at}.fault`,
          `must be one of ${kinds.join(", ")}, got ${JSON.stringify(fault)}`,
        );
      }
      const operation = rule["operation"];
      if (operation !== undefined && (typeof operation !== "string" || !/^[A-Z][A-Za-z]+$/.test(operation))) {
        throw new DynamoDbFaultConfigError(
          `${at}.operation`,
          `must be a DynamoDB operation name, got ${JSON.stringify(operation)}`,
        );
      }
      if (typeof operation === "string" && !APPLIES_TO[fault as DynamoDbFault](operation)) {
        throw new DynamoDbFaultConfigError(`${at}.operation`, `${fault} cannot answer ${operation}`);
      }
      for (const [key, min] of [
        ["count", 1],
        ["skip", 0],
      ] as const) {
        const n = rule[key];
        if (n !== undefined && (typeof n !== "number" || !Number.isInteger(n) || n < min)) {
          throw new DynamoDbFaultConfigError(
            `${at}.${key}`,
            `must be an integer ≥ ${min}, got ${JSON.stringify(n)}`,
          );
        }
      }
      const lagMs = rule["lagMs"];
      if (fault === DynamoDbFault.IndexLag) {
        for (const key of ["count", "skip"]) {
          if (rule[key] !== undefined) {
            throw new DynamoDbFaultConfigError(
              `${at}.${key}`,
              "index-lag holds while its rule is in force; it takes lagMs, not count or skip",
            );
          }
        }
        if (typeof lagMs !== "number" || !Number.isInteger(lagMs) || lagMs < 1 || lagMs > MAX_LAG_MS) {
          throw new DynamoDbFaultConfigError(
            `${at}.lagMs`,
            `index-lag needs an integer number of milliseconds from 1 to ${MAX_LAG_MS}, got ${JSON.stringify(lagMs)}`,
          );
        }
      } else if (lagMs !== undefined) {
        throw new DynamoDbFaultConfigError(`${at}.lagMs`, `only index-lag takes lagMs, not ${fault}`);
      }
      return rule as unknown as DynamoDbFaultRule;
    }),
  };
}

export function dynamoDbFaultsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): DynamoDbFaults | undefined {
  const text = env["CAIRN_DYNAMODB_FAULTS"];
  if (text === undefined || text.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new DynamoDbFaultConfigError("CAIRN_DYNAMODB_FAULTS", `is not JSON: ${(error as Error).message}`);
  }
  return parseDynamoDbFaults(value, "CAIRN_DYNAMODB_FAULTS");
}

/** The switch: the rules in force, and what fired. */
export class DynamoDbFaultSwitch {
  #rules: { rule: DynamoDbFaultRule; skip: number; left: number }[] = [];
  readonly #fired: { fault: DynamoDbFault; operation: string }[] = [];

  constructor(faults: DynamoDbFaults = { rules: [] }) {
    this.set(faults);
  }

  /** Replaces the rules in force (what fired so far stays counted). */
  set(faults: DynamoDbFaults): void {
    this.#rules = parseDynamoDbFaults(faults).rules.map((rule) => ({
      rule,
      skip: rule.skip ?? 0,
      left: rule.count ?? 1,
    }));
  }

  /** Every fault that fired, in order. */
  fired(): readonly { fault: DynamoDbFault; operation: string }[] {
    return [...this.#fired];
  }

  /** How far behind the table GSI Queries answer now (the longest `index-lag` in force), or 0. */
  indexLagMs(): number {
    return Math.max(0, ...this.#rules.map((r) => r.rule.lagMs ?? 0));
  }

  /** Counts a GSI Query that the index lag left entries out of. */
  lagged(operation: string): void {
    this.#fired.push({ fault: DynamoDbFault.IndexLag, operation });
  }

  /** The fault to answer `operation` with, if a rule fires now (used up as it fires). */
  take(operation: string, canShed: boolean): DynamoDbFault | undefined {
    for (const r of this.#rules) {
      const { fault } = r.rule;
      if (fault === DynamoDbFault.IndexLag) continue;
      if (r.left === 0 || !APPLIES_TO[fault](operation)) continue;
      if (r.rule.operation !== undefined && r.rule.operation !== operation) continue;
      if (fault === DynamoDbFault.UnprocessedKeys && !canShed) continue;
      if (r.skip > 0) {
        r.skip--;
        continue;
      }
      r.left--;
      this.#fired.push({ fault, operation });
      return fault;
    }
    return undefined;
  }
}

export interface DynamoDbFaultProxy {
  readonly endpoint: string;
  readonly faults: DynamoDbFaultSwitch;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;
const TARGET = /^DynamoDB_20120810\.([A-Za-z]+)$/;

/** A proxy in front of DynamoDB Local that answers as the switch says; requests are signed again with `upstreamCredential`. */
export async function startDynamoDbFaultProxy(options: {
  readonly upstream: string;
  readonly upstreamCredential: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly region: string;
  readonly faults?: DynamoDbFaults;
  /** The clock the index lag is measured by, in milliseconds. @default Date.now */
  readonly now?: () => number;
}): Promise<DynamoDbFaultProxy> {
  const upstream = new URL(options.upstream);
  const faults = new DynamoDbFaultSwitch(options.faults);
  const changes = new IndexChanges(options.now ?? Date.now);

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = (await readBody(request, MAX_BODY_BYTES)) ?? Buffer.alloc(0);
    const target = String(request.headers["x-amz-target"] ?? "");
    const operation = TARGET.exec(target)?.[1] ?? "";
    let input: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(body.toString("utf8") || "{}");
      if (isPlainObject(parsed)) input = parsed;
    } catch {
      // DynamoDB Local answers what it cannot parse.
    }
    const shed = sheddable(input);
    const lagMs = faults.indexLagMs();
    if (lagMs > 0 && operation === "Query" && typeof input["IndexName"] === "string") {
      return laggedQuery(request, response, input, lagMs);
    }
    if (lagMs > 0) await noteWrites(operation, input, true);
    switch (faults.take(operation, shed !== undefined)) {
      case DynamoDbFault.Throttle:
        return answerError(
          response,
          "ProvisionedThroughputExceededException",
          "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
        );
      case DynamoDbFault.TransactionConflict: {
        const items = Array.isArray(input["TransactItems"]) ? input["TransactItems"].length : 1;
        const reasons = Array.from({ length: Math.max(1, items) }, (_, i) =>
          i === 0
            ? { Code: "TransactionConflict", Message: "Transaction is ongoing for the item" }
            : { Code: "None" },
        );
        return answerError(
          response,
          "TransactionCanceledException",
          `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(", ")}]`,
          { CancellationReasons: reasons },
        );
      }
      case DynamoDbFault.UnprocessedKeys: {
        const { table, kept, withheld } = shed!;
        const request0 = (input["RequestItems"] as Record<string, Record<string, unknown>>)[table]!;
        const partial = {
          ...input,
          RequestItems: { ...(input["RequestItems"] as object), [table]: { ...request0, Keys: kept } },
        };
        const answer = await forward(request, Buffer.from(JSON.stringify(partial)));
        if (answer.status !== 200) return send(response, answer.status, answer.headers, answer.body);
        const out = JSON.parse(answer.body.toString("utf8")) as Record<string, unknown>;
        const unprocessed = isPlainObject(out["UnprocessedKeys"]) ? out["UnprocessedKeys"] : {};
        out["UnprocessedKeys"] = { ...unprocessed, [table]: { ...request0, Keys: withheld } };
        return send(response, 200, answer.headers, Buffer.from(JSON.stringify(out)));
      }
      case DynamoDbFault.LostResponse: {
        // The request reaches the table; what it answered does not reach the caller.
        const answer = await forward(request, body);
        if (answer.status === 200 && lagMs > 0) await noteWrites(operation, input);
        return answerError(
          response,
          "InternalServerError",
          "Internal server error (the response was lost by the fault switch)",
          {},
          500,
        );
      }
      default: {
        const answer = await forward(request, body);
        if (answer.status === 200 && lagMs > 0) await noteWrites(operation, input);
        return send(response, answer.status, answer.headers, answer.body);
      }
    }
  }

  /**
   * A GSI Query as the index stood `lagMs` ago: the items written since are left out. A
   * `Select: COUNT` Query is asked for the entries (an index's entries carry the table's key)
   * and answered with the count of those kept.
   */
  async function laggedQuery(
    request: IncomingMessage,
    response: ServerResponse,
    input: Record<string, unknown>,
    lagMs: number,
  ): Promise<void> {
    const countOnly = input["Select"] === "COUNT";
    const asked = { ...input };
    if (countOnly) delete asked["Select"];
    const answer = await forward(request, Buffer.from(JSON.stringify(asked)));
    if (answer.status !== 200) return send(response, answer.status, answer.headers, answer.body);
    const out = JSON.parse(answer.body.toString("utf8")) as Record<string, unknown>;
    const items = Array.isArray(out["Items"]) ? (out["Items"] as unknown[]) : [];
    const table = String(input["TableName"]);
    const index = String(input["IndexName"]);
    const kept = items.filter((item) => !changes.isRecent(table, index, item, lagMs));
    if (kept.length < items.length) faults.lagged("Query");
    out["Count"] = kept.length;
    if (countOnly) delete out["Items"];
    else out["Items"] = kept;
    return send(response, 200, answer.headers, Buffer.from(JSON.stringify(out)));
  }

  /**
   * Reads each item a write named, consistently, and notes its index keys: after the write, as
   * they stand from now on; before it (`before`), for an item the proxy knows nothing of yet, as
   * they stood since long ago (the item's entries were there before the rule came in force).
   */
  async function noteWrites(
    operation: string,
    input: Record<string, unknown>,
    before = false,
  ): Promise<void> {
    await Promise.all(
      writtenKeys(operation, input).map(async ([table, written]) => {
        const key = tableKey(written);
        if (key === undefined || (before && changes.knows(table, key))) return;
        const answer = await forward(
          {
            method: "POST",
            url: "/",
            headers: {
              "content-type": "application/x-amz-json-1.0",
              "x-amz-target": "DynamoDB_20120810.GetItem",
            },
          },
          Buffer.from(JSON.stringify({ TableName: table, Key: key, ConsistentRead: true })),
        );
        if (answer.status !== 200) return;
        const out = JSON.parse(answer.body.toString("utf8")) as Record<string, unknown>;
        const item = isPlainObject(out["Item"]) ? out["Item"] : undefined;
        changes.note(table, key, item, before ? -Infinity : undefined);
      }),
    );
  }

  /** Passes what DynamoDB reads of a request on, signed again (a rewritten body needs it). */
  async function forward(
    request: Pick<IncomingMessage, "method" | "url" | "headers">,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    const method = request.method ?? "POST";
    const path = request.url ?? "/";
    const headers: Record<string, string> = { "content-length": String(body.length) };
    for (const name of ["content-type", "x-amz-target"]) {
      const value = request.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    const signed = await signRequest(
      { url: new URL(path, upstream), method, headers, body },
      options.upstreamCredential,
      options.region,
      "dynamodb",
    );
    return new Promise((resolve, reject) => {
      const out = httpRequest(
        { hostname: upstream.hostname, port: upstream.port, path, method, headers: signed },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => chunks.push(chunk));
          answer.on("end", () => {
            const kept: Record<string, string> = {};
            for (const name of ["content-type", "x-amzn-requestid"]) {
              const value = answer.headers[name];
              if (typeof value === "string") kept[name] = value;
            }
            resolve({ status: answer.statusCode ?? 502, headers: kept, body: Buffer.concat(chunks) });
          });
          answer.on("error", reject);
        },
      );
      out.on("error", reject);
      out.end(body);
    });
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) return void response.destroy();
      answerError(
        response,
        "InternalServerError",
        error instanceof Error ? error.message : String(error),
        {},
        500,
      );
    });
  });
  const listening = await listenOnLoopback(server);
  return { endpoint: listening.endpoint, faults, close: () => listening.close() };
}

/**
 * For each item written through the proxy, each index's keys as the item last had them and when
 * they took those values: an index entry is as new as that change (an update that leaves an
 * index's keys as they were leaves its entry in place, as on DynamoDB).
 */
class IndexChanges {
  readonly #now: () => number;
  readonly #items = new Map<string, Map<string, { keys: string; at: number }>>();

  constructor(now: () => number) {
    this.#now = now;
  }

  knows(table: string, key: Record<string, unknown>): boolean {
    return this.#items.has(itemId(table, key)!);
  }

  note(
    table: string,
    key: Record<string, unknown>,
    item: Record<string, unknown> | undefined,
    now = this.#now(),
  ): void {
    const id = itemId(table, key)!;
    let indexes = this.#items.get(id);
    for (const g of TABLE_SCHEMA.globalSecondaryIndexes) {
      const values = [item?.[g.partitionKey.name], item?.[g.sortKey.name]];
      if (indexes === undefined && values.every((v) => v === undefined)) continue;
      indexes ??= new Map();
      const keys = JSON.stringify(values);
      if (indexes.get(g.indexName)?.keys !== keys) indexes.set(g.indexName, { keys, at: now });
    }
    if (indexes !== undefined) this.#items.set(id, indexes);
  }

  isRecent(table: string, index: string, item: unknown, lagMs: number): boolean {
    const id = itemId(table, item);
    const at = id === undefined ? undefined : this.#items.get(id)?.get(index)?.at;
    return at !== undefined && this.#now() - at < lagMs;
  }
}

/** The items a write request names, by table: a Put's item, an Update's or a Delete's key. */
function writtenKeys(operation: string, input: Record<string, unknown>): [string, unknown][] {
  const table = String(input["TableName"]);
  switch (operation) {
    case "PutItem":
      return [[table, input["Item"]]];
    case "UpdateItem":
    case "DeleteItem":
      return [[table, input["Key"]]];
    case "TransactWriteItems": {
      const items = Array.isArray(input["TransactItems"]) ? (input["TransactItems"] as unknown[]) : [];
      return items.flatMap((entry): [string, unknown][] => {
        if (!isPlainObject(entry)) return [];
        const put = entry["Put"];
        if (isPlainObject(put)) return [[String(put["TableName"]), put["Item"]]];
        const change = isPlainObject(entry["Update"]) ? entry["Update"] : entry["Delete"];
        return isPlainObject(change) ? [[String(change["TableName"]), change["Key"]]] : [];
      });
    }
    case "BatchWriteItem": {
      const requests = isPlainObject(input["RequestItems"]) ? input["RequestItems"] : {};
      return Object.entries(requests).flatMap(([name, list]) =>
        (Array.isArray(list) ? (list as unknown[]) : []).flatMap((r): [string, unknown][] => {
          if (!isPlainObject(r)) return [];
          if (isPlainObject(r["PutRequest"])) return [[name, r["PutRequest"]["Item"]]];
          if (isPlainObject(r["DeleteRequest"])) return [[name, r["DeleteRequest"]["Key"]]];
          return [];
        }),
      );
    }
    default:
      return [];
  }
}

/** An item's primary key, or undefined when it is not all there. */
function tableKey(item: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(item)) return undefined;
  const { name: pk } = TABLE_SCHEMA.partitionKey;
  const { name: sk } = TABLE_SCHEMA.sortKey;
  if (item[pk] === undefined || item[sk] === undefined) return undefined;
  return { [pk]: item[pk], [sk]: item[sk] };
}

/** An item's table and primary key as one string, or undefined when the key is not all there. */
function itemId(table: string, item: unknown): string | undefined {
  if (!isPlainObject(item)) return undefined;
  const pk = item[TABLE_SCHEMA.partitionKey.name];
  const sk = item[TABLE_SCHEMA.sortKey.name];
  if (pk === undefined || sk === undefined) return undefined;
  return JSON.stringify([table, pk, sk]);
}

/** A BatchGetItem's first table, its keys split in two halves, when it has two keys or more. */
function sheddable(
  input: Record<string, unknown>,
): { table: string; kept: unknown[]; withheld: unknown[] } | undefined {
  const items = input["RequestItems"];
  if (!isPlainObject(items)) return undefined;
  const [table] = Object.keys(items);
  const request = table === undefined ? undefined : items[table];
  const keys = isPlainObject(request) && Array.isArray(request["Keys"]) ? (request["Keys"] as unknown[]) : [];
  if (table === undefined || keys.length < 2) return undefined;
  const half = Math.ceil(keys.length / 2);
  return { table, kept: keys.slice(0, half), withheld: keys.slice(half) };
}

function answerError(
  response: ServerResponse,
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
  status = 400,
): void {
  const body = Buffer.from(
    JSON.stringify({
      __type: `com.amazonaws.dynamodb.v20120810#${code}`,
      message,
      Message: message,
      ...extra,
    }),
  );
  send(response, status, { "content-type": "application/x-amz-json-1.0", "x-amzn-errortype": code }, body);
}

function send(response: ServerResponse, status: number, headers: Record<string, string>, body: Buffer): void {
  response.writeHead(status, {
    ...headers,
    "x-amzn-requestid": headers["x-amzn-requestid"] ?? randomUUID(),
    "content-length": String(body.length),
  });
  response.end(body);
}
