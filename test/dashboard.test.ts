/**
 * The dashboard without a browser: escaping, the timeline built from literal times, the list's
 * filters and paging, the cached counts, the status census on DynamoDB Local, the server's
 * Host, Origin and form checks, and a Fargate kernel's log read from its run's task (fake ports;
 * no runtime).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { BatchWriteItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sessionItem } from "../functions/adapters/dynamo/item-codec.ts";
import { DynamoSessionCensus } from "../functions/adapters/dynamo/session-census.ts";
import type { HistoryRecord, RunRecord, Session } from "../functions/core/model.ts";
import type { CensusCount, SessionCensus } from "../functions/core/ports/session-census.ts";
import { newSession } from "../functions/core/sessions.ts";
import { SPEC_DEFAULTS } from "../functions/core/spec.ts";
import type { SessionStatus } from "../functions/core/status.ts";
import type { DashboardDeps, DashboardStore } from "../dashboard/deps.ts";
import { escapeHtml, html } from "../dashboard/html.ts";
import { listSessions, parseListFilter, SCAN_BUDGET } from "../dashboard/list-page.ts";
import { startDashboard, type DashboardServer } from "../dashboard/server.ts";
import { StatusCounts } from "../dashboard/status-counts.ts";
import { buildTimeline } from "../dashboard/timeline.ts";
import { executionLink, renderLogs, renderSessionPage } from "../dashboard/session-page.ts";
import { admissionSummary } from "../functions/core/history.ts";
import { RETRY_CONFIG_DEFAULTS } from "../functions/core/retry/config.ts";
import { renderJobPage } from "../dashboard/job-page.ts";
import { renderAgentsPage } from "../dashboard/agents-page.ts";
import { renderCatalogPage } from "../dashboard/catalog-page.ts";
import { parseFailureCategory } from "../functions/core/retry/category-definitions.ts";
import { stateClass } from "../dashboard/states.ts";
import { newJob } from "../functions/core/jobs.ts";
import { TaskState } from "../functions/core/status.ts";
import { parseCommandLine } from "../bin/cli/args.ts";
import { freshTable, type TestTable } from "./store-fixtures.ts";

const T0 = 1_800_000_000_000;

function session(id: string, overrides: Partial<Session> = {}, specOverrides = {}): Session {
  return {
    ...newSession(id, { ...SPEC_DEFAULTS, name: id, command: ["/bin/true"], ...specOverrides }, T0).session,
    ...overrides,
  };
}

function record(seq: number, atMs: number, fields: Partial<HistoryRecord>): HistoryRecord {
  return {
    sessionId: "s-1",
    seq,
    handler: "ScheduleNewSessions",
    result: "SUCCESS",
    fromStatus: "PENDING",
    count: 1,
    firstAtMs: atMs,
    lastAtMs: atMs,
    ...fields,
  };
}

describe("html", () => {
  test("every interpolated value is escaped; only html`` fragments pass through", () => {
    const name = `<script>alert("x")</script>&'\``;
    expect(html`<b>${name}</b>${[html`<i>${name}</i>`, 3, undefined, false]}`.text).toBe(
      `<b>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;&#96;</b><i>${escapeHtml(name)}</i>3`,
    );
  });
});

describe("free text on every page is text", () => {
  const SCRIPT = `<script>window.__owned = 1</script><img src=x onerror="window.__owned = 2">`;

  test("an agent's label values (free text an agent declares) and a failure category's pattern render escaped", () => {
    const agent = {
      id: "agent-1",
      capacity: { cpu: 2, memoryMiB: 1024 },
      free: { cpu: 2, memoryMiB: 1024 },
      lastHeartbeatAtMs: T0,
      version: 1,
      labels: { zone: SCRIPT },
    };
    const agents = renderAgentsPage([{ agent, allocations: [] }], T0, 30_000).text;
    expect(agents).not.toContain("<script>");
    expect(agents).not.toContain("<img");
    expect(agents).toContain(escapeHtml(`zone=${SCRIPT}`));
    const category = parseFailureCategory({
      apiVersion: "cairn.dev/v1",
      kind: "FailureCategory",
      metadata: { name: "cuda_error" },
      spec: { rules: [{ onTerminationMessage: { pattern: SCRIPT.replace(/[()]/g, "") } }] },
    });
    const catalog = renderCatalogPage([], [], RETRY_CONFIG_DEFAULTS, true, [category]).text;
    expect(catalog).not.toContain("<script>");
    expect(catalog).not.toContain("<img");
  });

  test("only html.ts makes Html: every page builds its markup with html``, which escapes what it interpolates", () => {
    const dir = join(import.meta.dirname, "..", "dashboard");
    const makers = readdirSync(dir)
      .filter((f) => f.endsWith(".ts") && f !== "html.ts")
      .filter((f) =>
        /new Html\(|innerHTML|outerHTML|insertAdjacentHTML/.test(readFileSync(join(dir, f), "utf8")),
      );
    expect(makers).toEqual([]);
  });
});

describe("the timeline", () => {
  test("stages with their deadlines, two runs with the backoff between them, and the current stage", () => {
    const s = session("s-1", {
      status: "RUNNING",
      runIndex: 1,
      stage: { enteredAtMs: T0 + 10_000, expiresAtMs: T0 + 60_000 },
    });
    const h = [
      record(0, T0, { handler: "Submit", result: "SUBMITTED", toStatus: "PENDING" }),
      record(1, T0 + 1_000, { fromStatus: "PENDING", toStatus: "RUNNING" }),
      record(2, T0 + 2_500, { handler: "DetectTermination", fromStatus: "RUNNING", toStatus: "TERMINATING" }),
      // The run ended at 3 s; its requeue was applied at 3.5 s, and the backoff waited from there.
      record(3, T0 + 3_500, {
        handler: "Retry",
        result: "REQUEUED",
        fromStatus: "TERMINATING",
        toStatus: "PENDING",
      }),
      record(4, T0 + 9_000, {
        result: "SKIPPED",
        message: "no agent has 4 cpu free",
        count: 3,
        lastAtMs: T0 + 9_500,
      }),
      record(5, T0 + 10_000, { fromStatus: "PENDING", toStatus: "RUNNING" }),
    ];
    const run: RunRecord = {
      sessionId: "s-1",
      runIndex: 0,
      name: "s-1",
      outcome: "FAILED",
      startedAtMs: T0 + 1_000,
      endedAtMs: T0 + 3_000,
      decision: "retry",
      reason: "rule 0",
      delayMs: 5_000,
      kernels: [{ index: 0, status: "TERMINATED", outcome: "FAILED", exitCode: 3, condition: "OOMKilled" }],
    };
    const t = buildTimeline(s, [], h, [run], T0 + 12_000);
    const { pending, running, terminating } = SPEC_DEFAULTS.timeouts;
    expect(
      t.stages.map((x) => [x.status, x.fromMs - T0, x.toMs - T0, (x.deadlineMs ?? T0) - T0, x.current]),
    ).toEqual([
      ["PENDING", 0, 1_000, pending * 1000, false],
      ["RUNNING", 1_000, 2_500, 1_000 + running * 1000, false],
      ["TERMINATING", 2_500, 3_500, 2_500 + terminating * 1000, false],
      ["PENDING", 3_500, 10_000, 3_500 + pending * 1000, false],
      // The stage it is in carries its recorded deadline.
      ["RUNNING", 10_000, 12_000, 60_000, true],
    ]);
    expect(t.runs.map((r) => [r.runIndex, r.fromMs - T0, r.toMs - T0, r.label])).toEqual([
      [0, 0, 3_000, "run 0: FAILED · exit 3 · OOMKilled"],
      [1, 8_500, 12_000, "run 1: RUNNING (under way)"],
    ]);
    expect(t.backoffs).toEqual([{ afterRun: 0, fromMs: T0 + 3_500, toMs: T0 + 8_500 }]);
    expect(t.marks.map((m) => m.kind)).toEqual([
      "transition",
      "transition",
      "transition",
      "transition",
      "other",
      "transition",
    ]);
    expect(t.startMs).toBe(T0);
    // The current stage's deadline (60 s) is far past the data (12 s): drawn at the edge, not in range.
    expect(t.endMs).toBe(T0 + 12_000);
  });
});

describe("the timeline's history marks", () => {
  test("preemptions, failures, status changes and kept statuses each have their kind", () => {
    const s = session("s-2", { status: "PENDING" });
    const h = [
      record(0, T0, { handler: "Submit", result: "SUBMITTED", toStatus: "PENDING" }),
      record(1, T0 + 1, {
        handler: "Preempt",
        result: "PREEMPTED",
        fromStatus: "RUNNING",
        toStatus: "TERMINATING",
      }),
      record(2, T0 + 2, { result: "EXPIRED", fromStatus: "SCHEDULED", toStatus: "PENDING" }),
      record(3, T0 + 3, { result: "SKIPPED" }),
    ];
    expect(buildTimeline(s, [], h, [], T0 + 10).marks.map((m) => [m.record.result, m.kind])).toEqual([
      ["SUBMITTED", "transition"],
      ["PREEMPTED", "preempted"],
      ["EXPIRED", "failure"],
      ["SKIPPED", "other"],
    ]);
  });
});

describe("the list", () => {
  test("a bad filter names its field", () => {
    expect(() => parseListFilter(new URLSearchParams("status=DONE"))).toThrow(
      'status: must be one of PENDING, SCHEDULED, PREPARING, PREPARED, CREATING, RUNNING, TERMINATING, TERMINATED, CANCELLED, got "DONE"',
    );
    expect(() => parseListFilter(new URLSearchParams(`name=${"x".repeat(129)}`))).toThrow(
      "name: must be at most 128 characters",
    );
    expect(parseListFilter(new URLSearchParams("status=PENDING&queue=%20gpu%20&job="))).toEqual({
      status: "PENDING",
      queue: "gpu",
    });
  });

  /** A store of `count` sessions, newest first, every tenth in queue gpu; counts the reads. */
  function fakeStore(count: number): { store: DashboardStore; reads: number[] } {
    const all = Array.from({ length: count }, (_, i) =>
      session(`s-${String(count - i).padStart(5, "0")}`, {}, { queue: i % 10 === 0 ? "gpu" : "default" }),
    );
    const reads: number[] = [];
    const store = {
      listRecentSessions: ({ limit = 50, cursor }: { limit?: number; cursor?: string } = {}) => {
        const from = cursor === undefined ? 0 : Number(cursor);
        reads.push(limit);
        const items = all.slice(from, from + limit);
        return Promise.resolve({
          items,
          ...(from + limit < all.length ? { cursor: String(from + limit) } : {}),
        });
      },
    } as unknown as DashboardStore;
    return { store, reads };
  }

  test("a filter no index serves reads at most SCAN_BUDGET sessions a page, and the next page goes on", async () => {
    const { store, reads } = fakeStore(5_000);
    const first = await listSessions(store, { queue: "gpu" });
    expect(first.sessions).toHaveLength(50);
    expect(first.scanned).toBe(500);
    expect(first.budgetSpent).toBe(false);
    const rare = await listSessions(store, { name: "s-00001" });
    expect(rare.scanned).toBe(SCAN_BUDGET);
    expect(rare.budgetSpent).toBe(true);
    expect(rare.cursor).toBe(String(SCAN_BUDGET));
    expect(reads.every((limit) => limit === 100)).toBe(true);
    const unfiltered = await listSessions(store, {});
    expect([unfiltered.sessions.length, unfiltered.scanned, unfiltered.cursor]).toEqual([50, 50, "50"]);
  });
});

