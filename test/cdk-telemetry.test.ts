/**
 * The telemetry the dashboard and alarms read: what a coordinator run, a stage entry and a
 * sweep's census record; the census itself (waiting sessions per stage, stuck ones past their
 * expiry); and the Powertools wiring: EMF documents with the namespace, service and dimensions
 * the stack's alarms expect, metrics flushed even when an invocation fails, nothing emitted
 * outside Lambda, JSON logs through the application's Logger interface.
 */
import { afterEach, describe, expect, test, vi } from "vitest";
import type { Wiring } from "../functions/handlers/wiring.ts";
import type { RunReport } from "../functions/app/coordinator.ts";
import { CensusError, stageCensus } from "../functions/app/stage-census.ts";
import type { Page } from "../functions/core/ports/paging.ts";
import type { Session } from "../functions/core/model.ts";
import { WAITING_SESSION_STATUSES, type SessionStatus } from "../functions/core/status.ts";
import { handleCoordinatorEvent } from "../functions/handlers/coordinator.ts";
import type { ParsedBatch } from "../functions/app/coordinator-core.ts";
import { recordCensus, recordRun, recordStageEntry, type MetricSink } from "../functions/handlers/metrics.ts";
import { MetricDimension, MetricName, METRICS_SERVICE } from "../functions/topology/metrics.ts";
import {
  createTelemetry,
  instrumented,
  metricsEnabled,
  tracingEnabled,
} from "../functions/handlers/telemetry.ts";
import type { CairnConfig } from "../functions/config.ts";

/** A sink that records data points as "Name{Dim=value} = n". */
function recordingSink(): MetricSink & { points: string[] } {
  const points: string[] = [];
  return {
    points,
    count: (name, value) => points.push(`${name} = ${value}`),
    countBy: (name, dim, dimValue, value) => points.push(`${name}{${dim}=${dimValue}} = ${value}`),
  };
}

/** A store whose sessions in each status expire at the given times, paged like the real one. */
function storeWith(expiries: Partial<Record<SessionStatus, number[]>>) {
  const calls: { status: SessionStatus; limit: number | undefined; cursor: string | undefined }[] = [];
  return {
    calls,
    listSessionsByStatus: (status: SessionStatus, page: { limit?: number; cursor?: string } = {}) => {
      calls.push({ status, limit: page.limit, cursor: page.cursor });
      const all = (expiries[status] ?? []).map((expiresAtMs, i) => ({
        id: `${status.toLowerCase()}-${i}`,
        status,
        stage: { enteredAtMs: 0, expiresAtMs },
      })) as unknown as Session[];
      const from = page.cursor === undefined ? 0 : Number(page.cursor);
      const to = from + (page.limit ?? 50);
      const result: Page<Session> = {
        items: all.slice(from, to),
        ...(to < all.length ? { cursor: String(to) } : {}),
      };
      return Promise.resolve(result);
    },
  };
}

const config: CairnConfig = {
  tableName: "t",
  eventBusName: "b",
  stateMachineArn: "arn:aws:states:eu-west-1:123456789012:stateMachine:m",
  shards: 4,
  agentTimeoutMs: 30_000,
  batchLimit: 200,
  terminationGraceMs: 5_000,
  logLevel: "warn",
  retryCacheMs: 5_000,
  repairAfterMs: 60_000,
  agentQueuePrefix: "cairn-agent-",
  retentionDays: 90,
};

describe("what each entry point records", () => {
  test("a coordinator run: its trigger, events applied, rejected and retried, completions, decisions per pass", () => {
    const sink = recordingSink();
    const report: RunReport = {
      applied: 3,
      rejected: [{ eventId: "e1", detailType: "Session Submitted", reason: "detail.spec: required" }],
      retry: [4, 5],
      passes: [
        { name: "ScheduleNewSessions", targets: 5, decisions: 4 },
        { name: "PromoteToRunning", targets: 1, decisions: 0 },
      ],
      completed: 2,
    };
    recordRun(sink, "events", report);
    expect(sink.points).toEqual([
      "CoordinatorRuns{Trigger=events} = 1",
      "EventsApplied = 3",
      "EventsRejected = 1",
      "EventsRetried = 2",
      "StageCompletions = 2",
      "PassDecisions{Pass=ScheduleNewSessions} = 4",
      "PassDecisions{Pass=PromoteToRunning} = 0",
    ]);
  });

  test("a stage entry: one transition under the status entered", () => {
    const sink = recordingSink();
    recordStageEntry(sink, "RUNNING");
    expect(sink.points).toEqual(["Transitions{Status=RUNNING} = 1"]);
  });

  test("a census: sessions per waiting status, and the stuck count", () => {
    const sink = recordingSink();
    recordCensus(sink, {
      byStatus: {
        PENDING: 2,
        SCHEDULED: 0,
        PREPARING: 0,
        PREPARED: 0,
        CREATING: 1,
        RUNNING: 5,
        TERMINATING: 0,
      },
      stuck: 1,
      truncated: false,
    });
    expect(sink.points).toEqual([
      ...WAITING_SESSION_STATUSES.map(
        (s) => `SessionsInStatus{Status=${s}} = ${{ PENDING: 2, CREATING: 1, RUNNING: 5 }[s as string] ?? 0}`,
      ),
      "SessionsStuckBeyondTimeout = 1",
    ]);
  });
});

