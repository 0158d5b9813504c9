/**
 * HPC Pack's Validating end to end, in the embedded runtime with real processes: a submission
 * validated against its job template (defaults applied, constraints checked, the run-time check),
 * its first history record saying so (Submitted → Validating → Queued), one violating its
 * template stored and ended Failed with every field listed (Submitted → Validating → Failed), an
 * unknown template named; the submission filter (a local module) rejecting,
 * modifying, and failing — a timeout and a malformed answer — closed (this runtime's filter
 * fails closed; e2e-admission-open.test.ts fails open).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { SessionStatus } from "../functions/core/status.ts";
import { FILTER_MODULE, templatesOf, waitForJobEnd } from "./support/admission.ts";
import { runCairn } from "./support/cli.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
afterEach(() => assertLifecycleInvariants(rt));
let n = 0;
const newId = (label: string) => `adm-${label}-${Date.now().toString(36)}-${n++}`;

beforeAll(async () => {
  rt = await startTestRuntime({
    agents: 1,
    agentCapacity: { cpu: 4, memoryMiB: 4096 },
    submissionFilter: { module: FILTER_MODULE, timeoutMs: 1_000, onFailure: "reject" },
  });
  // The issue's example template.
  await templatesOf(rt).createTemplate(
    {
      name: "small",
      defaults: { resources: { cpu: 1 }, timeouts: { running: 600 } },
      constraints: {
        "resources.cpu": { max: 2 },
        "timeouts.running": { max: 3600 },
        queue: { allowed: ["default", "batch"] },
      },
    },
    Date.now(),
  );
  // A queue the template does not allow (an unknown one is refused before validation).
  await rt.store.createQueue({ name: "gpu", priority: 0, retryPolicies: [] }, Date.now());
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

describe("given the job template small", () => {
  test("a submission within it runs with the template's defaults applied", async () => {
    const id = newId("fits");
    // As written: no cpu and no running limit, so the template's apply.
    await rt.submit({
      sessionId: id,
      spec: { name: "fits", template: "small", resources: { memoryMiB: 64 }, command: ["/bin/true"] },
    });
    const ended = await waitForJobEnd(rt, id);
    expect(ended.job.final?.state).toBe("SUCCEEDED");
    expect(ended.job.spec.template).toBe("small");
    expect(ended.job.spec.resources).toEqual({ cpu: 1, memoryMiB: 64 });
    expect(ended.job.spec.timeouts.running).toBe(600);
    expect(ended.hpc).toBe("Finished");
    // Validating is visible: the execution's own first record says what validation checked.
    const sessionId = ended.sessions[0]!.session.id;
    const [first, second] = await rt.store.listHistory(sessionId);
    expect(first).toMatchObject({
      seq: 0,
      handler: "Submit",
      result: "SUBMITTED",
      fromStatus: "PENDING",
      toStatus: "PENDING",
      message:
        "validated: job template small applied (its defaults set, its constraints checked), " +
        "sizes within the limits, permission by IAM; the submission filter accepted it; queued",
    });
    expect(second).toMatchObject({ seq: 1, handler: "ScheduleNewSessions" });
    // HPC Pack's steps before Queued, as `cairn history` and `cairn get` show them.
    const history = await runCairn(rt.dataDir, ["history", sessionId]);
    expect(history.stdout).toMatch(
      /\n0 +\S+ +Submit +SUBMITTED +PENDING +1 +HPC Submitted → Validating → Queued: validated: job template small applied/,
    );
    const got = await runCairn(rt.dataDir, ["get", sessionId]);
    expect(got.stdout).toMatch(
      /\n {2}hpc +Finished \(HPC Pack's state; admitted Submitted → Validating → Queued\)\n/,
    );
  }, 60_000);

  test("a submission violating it is stored and ends Failed, every violated field listed", async () => {
    const id = newId("too-big");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "too-big",
        template: "small",
        queue: "gpu",
        resources: { cpu: 4 },
        timeouts: { running: 7200 },
        command: ["/bin/true"],
      },
    });
    const ended = await waitForJobEnd(rt, id);
    const reason =
      'failed validation against job template small: queue: must be one of default, batch (template small), got "gpu"; ' +
      "resources.cpu: must be at most 2 (template small), got 4; " +
      "timeouts.running: must be at most 3600 (template small), got 7200";
    expect(ended.job.final).toMatchObject({ state: "FAILED", reason });
    // Never queued: its session ended before any stage, its kernel never started; HPC Failed.
    const [only] = ended.sessions;
    expect(only?.session.status).toBe(SessionStatus.TERMINATED);
    expect(only?.session.pendingReason).toBe(reason);
    expect(only?.kernels.map((k) => [k.status, k.startedAtMs, k.message])).toEqual([
      ["TERMINATED", undefined, reason],
    ]);
    expect(ended.hpc).toBe("Failed");
    expect(ended.sessionHpc).toEqual(["Failed"]);
    // Its history says it went from Submitted through Validating to Failed, and why.
    expect(
      (await rt.store.listHistory(only!.session.id)).map((r) => [
        r.seq,
        `${r.handler} ${r.result} ${r.fromStatus}->${r.toStatus}`,
        r.message,
      ]),
    ).toEqual([[0, "Submit FAILED PENDING->TERMINATED", reason]]);
    const history = await runCairn(rt.dataDir, ["history", only!.session.id]);
    expect(history.stdout).toMatch(
      /PENDING → TERMINATED +1 +HPC Submitted → Validating → Failed: failed validation against job template small/,
    );
    // Not an Event Rejected: no refusal is recorded for it.
    expect(await rt.store.listRejections(id)).toEqual([]);
  }, 60_000);

  test("a task run-time limit from the template past the job's own fails naming timeouts.running", async () => {
    const id = newId("job-limit");
    await rt.submit({
      sessionId: id,
      spec: { name: "job-limit", template: "small", timeouts: { job: 300 }, command: ["/bin/true"] },
    });
    const ended = await waitForJobEnd(rt, id);
    expect(ended.job.final?.reason).toBe(
      "failed validation against job template small: timeouts.running: must be at most timeouts.job (300): " +
        "no task may run longer than its job's run-time limit",
    );
  }, 60_000);

  test("independent tasks that fail validation each end Failed", async () => {
    const id = newId("tasks");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "tasks",
        template: "small",
        replicas: 3,
        coscheduled: false,
        resources: { cpu: 3 },
        command: ["/bin/true"],
      },
    });
    const ended = await waitForJobEnd(rt, id);
    expect(ended.job.final?.state).toBe("FAILED");
    expect(ended.sessions.map((s) => s.session.status)).toEqual(["TERMINATED", "TERMINATED", "TERMINATED"]);
    expect(ended.sessionHpc).toEqual(["Failed", "Failed", "Failed"]);
    for (const { session } of ended.sessions) {
      const history = await rt.store.listHistory(session.id);
      expect(history.map((r) => [r.seq, r.result, r.message])).toEqual([
        [0, "FAILED", ended.job.final?.reason],
      ]);
    }
  }, 60_000);

  test("a gang too large for its session item to hold its kernels keeps the failure's record too", async () => {
    const id = newId("wide");
    await rt.submit({
      sessionId: id,
      spec: { name: "wide", template: "small", replicas: 9, resources: { cpu: 3 }, command: ["/bin/true"] },
    });
    const ended = await waitForJobEnd(rt, id);
    const reason =
      "failed validation against job template small: resources.cpu: must be at most 2 (template small), got 3";
    expect(ended.job.final).toMatchObject({ state: "FAILED", reason });
    const [only] = ended.sessions;
    expect(only?.kernels).toHaveLength(9);
    expect(ended.sessionHpc).toEqual(["Failed"]);
    const history = await rt.store.listHistory(only!.session.id);
    expect(history.map((r) => [r.seq, r.handler, r.result, r.toStatus, r.message])).toEqual([
      [0, "Submit", "FAILED", "TERMINATED", reason],
    ]);
  }, 60_000);
});

test("a submission naming a template that does not exist fails naming template", async () => {
  const id = newId("no-template");
  await rt.submit({ sessionId: id, spec: { name: "x", template: "huge", command: ["/bin/true"] } });
  const ended = await waitForJobEnd(rt, id);
  expect(ended.job.final?.reason).toBe(
    'failed validation against job template huge: template: no job template named "huge" (see `cairn template list`)',
  );
}, 60_000);

describe("given a submission filter that fails closed", () => {
  test("the filter rejecting: the job ends Failed with its reason", async () => {
    const id = newId("reject");
    await rt.submit({ sessionId: id, spec: { name: "reject-me", command: ["/bin/true"] } });
    const ended = await waitForJobEnd(rt, id);
    expect(ended.job.final).toMatchObject({
      state: "FAILED",
      reason: `rejected by the submission filter: no jobs named reject-me on this cluster (job ${id})`,
    });
    expect(ended.hpc).toBe("Failed");
    // The filter's refusal is the session's one history record.
    const history = await rt.store.listHistory(ended.sessions[0]!.session.id);
    expect(history.map((r) => [r.handler, r.result, r.toStatus, r.message])).toEqual([
      [
        "Submit",
        "FAILED",
        "TERMINATED",
        `rejected by the submission filter: no jobs named reject-me on this cluster (job ${id})`,
      ],
    ]);
  }, 60_000);

  test("the filter modifying: the modified spec is what runs", async () => {
    const id = newId("modify");
    await rt.submit({ sessionId: id, spec: { name: "modify-me", command: ["/bin/false"] } });
    const ended = await waitForJobEnd(rt, id);
    // Its kernel ran the filter's command, which checks the filter's variable.
    expect(ended.job.final?.state).toBe("SUCCEEDED");
    expect(ended.job.spec.env).toEqual({ FILTERED: "yes" });
    expect(ended.sessions[0]?.kernels[0]?.exitCode).toBe(0);
    const [first] = await rt.store.listHistory(ended.sessions[0]!.session.id);
    expect(first?.message).toBe(
      "validated: job template Default applied (its defaults set, its constraints checked), sizes within the limits, " +
        "permission by IAM; the submission filter modified it, and the modified spec was validated again; queued",
    );
  }, 60_000);

  test("the filter's modified spec is validated again", async () => {
    const id = newId("modify-bad");
    await rt.submit({
      sessionId: id,
      spec: { name: "modify-bad", template: "small", command: ["/bin/true"] },
    });
    const ended = await waitForJobEnd(rt, id);
    expect(ended.job.final?.reason).toBe(
      "the submission filter's modified spec failed validation against job template small: " +
        "resources.cpu: must be at most 2 (template small), got 8",
    );
  }, 60_000);

  test("the filter timing out fails closed: the job ends Failed saying so", async () => {
    const id = newId("slow");
    await rt.submit({ sessionId: id, spec: { name: "slow", command: ["/bin/true"] } });
    const ended = await waitForJobEnd(rt, id);
    expect(ended.job.final?.reason).toBe(
      "the submission filter failed (no answer within 1000 ms) and fails closed",
    );
  }, 60_000);

  test("a malformed answer is a failure, closed", async () => {
    const id = newId("nonsense");
    await rt.submit({ sessionId: id, spec: { name: "nonsense", command: ["/bin/true"] } });
    const ended = await waitForJobEnd(rt, id);
    expect(ended.job.final?.reason).toBe(
      "the submission filter failed (malformed answer (decision: must be accept, reject or modify)) and fails closed",
    );
  }, 60_000);
});

describe("through the CLI", () => {
  const file = (name: string, text: string): string => {
    const path = join(rt.dataDir, name);
    writeFileSync(path, text);
    return path;
  };

  test("cairn template create, then submit --wait of a spec violating it: exit 1, every field shown; get and job get say Failed", async () => {
    const created = await runCairn(rt.dataDir, [
      "template",
      "create",
      "-f",
      file(
        "tiny.yaml",
        "name: tiny\ndefaults: { resources: { memoryMiB: 64 } }\nconstraints:\n  resources.cpu: { max: 1 }\n  replicas: { max: 1 }\n",
      ),
    ]);
    expect(created).toMatchObject({ code: 0, stdout: "created job template tiny\n" });
    const id = newId("cli");
    const spec = file(
      "big.yaml",
      "name: big\ntemplate: tiny\nreplicas: 2\nresources: { cpu: 2 }\ncommand: [/bin/true]\n",
    );
    const run = await runCairn(rt.dataDir, ["submit", "-f", spec, "--id", id, "--wait", "--timeout", "60"]);
    const reason =
      "failed validation against job template tiny: replicas: must be at most 1 (template tiny), got 2; " +
      "resources.cpu: must be at most 1 (template tiny), got 2";
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).toContain(reason);
    const got = await runCairn(rt.dataDir, ["get", id, "-o", "json"]);
    expect(JSON.parse(got.stdout)).toMatchObject({ status: "TERMINATED", hpcState: "Failed" });
    const job = await runCairn(rt.dataDir, ["job", "get", id]);
    expect(job.stdout).toContain(reason);
  }, 120_000);

  test("a single session violating its template: submit --wait exits 1 and cairn get says why", async () => {
    const id = newId("cli-one");
    const spec = file("one.yaml", "name: one\ntemplate: tiny\nresources: { cpu: 2 }\ncommand: [/bin/true]\n");
    const run = await runCairn(rt.dataDir, ["submit", "-f", spec, "--id", id, "--wait", "--timeout", "60"]);
    const reason =
      "failed validation against job template tiny: resources.cpu: must be at most 1 (template tiny), got 2";
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).toContain(reason);
    const got = await runCairn(rt.dataDir, ["get", id]);
    expect(got.stdout).toContain(reason);
  }, 120_000);

  test("cairn submit sends the spec as written: the template's defaults fill what it leaves out", async () => {
    const id = newId("cli-defaults");
    const spec = file("small-job.yaml", "name: uses-small\ntemplate: small\ncommand: [/bin/true]\n");
    const run = await runCairn(rt.dataDir, ["submit", "-f", spec, "--id", id, "--wait", "--timeout", "60"]);
    expect(run.code).toBe(0);
    const job = await rt.store.getJob(id);
    expect(job?.spec.timeouts.running).toBe(600);
  }, 120_000);
});

describe("a Session Submitted carrying a service binding, sent by a client", () => {
  // What a deployment's replica carries; any client can put it on the bus with its own event.
  const binding = (routeId: string, deploymentId = routeId.replace(/-r\d+$/, "")) => ({
    deploymentId,
    routeId,
    probe: { path: "/", intervalSeconds: 5, timeoutSeconds: 2 },
  });

  test("is validated against its template like any submission: cpu 4 under small (max 2) ends Failed", async () => {
    const id = `${newId("svc-cpu")}-r0`;
    await rt.submit({
      sessionId: id,
      spec: { name: "svc-cpu", template: "small", resources: { cpu: 4 }, command: ["/bin/true"] },
      service: binding(id),
    });
    const ended = await waitForJobEnd(rt, id);
    const reason =
      "failed validation against job template small: resources.cpu: must be at most 2 (template small), got 4";
    expect(ended.job.final).toMatchObject({ state: "FAILED", reason });
    const [only] = ended.sessions;
    expect(only?.kernels.map((k) => [k.status, k.startedAtMs])).toEqual([["TERMINATED", undefined]]);
    // Still bound to its route, so a deployment reads why its replica never started.
    expect(only?.session.service?.routeId).toBe(id);
  }, 60_000);

  test("goes through the submission filter: a name the filter rejects never runs", async () => {
    const id = `${newId("svc-filtered")}-r0`;
    await rt.submit({
      sessionId: id,
      spec: { name: "reject-me", command: ["/bin/true"] },
      service: binding(id),
    });
    const ended = await waitForJobEnd(rt, id);
    expect(ended.job.final).toMatchObject({
      state: "FAILED",
      reason: `rejected by the submission filter: no jobs named reject-me on this cluster (job ${id})`,
    });
    expect(ended.sessions[0]?.kernels[0]?.startedAtMs).toBeUndefined();
  }, 60_000);

  test("naming a route the session is not named after is refused with the reason", async () => {
    const id = newId("svc-other");
    await rt.submit({
      sessionId: id,
      spec: { name: "svc-other", command: ["/bin/true"] },
      service: binding("victim-r0"),
    });
    await expect
      .poll(async () => (await rt.store.listRejections(id)).map((r) => r.reason), { timeout: 30_000 })
      .toEqual([
        `detail.service.routeId: a replica is one session named like its route (victim-r0); this submission makes session ${id}`,
      ]);
    expect(await rt.store.getSession(id)).toBeUndefined();
  }, 60_000);
});