describe("counts per status", () => {
  test("cached per status (live 2 s, ended 30 s), one count in flight, a failure kept with the last value", async () => {
    let now = T0;
    const calls: SessionStatus[] = [];
    let fail = false;
    const census: SessionCensus = {
      countSessions: (status) => {
        calls.push(status);
        return fail
          ? Promise.reject(new Error("throttled"))
          : Promise.resolve({ count: calls.length, exact: true });
      },
    };
    const counts = new StatusCounts(census, { clock: () => now });
    const first = await counts.snapshot(1_000);
    expect(Object.values(first.counts).every((n) => n !== undefined && n.exact)).toBe(true);
    expect(calls).toHaveLength(9);
    now += 1_000;
    await counts.snapshot(1_000);
    expect(calls).toHaveLength(9);
    now += 1_500;
    await counts.snapshot(1_000);
    // Only the 7 live statuses are counted again.
    expect(calls.slice(9)).toEqual([
      "PENDING",
      "SCHEDULED",
      "PREPARING",
      "PREPARED",
      "CREATING",
      "RUNNING",
      "TERMINATING",
    ]);
    fail = true;
    now += 30_000;
    await counts.snapshot(0);
    const failed = await counts.snapshot(0);
    expect(failed.errors.TERMINATED).toBe("throttled");
    expect(failed.counts.TERMINATED).toBe(first.counts.TERMINATED);
  });

  test("a count it never had is waited for at most waitMs", async () => {
    const never: SessionCensus = { countSessions: () => new Promise<CensusCount>(() => undefined) };
    const started = Date.now();
    const snapshot = await new StatusCounts(never).snapshot(50);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(snapshot.counts.PENDING).toBeUndefined();
  });
});