describe("the census of waiting sessions", () => {
  const nowMs = 1_800_000_000_000;
  const graceMs = 300_000;

  test("given sessions expiring around now, only those past expiry plus grace are stuck", () => {
    const store = storeWith({
      PENDING: [nowMs + 60_000, nowMs - graceMs, nowMs - graceMs - 1],
      RUNNING: [nowMs - 3_600_000],
      TERMINATING: [nowMs],
    });
    return expect(stageCensus(store, nowMs, { graceMs })).resolves.toEqual({
      byStatus: {
        PENDING: 3,
        SCHEDULED: 0,
        PREPARING: 0,
        PREPARED: 0,
        CREATING: 0,
        RUNNING: 1,
        TERMINATING: 1,
      },
      stuck: 2,
      truncated: false,
    });
  });

  test("pages through a status, and stops at maxPerStatus with the count marked as a lower bound", async () => {
    const store = storeWith({ SCHEDULED: Array.from({ length: 25 }, () => nowMs) });
    const all = await stageCensus(store, nowMs, { pageSize: 10 });
    expect(all.byStatus.SCHEDULED).toBe(25);
    expect(store.calls.filter((c) => c.status === "SCHEDULED").map((c) => c.cursor)).toEqual([
      undefined,
      "10",
      "20",
    ]);
    const capped = await stageCensus(
      storeWith({ SCHEDULED: Array.from({ length: 25 }, () => nowMs) }),
      nowMs,
      {
        pageSize: 10,
        maxPerStatus: 15,
      },
    );
    expect(capped).toMatchObject({ truncated: true, byStatus: { SCHEDULED: 15 } });
  });

  test("rejects options that cannot count", async () => {
    await expect(stageCensus(storeWith({}), nowMs, { maxPerStatus: 0 })).rejects.toThrow(
      new CensusError("maxPerStatus: must be a positive integer, got 0"),
    );
    await expect(stageCensus(storeWith({}), nowMs, { graceMs: -1 })).rejects.toThrow(
      "graceMs: must be a non-negative integer, got -1",
    );
  });
});

/** The event id an event of the parsed batch carries (these tests' bodies parse as invalid events). */
function eventIdOf(event: ParsedBatch["events"][number]): string | undefined {
  return event.kind === "invalid" ? event.eventId : undefined;
}

