/**
 * Admission (job templates and the submission filter) over DynamoDB Local, with fakes that record
 * calls and fail on demand: the filter asked once per job (a redelivered submission is validated,
 * not filtered), a failed submission stored once and announced once, a template's default queue
 * checked and its priority added, a failed template read not cached; and the Lambda adapter's
 * mapping of a function error, a reply and the caller's abort.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LambdaClient } from "@aws-sdk/client-lambda";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { TemplateItems } from "../functions/adapters/dynamo/template-items.ts";
import { LambdaSubmissionFilter } from "../functions/adapters/lambda/submission-filter.ts";
import { Admission, type AdmissionDeps } from "../functions/app/admission.ts";
import type { EventsPort } from "../functions/core/ports/event-bus.ts";
import type { SubmissionFilterPort } from "../functions/core/ports/submission-filter.ts";
import type { JobStateChangedDetailInput } from "../functions/core/ports/event-bus.ts";
import { newSession } from "../functions/core/sessions.ts";
import { parseSessionSpec } from "../functions/core/spec.ts";
import type { JobTemplate } from "../functions/core/templates.ts";
import { freshTable, T0, type TestTable } from "./store-fixtures.ts";

let table: TestTable;
let templates: TemplateItems;

beforeAll(async () => {
  table = await freshTable("cairn-admission");
  templates = new TemplateItems(new DynamoRequests(table.client, table.tableName, undefined));
  const batch: JobTemplate = {
    name: "batch",
    defaults: { queue: "batch", resources: { cpu: 2 } },
    constraints: { "resources.cpu": { max: 4 } },
  };
  await templates.createTemplate(batch, T0);
  await templates.createTemplate({ ...batch, name: "nowhere", defaults: { queue: "nowhere" } }, T0);
  await table.store().createQueue({ name: "batch", priority: 10, retryPolicies: [] }, T0);
});
afterAll(() => table.drop());

function admission(filter?: SubmissionFilterPort, overrides: Partial<AdmissionDeps> = {}) {
  const store = table.store();
  const published: JobStateChangedDetailInput[] = [];
  const events: EventsPort = {
    statusChanged: () => Promise.resolve(),
    rejected: () => Promise.resolve(),
    requeued: () => Promise.resolve(),
    jobStateChanged: (details) => {
      published.push(...details);
      return Promise.resolve();
    },
  };
  const a = new Admission({
    templates,
    ...(filter ? { filter: { port: filter, timeoutMs: 500, onFailure: "reject" } } : {}),
    queue: (name) => store.getQueue(name),
    store,
    events,
    clock: { nowMs: () => T0 },
    log: { info: () => {}, warn: () => {}, error: () => {} },
    ...overrides,
  });
  return { a, published, store };
}

/** A filter that records what it was asked and answers `answer`. */
function recordingFilter(answer: unknown): SubmissionFilterPort & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    ask: (request) => {
      asked.push(request.jobId);
      return Promise.resolve(answer);
    },
  };
}

const written = (extra: Record<string, unknown> = {}) => ({ name: "x", command: ["/bin/true"], ...extra });
const queued = (extra: Record<string, unknown> = {}) => parseSessionSpec(written(extra));

describe("given a template whose defaults name a queue", () => {
  test("the default queue applies and its priority is added", async () => {
    const { a } = admission();
    const admitted = await a.admit(
      "adm-queue-1",
      written({ template: "batch" }),
      queued({ template: "batch" }),
    );
    expect(admitted).toMatchObject({
      kind: "admitted",
      spec: { queue: "batch", priority: 10, resources: { cpu: 2 } },
    });
  });

  test("a default queue that does not exist fails validation naming queue", async () => {
    const { a } = admission();
    const admitted = await a.admit(
      "adm-queue-2",
      written({ template: "nowhere" }),
      queued({ template: "nowhere" }),
    );
    expect(admitted).toEqual({
      kind: "failed",
      reason:
        'failed validation against job template nowhere: queue: no queue named "nowhere" (create it with `cairn queue create`)',
    });
  });
});

describe("given a submission that fails validation", () => {
  test("its job and session are stored once and its end announced once, however often it is delivered", async () => {
    const { a, published, store } = admission();
    const bad = written({ template: "batch", resources: { cpu: 8 } });
    const first = await a.admit("adm-fail-1", bad, queued());
    const again = await a.admit("adm-fail-1", bad, queued());
    const reason =
      "failed validation against job template batch: resources.cpu: must be at most 4 (template batch), got 8";
    expect(first).toEqual({ kind: "failed", reason });
    expect(again).toEqual({ kind: "failed", reason });
    expect(published.map((p) => [p.jobId, p.state, p.reason])).toEqual([["adm-fail-1", "FAILED", reason]]);
    const job = await store.getJob("adm-fail-1");
    expect(job?.final).toMatchObject({ state: "FAILED", reason });
    expect((await store.getSession("adm-fail-1"))?.session.status).toBe("TERMINATED");
  });
});