describe("DynamoSessionCensus on DynamoDB Local", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("census");
  });
  afterAll(() => table.drop());

  test("counts each status over every shard from the status index", async () => {
    const statuses: SessionStatus[] = [
      "PENDING",
      "PENDING",
      "RUNNING",
      "TERMINATED",
      "TERMINATED",
      "TERMINATED",
    ];
    const items = statuses.flatMap((status, i) => {
      const { session: s, kernels } = newSession(
        `census-${i}`,
        { ...SPEC_DEFAULTS, name: "c", command: ["x"] },
        T0 + i,
      );
      const stored = { ...s, status };
      return [sessionItem(stored, 4, kernels)];
    });
    await table.client.send(
      new BatchWriteItemCommand({
        RequestItems: { [table.tableName]: items.map((Item) => ({ PutRequest: { Item } })) },
      }),
    );
    const census = new DynamoSessionCensus({ client: table.client, tableName: table.tableName });
    expect(await census.countSessions("PENDING")).toEqual({ count: 2, exact: true });
    expect(await census.countSessions("RUNNING")).toEqual({ count: 1, exact: true });
    expect(await census.countSessions("TERMINATED")).toEqual({ count: 3, exact: true });
    expect(await census.countSessions("CANCELLED")).toEqual({ count: 0, exact: true });
    // Capped: five CREATING sessions in one shard, counted at most 2, then at most 6 (all of them).
    const creating = Array.from({ length: 5 }, (_, i) => {
      const { session: s, kernels } = newSession(
        `creating-${i}`,
        { ...SPEC_DEFAULTS, name: "c", command: ["x"] },
        T0 + i,
      );
      const stored = { ...s, status: "CREATING" as const };
      return [sessionItem(stored, 1, kernels)];
    }).flat();
    await table.client.send(
      new BatchWriteItemCommand({
        RequestItems: { [table.tableName]: creating.map((Item) => ({ PutRequest: { Item } })) },
      }),
    );
    const single = new DynamoSessionCensus({ client: table.client, tableName: table.tableName, shards: 1 });
    expect(await single.countSessions("CREATING", 2)).toEqual({ count: 2, exact: false });
    expect(await single.countSessions("CREATING", 6)).toEqual({ count: 5, exact: true });
    await expect(census.countSessions("DONE" as SessionStatus)).rejects.toThrow(
      /^status: must be one of PENDING/,
    );
  });
});