describe("the coordinator entry point", () => {
  const report: RunReport = { applied: 1, rejected: [], retry: [1], passes: [], completed: 0 };

  function fakeWiring(nowMs: { value: number }, store: Pick<Wiring["store"], "listSessionsByStatus">) {
    const logged: string[] = [];
    const runs: { eventIds: readonly unknown[]; sweep: boolean }[] = [];
    const wiring = {
      coordinator: {
        run: (batch: ParsedBatch, options: { sweep?: boolean } = {}) => {
          runs.push({ eventIds: batch.events.map(eventIdOf), sweep: options.sweep === true });
          return Promise.resolve(report);
        },
      },
      store,
      clock: { nowMs: () => nowMs.value },
      log: {
        info: (m: string) => logged.push(`info ${m}`),
        warn: (m: string) => logged.push(`warn ${m}`),
        error: (m: string, f?: Record<string, unknown>) => logged.push(`error ${m} ${JSON.stringify(f)}`),
      },
    } as unknown as Wiring;
    return { wiring, logged, runs };
  }

  test("a queue batch: a run over the parsed bodies, its metrics, and the retried messages as batch failures", async () => {
    const { wiring, runs } = fakeWiring({ value: 0 }, storeWith({}));
    const sink = recordingSink();
    const out = await handleCoordinatorEvent(
      wiring,
      {
        Records: [
          { messageId: "m-1", body: JSON.stringify({ id: "a" }) },
          { messageId: "m-2", body: JSON.stringify({ id: "b" }) },
        ],
      },
      sink,
    );
    // The bodies are parsed here, at the entry point: the run gets the batch's events in order.
    expect(runs).toEqual([{ eventIds: ["a", "b"], sweep: false }]);
    expect(out).toEqual({ batchItemFailures: [{ itemIdentifier: "m-2" }] });
    expect(sink.points[0]).toBe("CoordinatorRuns{Trigger=events} = 1");
    expect(sink.points).not.toContain(expect.stringMatching(/^SessionsInStatus/));
  });

  test("a scheduled event on the placement queue sweeps in that batch's run, with its census", async () => {
    const { wiring, runs } = fakeWiring({ value: 1_800_000_000_000 }, storeWith({}));
    const sink = recordingSink();
    const scheduled = { id: "e-1", source: "aws.events", "detail-type": "Scheduled Event", detail: {} };
    const out = await handleCoordinatorEvent(
      wiring,
      {
        Records: [
          {
            messageId: "m-1",
            body: JSON.stringify({ id: "a" }),
            attributes: { MessageGroupId: "placement" },
          },
          { messageId: "m-2", body: JSON.stringify(scheduled), attributes: { MessageGroupId: "placement" } },
        ],
      },
      sink,
    );
    // The scheduled event is not an event to apply: the run is a sweep over the others.
    expect(runs).toEqual([{ eventIds: ["a"], sweep: true }]);
    expect(sink.points[0]).toBe("CoordinatorRuns{Trigger=sweep} = 1");
    expect(sink.points.some((p) => p.startsWith("SessionsInStatus"))).toBe(true);
    // The run's retry index 1 names no message here: the scheduled event is not one of its envelopes.
    expect(out).toEqual({ batchItemFailures: [] });
  });

  test("sweeps: the run, then a census at most once a minute; a stuck session is logged", async () => {
    const nowMs = { value: 1_800_000_000_000 };
    const { wiring, logged } = fakeWiring(nowMs, storeWith({ RUNNING: [nowMs.value - 3_600_000] }));
    // The sweep as its queue delivers it: a batch of one scheduled event.
    const sweep = {
      Records: [
        {
          messageId: "m-sweep",
          body: JSON.stringify({ source: "aws.events", "detail-type": "Scheduled Event" }),
        },
      ],
    };
    const census = (sink: { points: string[] }) => sink.points.filter((p) => /^Sessions/.test(p));

    const first = recordingSink();
    await handleCoordinatorEvent(wiring, sweep, first);
    expect(first.points[0]).toBe("CoordinatorRuns{Trigger=sweep} = 1");
    expect(census(first)).toContain("SessionsInStatus{Status=RUNNING} = 1");
    expect(census(first)).toContain("SessionsStuckBeyondTimeout = 1");
    expect(logged).toEqual(["warn sessions stuck beyond their stage timeout"]);

    nowMs.value += 10_000;
    const soon = recordingSink();
    await handleCoordinatorEvent(wiring, sweep, soon);
    expect(soon.points[0]).toBe("CoordinatorRuns{Trigger=sweep} = 1");
    expect(census(soon)).toEqual([]);

    nowMs.value += 60_000;
    const later = recordingSink();
    await handleCoordinatorEvent(wiring, sweep, later);
    expect(census(later)).toHaveLength(WAITING_SESSION_STATUSES.length + 1);
  });

  test("a failed census is logged and leaves its metrics missing; the sweep itself succeeds", async () => {
    const failing = { listSessionsByStatus: () => Promise.reject(new Error("throttled")) };
    const { wiring, logged } = fakeWiring({ value: 0 }, failing);
    const sink = recordingSink();
    await expect(
      handleCoordinatorEvent(
        wiring,
        {
          Records: [
            {
              messageId: "m-sweep",
              body: JSON.stringify({ source: "aws.events", "detail-type": "Scheduled Event" }),
            },
          ],
        },
        sink,
      ),
    ).resolves.toEqual({ batchItemFailures: [] });
    expect(sink.points.filter((p) => p.startsWith("Sessions"))).toEqual([]);
    expect(logged).toEqual(['error census failed {"error":"throttled"}']);
  });
});