describe("given a repeat of a submission (a redelivered event)", () => {
  test("one admitted before, its template tightened since, is not failed: it is the stored job", async () => {
    const { a, store } = admission();
    await templates.createTemplate({ name: "loose", defaults: {}, constraints: {} }, T0);
    const admitted = await a.admit("adm-repeat-1", written({ template: "loose" }), queued());
    if (admitted.kind !== "admitted") throw new Error("expected admitted");
    // As Jobs.submit stores it: the job and a PENDING session.
    await store.createJob({
      id: "adm-repeat-1",
      spec: admitted.spec,
      sessionIds: ["adm-repeat-1"],
      childIds: [],
      createdAtMs: T0,
    });
    await store.createSession(newSession("adm-repeat-1", admitted.spec, T0));
    await templates.updateTemplate(
      { name: "loose", defaults: {}, constraints: { replicas: { max: 0 } } },
      T0,
    );
    const fresh = admission(); // no cached template
    expect(await fresh.a.admit("adm-repeat-1", written({ template: "loose" }), queued())).toEqual({
      kind: "admitted",
      spec: admitted.spec,
    });
    expect((await store.getJob("adm-repeat-1"))?.final).toBeUndefined();
  });

  test("one whose failure was interrupted (the job stored, not its sessions) is finished", async () => {
    const { a, store, published } = admission();
    const bad = written({ template: "batch", resources: { cpu: 8 } });
    const spec = parseSessionSpec({ ...bad, queue: "batch", resources: { cpu: 8 } });
    await store.createJob({
      id: "adm-half-1",
      spec,
      sessionIds: ["adm-half-1"],
      childIds: [],
      createdAtMs: T0,
    });
    expect(await a.admit("adm-half-1", bad, queued())).toMatchObject({ kind: "failed" });
    expect((await store.getSession("adm-half-1"))?.session.status).toBe("TERMINATED");
    expect(published.map((p) => p.state)).toEqual(["FAILED"]);
  });
});

describe("given a submission filter", () => {
  test("it is asked once per job: a redelivered submission of a stored job is validated, not filtered", async () => {
    const filter = recordingFilter({ decision: "accept" });
    const { a, store } = admission(filter);
    expect(await a.admit("adm-once-1", written(), queued())).toMatchObject({ kind: "admitted" });
    const spec = queued();
    await store.createJob({
      id: "adm-once-1",
      spec,
      sessionIds: ["adm-once-1"],
      childIds: [],
      createdAtMs: T0,
    });
    expect(await a.admit("adm-once-1", written(), queued())).toMatchObject({ kind: "admitted" });
    expect(filter.asked).toEqual(["adm-once-1"]);
  });

  test("a filter that never answers is given up on at its timeout, and fails closed", async () => {
    const { a } = admission({ ask: () => new Promise(() => {}) });
    expect(await a.admit("adm-hang-1", written(), queued())).toEqual({
      kind: "failed",
      reason: "the submission filter failed (no answer within 500 ms) and fails closed",
    });
  });

  test("the filter's abort signal fires at the timeout", async () => {
    let aborted = false;
    const { a } = admission({
      ask: (_request, signal) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener("abort", () => {
            aborted = true;
            reject(new Error("aborted"));
          }),
        ),
    });
    await a.admit("adm-abort-1", written(), queued());
    expect(aborted).toBe(true);
  });
});

test("a failed template read is not kept: the next submission reads again", async () => {
  let reads = 0;
  const flaky = {
    getTemplate: (name: string) => {
      reads++;
      return reads === 1 ? Promise.reject(new Error("throttled")) : templates.getTemplate(name);
    },
  };
  const { a } = admission(undefined, { templates: flaky });
  await expect(a.admit("adm-flaky-1", written({ template: "batch" }), queued())).rejects.toThrow("throttled");
  expect(await a.admit("adm-flaky-1", written({ template: "batch" }), queued())).toMatchObject({
    kind: "admitted",
  });
  expect(reads).toBe(2);
});

describe("the Lambda adapter", () => {
  const fakeClient = (out: { Payload?: Uint8Array; FunctionError?: string }) => {
    const sent: { input: unknown; signal: unknown }[] = [];
    const client = {
      send: (command: { input: unknown }, options: { abortSignal?: unknown }) => {
        sent.push({ input: command.input, signal: options.abortSignal });
        return Promise.resolve(out);
      },
    } as unknown as LambdaClient;
    return { client, sent };
  };
  const request = { jobId: "j", spec: queued(), template: "Default" };
  const ARN = "arn:aws:lambda:eu-west-1:123456789012:function:f";

  test("invokes the function synchronously with the request, passing the caller's signal; returns its reply", async () => {
    const { client, sent } = fakeClient({ Payload: new TextEncoder().encode('{"decision":"accept"}') });
    const signal = new AbortController().signal;
    expect(await new LambdaSubmissionFilter(client, ARN).ask(request, signal)).toEqual({
      decision: "accept",
    });
    const [only] = sent;
    expect(only?.signal).toBe(signal);
    const input = only?.input as { FunctionName: string; InvocationType: string; Payload: Uint8Array };
    expect([input.FunctionName, input.InvocationType]).toEqual([ARN, "RequestResponse"]);
    expect(JSON.parse(new TextDecoder().decode(input.Payload))).toMatchObject({
      jobId: "j",
      template: "Default",
    });
  });

  test("a function error is a failure, with what the function said", async () => {
    const { client } = fakeClient({
      FunctionError: "Unhandled",
      Payload: new TextEncoder().encode('{"errorMessage":"boom"}'),
    });
    await expect(
      new LambdaSubmissionFilter(client, ARN).ask(request, new AbortController().signal),
    ).rejects.toThrow('the filter function failed (Unhandled): {"errorMessage":"boom"}');
  });

  test("a reply that is not JSON is a failure", async () => {
    const { client } = fakeClient({ Payload: new TextEncoder().encode("ok") });
    await expect(
      new LambdaSubmissionFilter(client, ARN).ask(request, new AbortController().signal),
    ).rejects.toThrow("the filter function's reply is not JSON: ok");
  });
});
