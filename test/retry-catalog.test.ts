/**
 * The retry catalog's cache (functions/app/retry-catalog.ts) against DynamoDB Local: a policy
 * created just before the submission that names it applies to that session whatever the cache
 * holds; a policy that was missing before the session was submitted costs no read again.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { RetryCatalog } from "../functions/app/retry-catalog.ts";
import { parseRetryPolicy } from "../functions/core/retry/policy.ts";
import { freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

let table: TestTable;
let store: DynamoSessionStore;
beforeAll(async () => {
  table = await freshTable("cairn-retry-catalog");
  store = table.store();
});
afterAll(() => table.drop());

const policy = (name: string) =>
  parseRetryPolicy({
    apiVersion: "cairn.dev/v1",
    kind: "RetryPolicy",
    metadata: { name },
    spec: { rules: [{ action: "Retry", onExitCodes: { operator: "In", values: [3] } }] },
  });

/** A session submitted at `createdAtMs` naming `policies`. */
function naming(id: string, createdAtMs: number, policies: string[]) {
  const { session } = newSession(id, { createdAtMs });
  return { ...session, spec: { ...session.spec, retry: { policies } } };
}

describe("the retry catalog's cache", () => {
  test("a policy created after the list was read, before the session that names it: read again, applied", async () => {
    let nowMs = T0;
    const lists: number[] = [];
    const counted = Object.assign(Object.create(store) as DynamoSessionStore, {
      listRetryPolicies: () => (lists.push(nowMs), store.listRetryPolicies()),
    });
    const catalog = new RetryCatalog(counted, { nowMs: () => nowMs }, 60_000);
    expect((await catalog.policiesFor(naming("rc-0", T0, []))).missing).toEqual([]);
    expect(lists).toEqual([T0]);

    nowMs = T0 + 100;
    await store.createRetryPolicy(policy("fresh"), nowMs);
    const named = await catalog.policiesFor(naming("rc-1", T0 + 150, ["fresh"]));
    expect(named.missing).toEqual([]);
    expect(named.policies.map((p) => p.name)).toEqual(["fresh"]);
    expect(lists).toEqual([T0, T0 + 100]);

    // A name missing from a list read after the session was submitted: not read again.
    nowMs = T0 + 200;
    expect((await catalog.policiesFor(naming("rc-2", T0 + 50, ["absent"]))).missing).toEqual(["absent"]);
    expect(lists).toEqual([T0, T0 + 100]);
  });
});