describe("Powertools wiring", () => {
  afterEach(() => vi.restoreAllMocks());

  /** Lines written to stdout and stderr while `fn` runs (Powertools writes EMF and logs there). */
  async function stdoutOf(fn: () => unknown): Promise<string[]> {
    const lines: string[] = [];
    const capture = (chunk: string | Uint8Array) => {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      return true;
    };
    vi.spyOn(process.stdout, "write").mockImplementation(capture);
    vi.spyOn(process.stderr, "write").mockImplementation(capture);
    await fn();
    vi.restoreAllMocks();
    return lines;
  }

  interface Emf {
    _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
    [key: string]: unknown;
  }
  const emf = (lines: string[]): Emf[] =>
    lines.map((l) => JSON.parse(l) as Emf).filter((doc) => doc._aws?.CloudWatchMetrics !== undefined);

  test("metrics are emitted in Lambda, or where POWERTOOLS_METRICS_DISABLED=false asks for them", () => {
    expect(metricsEnabled({})).toBe(false);
    expect(metricsEnabled({ AWS_LAMBDA_FUNCTION_NAME: "Coordinator" })).toBe(true);
    expect(
      metricsEnabled({ AWS_LAMBDA_FUNCTION_NAME: "Coordinator", POWERTOOLS_METRICS_DISABLED: "true" }),
    ).toBe(false);
    expect(metricsEnabled({ POWERTOOLS_METRICS_DISABLED: "false" })).toBe(true);
  });

  test("in Lambda, an invocation flushes EMF with the stack's namespace, the service and each dimension", async () => {
    const lines = await stdoutOf(async () => {
      const telemetry = await createTelemetry(config, {
        AWS_LAMBDA_FUNCTION_NAME: "Coordinator",
        POWERTOOLS_METRICS_NAMESPACE: "Cairn/Test",
      });
      await instrumented(telemetry, "Coordinator", () => {
        telemetry.metrics.count(MetricName.EventsApplied, 3);
        telemetry.metrics.countBy(MetricName.Transitions, MetricDimension.Status, "RUNNING", 1);
        return Promise.resolve();
      });
    });
    const docs = emf(lines);
    expect(docs).toHaveLength(2);
    const byMetric = new Map(docs.map((d) => [d._aws.CloudWatchMetrics[0]!.Metrics[0]!.Name, d]));
    expect(byMetric.get("EventsApplied")).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Namespace: "Cairn/Test", Dimensions: [["service"]] }] },
      service: METRICS_SERVICE,
      EventsApplied: 3,
    });
    expect(byMetric.get("Transitions")).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Namespace: "Cairn/Test", Dimensions: [["service", "Status"]] }] },
      service: METRICS_SERVICE,
      Status: "RUNNING",
      Transitions: 1,
    });
  });

  test("a failing invocation still flushes what it recorded, then rethrows", async () => {
    let thrown: unknown;
    const lines = await stdoutOf(async () => {
      const telemetry = await createTelemetry(config, { AWS_LAMBDA_FUNCTION_NAME: "EnterStage" });
      try {
        await instrumented(telemetry, "EnterStage", () => {
          telemetry.metrics.count(MetricName.StageCompletions, 1);
          return Promise.reject(new Error("store unavailable"));
        });
      } catch (error) {
        thrown = error;
      }
    });
    expect((thrown as Error).message).toBe("store unavailable");
    expect(emf(lines).map((d) => d["StageCompletions"])).toEqual([1]);
  });

  test("outside Lambda nothing is emitted and tracing is off; the SDK clients pass through untouched", async () => {
    const lines = await stdoutOf(async () => {
      const telemetry = await createTelemetry(config, {});
      const client = { send: () => undefined };
      expect(telemetry.captureClient(client)).toBe(client);
      // Not even loaded: the X-Ray SDK's async hooks would slow every promise in the process.
      expect(telemetry.tracer).toBeUndefined();
      await instrumented(telemetry, "Coordinator", () => {
        telemetry.metrics.count(MetricName.EventsApplied, 1);
        return Promise.resolve();
      });
    });
    expect(emf(lines)).toEqual([]);
  });

  test("tracing is loaded in Lambda only, and off where POWERTOOLS_TRACE_ENABLED=false", () => {
    expect(tracingEnabled({})).toBe(false);
    expect(tracingEnabled({ AWS_EXECUTION_ENV: "AWS_Lambda_nodejs24.x" })).toBe(true);
    expect(
      tracingEnabled({ AWS_EXECUTION_ENV: "AWS_Lambda_nodejs24.x", POWERTOOLS_TRACE_ENABLED: "false" }),
    ).toBe(false);
  });

  test("logs are Powertools JSON lines at the configured level, with the component", async () => {
    const telemetry = await createTelemetry(config, {});
    const lines = await stdoutOf(() => {
      const log = telemetry.logger("coordinator");
      log.info("not at warn level");
      log.warn("event rejected", { eventId: "e-1" });
    });
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      level: "WARN",
      message: "event rejected",
      service: METRICS_SERVICE,
      component: "coordinator",
      eventId: "e-1",
    });
  });
});