describe("the server's checks", () => {
  let server: DashboardServer;
  const cancels: string[] = [];
  beforeAll(async () => {
    const found = newSession("live-1", { ...SPEC_DEFAULTS, name: "live", command: ["x"] }, T0);
    const store = {
      getSession: (id: string) => Promise.resolve(id === "live-1" ? found : undefined),
    } as unknown as DashboardStore;
    const deps: DashboardDeps = {
      store,
      census: { countSessions: () => Promise.resolve({ count: 0, exact: true }) },
      cancel: (id, reason, force) => {
        cancels.push(`${id}: ${reason}${force ? " (force)" : ""}`);
        return Promise.resolve();
      },
      executions: { kind: "none" },
      where: "test",
    };
    server = await startDashboard(deps);
  });
  afterAll(() => server.close());

  const post = (body: Record<string, string>, headers: Record<string, string>) =>
    fetch(new URL("/cancel", server.url), {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(body),
      redirect: "manual",
    });

  test("binds loopback; a cancel needs the same origin, confirmation and a known session", async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const origin = new URL(server.url).origin;
    const noOrigin = await post({ kind: "session", id: "live-1", confirm: "yes" }, {});
    expect(noOrigin.status).toBe(403);
    expect(await noOrigin.text()).toContain("cancel refused: Origin (none) is not this dashboard");
    const unconfirmed = await post({ kind: "session", id: "live-1" }, { Origin: origin });
    expect(unconfirmed.status).toBe(400);
    expect(await unconfirmed.text()).toContain("confirm: the cancel was not confirmed");
    const unknown = await post({ kind: "session", id: "gone-1", confirm: "yes" }, { Origin: origin });
    expect(unknown.status).toBe(404);
    const badId = await post({ kind: "session", id: "<x>", confirm: "yes" }, { Origin: origin });
    expect(badId.status).toBe(400);
    expect(await badId.text()).toContain("id: not a session or job id");
    expect(cancels).toEqual([]);
    const ok = await post(
      { kind: "session", id: "live-1", confirm: "yes", reason: "  " },
      { Origin: origin },
    );
    expect([ok.status, ok.headers.get("location")]).toEqual([303, "/sessions/live-1?cancel=requested"]);
    expect(cancels).toEqual(["live-1: cancelled from the dashboard"]);
    const badForce = await post(
      { kind: "session", id: "live-1", confirm: "yes", force: "1" },
      { Origin: origin },
    );
    expect(badForce.status).toBe(400);
    expect(await badForce.text()).toContain("force: must be yes when given, got &quot;1&quot;");
    const forced = await post(
      { kind: "session", id: "live-1", confirm: "yes", reason: "stuck", force: "yes" },
      { Origin: origin },
    );
    expect(forced.status).toBe(303);
    expect(cancels).toEqual(["live-1: cancelled from the dashboard", "live-1: stuck (force)"]);
  });

  test("every page carries the CSP; a bad filter is a 400 naming the field, escaped", async () => {
    const res = await fetch(new URL("/?status=%3Cb%3E", server.url));
    expect(res.status).toBe(400);
    expect(res.headers.get("content-security-policy")).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    const body = await res.text();
    expect(body).toContain("status: must be one of");
    expect(body).toContain("got &quot;&lt;b&gt;&quot;");
    expect(body).not.toContain("<b>");
    expect((await fetch(new URL("/sessions/NOT_AN_ID", server.url))).status).toBe(400);
    expect((await fetch(new URL("/nowhere", server.url))).status).toBe(404);
  });
});

describe("where a session's execution is shown", () => {
  const machine = "arn:aws:states:eu-west-1:123456789012:stateMachine:SessionLifecycle";
  test("deployed: the Step Functions console's page of the execution", () => {
    const link = executionLink({ kind: "console", stateMachineArn: machine }, "s-1", "s-1").text;
    const arn = "arn:aws:states:eu-west-1:123456789012:execution:SessionLifecycle:s-1";
    expect(link).toContain(
      `href="https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/${arn}"`,
    );
  });
  test("local: the dashboard's own page of the execution's history", () => {
    const local = { kind: "local" as const, stateMachineArn: machine, history: () => Promise.resolve([]) };
    expect(executionLink(local, "s-1", "s-1").text).toContain('href="/sessions/s-1/execution"');
    expect(executionLink({ kind: "none" }, "s-1", "s-1").text).toContain("not known here");
    expect(executionLink({ kind: "none", why: "see <there>" }, "s-1", "s-1").text).toContain(
      "see &lt;there&gt;",
    );
  });
});

describe("cairn dashboard's command line", () => {
  test("--port is a port", () => {
    expect(parseCommandLine(["dashboard", "--port", "8080", "--stack", "Cairn"])).toMatchObject({
      kind: "dashboard",
      port: 8080,
      target: { stack: "Cairn" },
    });
    expect(parseCommandLine(["dashboard"])).toMatchObject({ kind: "dashboard", port: 0 });
    expect(() => parseCommandLine(["dashboard", "--port", "70000"])).toThrow(
      '--port must be a whole number from 0 to 65535, got "70000"',
    );
  });
});

describe("the session page's HPC Pack state", () => {
  const page = (s: Session) =>
    renderSessionPage({
      found: { session: s, kernels: [] },
      history: [],
      runs: [],
      config: RETRY_CONFIG_DEFAULTS,
      executions: { kind: "none" },
      nowMs: T0,
    }).text;

  test("the state and the steps of its admission, and what validation checked, escaped", () => {
    const admission = admissionSummary({ template: "<b>gpu</b>", filter: "accepted" });
    const text = page(session("s-adm", { admission }));
    expect(text).toContain("<dt>HPC Pack's state</dt>");
    expect(text).toMatch(
      /<dd>Queued <span class="muted">\(admitted Submitted → Validating → Queued\)<\/span><\/dd>/,
    );
    expect(text).toContain("job template &lt;b&gt;gpu&lt;/b&gt; applied");
    expect(text).toContain("the submission filter accepted it; queued");
    expect(text).not.toContain("<b>gpu</b>");
  });

  test("a session created before validation was recorded shows its state alone", () => {
    const text = page(session("s-old"));
    expect(text).toMatch(/<dd>Queued<\/dd>/);
    expect(text).not.toContain("admitted");
    expect(text).not.toContain("<dt>validation</dt>");
  });
});

describe("the session page's logs", () => {
  test("a big gang's page tails some tasks and links the others; lines are text", () => {
    const tails = [0, 1].map((i) => ({
      kernelIndex: i,
      runIndex: 2,
      lines: [{ timestamp: T0, stream: "stdout" as const, message: `<i>task ${i}</i>` }],
      next: "f/1",
    }));
    const page = renderLogs("gang-1", tails, { follow: true, why: "", kernels: 4 }).text;
    expect(page).toContain('href="/sessions/gang-1?kernel=2&amp;run=2#logs"');
    expect(page).toContain('href="/sessions/gang-1?kernel=3&amp;run=2#logs"');
    expect(page).not.toContain("kernel=1&amp;run=2#logs");
    expect(page).toContain("&lt;i&gt;task 1&lt;/i&gt;\n</pre>");
    expect(page).toContain('data-src="/sessions/gang-1/logs?kernel=0&amp;run=2" data-next="f/1"');
  });
});

describe("a Fargate session's logs", () => {
  const task0 = "arn:aws:ecs:us-east-1:123456789012:task/cairn/0123456789abcdef0123456789abcdef";
  const task1 = "arn:aws:ecs:us-east-1:123456789012:task/cairn/fedcba9876543210fedcba9876543210";
  let server: DashboardServer;
  /** What the log reader was asked for: the run and the task whose stream it reads. */
  const asked: string[] = [];
  /** Sessions read from the store. */
  let sessionReads = 0;
  beforeAll(async () => {
    const fresh = newSession("fg-dash", { ...SPEC_DEFAULTS, name: "fg", command: ["x"] }, T0);
    const found = {
      session: { ...fresh.session, status: "RUNNING" as const, runIndex: 1 },
      kernels: fresh.kernels.map((k) => ({
        ...k,
        status: "RUNNING" as const,
        agentId: "fargate_q",
        taskArn: task1,
      })),
    };
    const run0: RunRecord = {
      sessionId: "fg-dash",
      runIndex: 0,
      name: "fg-dash",
      outcome: "PREEMPTED",
      endedAtMs: T0,
      decision: "retry",
      reason: "preempted",
      kernels: [{ index: 0, status: "TERMINATED", agentId: "fargate_q", taskArn: task0 }],
    };
    const store = {
      getSession: (id: string) => {
        sessionReads++;
        return Promise.resolve(id === "fg-dash" ? found : undefined);
      },
      listRuns: () => Promise.resolve([run0]),
      listHistory: () => Promise.resolve([]),
      getRetryConfig: () => Promise.resolve(undefined),
    } as unknown as DashboardStore;
    const read = (run: number, taskArn: string | undefined) => {
      asked.push(`run ${run}: ${taskArn ?? "(agent)"}`);
      return Promise.resolve({ lines: [], next: "t" });
    };
    const deps: DashboardDeps = {
      store,
      census: { countSessions: () => Promise.resolve({ count: 0, exact: true }) },
      cancel: () => Promise.resolve(),
      logs: {
        tail: (_s, _k, run, _limit, taskArn) => read(run, taskArn),
        follow: (_s, _k, run, _token, taskArn) => read(run, taskArn),
      },
      executions: { kind: "none" },
      where: "test",
    };
    server = await startDashboard(deps);
  });
  afterAll(() => server.close());

  test("the current run's and an earlier run's output are read from their own tasks' streams", async () => {
    const get = async (path: string) => {
      const res = await fetch(new URL(path, server.url));
      expect(res.status, path).toBe(200);
      return res.text();
    };
    // The log URLs the pages render (their data-src), followed as static/dashboard.js does.
    const src = (page: string) => /data-src="([^"]+)"/.exec(page)![1]!.replaceAll("&amp;", "&");
    const current = src(await get("/sessions/fg-dash"));
    const earlier = src(await get("/sessions/fg-dash?run=0"));
    const reads = sessionReads;
    await get(current);
    await get(`${current}&after=t`);
    await get(earlier);
    expect(asked).toEqual([
      `run 1: ${task1}`,
      `run 0: ${task0}`,
      `run 1: ${task1}`,
      `run 1: ${task1}`,
      `run 0: ${task0}`,
    ]);
    // The page named each run's task: reading and following its log read no session.
    expect(sessionReads).toBe(reads);
  });

  test("a Fargate kernel still waiting for its task: its log is looked up until the task is known", async () => {
    const reads = sessionReads;
    const res = await fetch(new URL("/sessions/fg-dash/logs?kernel=0&run=1&task=pool", server.url));
    expect(res.status).toBe(200);
    expect(asked.at(-1)).toBe(`run 1: ${task1}`);
    expect(sessionReads).toBe(reads + 1);
    const bad = await fetch(new URL("/sessions/fg-dash/logs?kernel=0&run=1&task=..%2Fother", server.url));
    expect(bad.status).toBe(400);
  });
});

describe("Iris's job page", () => {
  // Iris's dashboard table, copied: display name, CSS class, colour.
  const SEED_COLOURS: readonly [string, string][] = [
    [".status-pending", "#9a6700"],
    [".status-assigned", "#bc4c00"],
    [".status-building", "#8250df"],
    [".status-running", "#0969da"],
    [".status-succeeded", "#1a7f37"],
    [".status-failed", "#cf222e"],
    [".status-killed", "#57606a"],
    [".status-worker_failed", "#8250df"],
    [".status-unschedulable", "#cf222e"],
    [".status-preempted", "#bc4c00"],
  ];

  test("all ten .status-* classes have the seed's colours in the stylesheet", () => {
    const css = readFileSync(join(import.meta.dirname, "../dashboard/static/dashboard.css"), "utf8");
    const rules = new Map(
      [...css.matchAll(/^(\.status-[a-z_]+)\s*\{\s*color:\s*(#[0-9a-f]{6});\s*\}/gm)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    for (const [cls, colour] of SEED_COLOURS) expect(rules.get(cls), cls).toBe(colour);
    // Every task state the dashboard can show has one of them (stateToName: the state, lower case).
    for (const state of Object.values(TaskState))
      expect(rules.has(`.${stateClass(state)}`), state).toBe(true);
  });

  test("every attempt row carries its own state badge; a worker failure is annotated on its attempt row", () => {
    const spec = { ...SPEC_DEFAULTS, name: "j", command: ["/bin/true"], replicas: 1 };
    const job = newJob("job-1", spec, T0);
    const current = newSession("job-1", spec, T0);
    const running = {
      session: { ...current.session, status: "RUNNING" as const, runIndex: 2 },
      kernels: current.kernels.map((k) => ({
        ...k,
        status: "RUNNING" as const,
        agentId: "agent-c",
        startedAtMs: T0 + 9_000,
      })),
    };
    const run = (
      runIndex: number,
      outcome: RunRecord["outcome"],
      agentId: string,
      extra = {},
    ): RunRecord => ({
      sessionId: "job-1",
      runIndex,
      name: runIndex === 0 ? "job-1" : `job-1.${runIndex}`,
      outcome,
      endedAtMs: T0 + (runIndex + 1) * 3_000,
      decision: "retry",
      reason: "retried",
      kernels: [{ index: 0, status: "TERMINATED", outcome, agentId, ...extra }],
    });
    const runs = new Map([
      [
        "job-1",
        [
          run(1, "FAILED", "agent-b", { exitCode: 3, failureCategory: "cuda_error" }),
          run(0, "WORKER_FAILED", "agent-a", { condition: "AgentLost" }),
        ],
      ],
    ]);
    const page = renderJobPage(job, [running], undefined, runs).text;
    const rows = [...page.matchAll(/<tr data-attempt="0\/(\d)">([\s\S]*?)<\/tr>/g)].map((m) => [m[1], m[2]!]);
    expect(rows.map(([i]) => i)).toEqual(["0", "1", "2"]);
    const badge = (row: string) => /class="badge (status-[a-z_]+)"/.exec(row)?.[1];
    expect(rows.map(([, row]) => badge(row!))).toEqual([
      "status-worker_failed",
      "status-failed",
      "status-running",
    ]);
    expect(rows.map(([, row]) => row!.includes("(worker failure)"))).toEqual([true, false, false]);
    // The category the run's end gave its failure (Armada's onFailureCategory matches it).
    expect(rows.map(([, row]) => row!.includes("<td>cuda_error</td>"))).toEqual([false, true, false]);
  });
});
