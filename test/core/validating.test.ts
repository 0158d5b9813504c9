/**
 * HPC Pack's Validating, visible for a submission that passes as for one that fails. HPC Pack:
 * "Submitted | The job or task has been submitted and is awaiting validation before it can be
 * queued. Validating | … the Job Scheduler service confirms permissions, applies default settings
 * for any properties that the job owner did not specify, and validates each property against
 * constraints. … During validation, the job might also pass through a custom submission filter
 * application … If the job passes validation, it moves to the Queued state. If the job does not
 * pass validation, the job displays an error message and the job moves to the Failed state."
 *
 * A passing submission's session is created with what was checked (history.ts admissionSummary);
 * the execution's own first record, Submit SUBMITTED at seq 0, carries it as its message, and
 * the HPC view reads that record (or the session) as Submitted → Validating → Queued.
 */
import { describe, expect, test } from "vitest";
import { stageEntryWrite } from "../../functions/core/effects.ts";
import { admissionSummary, validationFailedRecord } from "../../functions/core/history.ts";
import { hpcAdmissionSteps, hpcSessionAdmissionSteps } from "../../functions/core/hpc-view.ts";
import type { StageTransition } from "../../functions/core/model.ts";
import { newSession, T0 } from "../store-fixtures.ts";

const SUBMITTED: StageTransition = { from: "PENDING", to: "PENDING", result: "SUBMITTED", handler: "Submit" };

describe("what validation checked, in words", () => {
  test("the template applied, the sizes, IAM as the permission check, the filter's answer", () => {
    expect(admissionSummary({ template: "small", filter: "accepted" })).toBe(
      "validated: job template small applied (its defaults set, its constraints checked), " +
        "sizes within the limits, permission by IAM; the submission filter accepted it; queued",
    );
    expect(admissionSummary({ template: "Default" })).toContain("; no submission filter configured; queued");
    expect(admissionSummary({ template: "Default", filter: "modified" })).toContain(
      "the submission filter modified it, and the modified spec was validated again",
    );
    expect(
      admissionSummary({ template: "Default", filter: { failedOpen: "no answer within 1000 ms" } }),
    ).toContain("the submission filter did not answer (no answer within 1000 ms) and fails open");
    expect(admissionSummary({ template: "Default", filter: "asked before" })).toContain(
      "the submission filter was asked when it was first received",
    );
  });
});

describe("the execution's first record", () => {
  test("Submit SUBMITTED at seq 0 carries what validation checked: the job passed validation and is queued", () => {
    const created = newSession("s-valid", { status: "PENDING", replicas: 1, taskToken: null });
    const admission = admissionSummary({ template: "small", filter: "accepted" });
    const s = { ...created, session: { ...created.session, admission } };
    const write = stageEntryWrite({ ...s, transition: SUBMITTED, taskToken: "t-1", nowMs: T0 + 10 });
    expect(write.history).toEqual([
      expect.objectContaining({
        seq: 0,
        handler: "Submit",
        result: "SUBMITTED",
        fromStatus: "PENDING",
        toStatus: "PENDING",
        message: admission,
      }),
    ]);
    expect(hpcAdmissionSteps(write.history?.[0])).toEqual(["Submitted", "Validating", "Queued"]);
  });

  test("a session created without it (before it was recorded) keeps a first record without a message", () => {
    const s = newSession("s-old", { status: "PENDING", replicas: 1, taskToken: null });
    const write = stageEntryWrite({ ...s, transition: SUBMITTED, taskToken: "t-1", nowMs: T0 + 10 });
    expect(write.history?.[0]).not.toHaveProperty("message");
    expect(hpcSessionAdmissionSteps(s.session)).toBeUndefined();
  });

  test("only the submission's record takes it: a later record keeps its own message or none", () => {
    const created = newSession("s-later", { status: "PENDING", replicas: 1, taskToken: null });
    const s = { ...created, session: { ...created.session, admission: "validated: …" } };
    const placed: StageTransition = {
      from: "PENDING",
      to: "SCHEDULED",
      result: "SUCCESS",
      handler: "ScheduleNewSessions",
    };
    const write = stageEntryWrite({ ...s, transition: placed, taskToken: "t-2", nowMs: T0 + 20 });
    expect(write.history?.[0]).not.toHaveProperty("message");
  });
});

describe("the HPC view of the steps before Queued", () => {
  test("passed: Submitted → Validating → Queued, from the record or from the session alone", () => {
    expect(hpcAdmissionSteps({ handler: "Submit", result: "SUBMITTED" })).toEqual([
      "Submitted",
      "Validating",
      "Queued",
    ]);
    const created = newSession("s-q", { status: "RUNNING", replicas: 1 });
    expect(hpcSessionAdmissionSteps({ ...created.session, admission: "validated: …" })).toEqual([
      "Submitted",
      "Validating",
      "Queued",
    ]);
  });

  test("failed: Submitted → Validating → Failed, from the one record it is stored with", () => {
    const record = validationFailedRecord("s-f", "failed validation against job template small: …", T0);
    expect(hpcAdmissionSteps(record)).toEqual(["Submitted", "Validating", "Failed"]);
    const created = newSession("s-f", { status: "TERMINATED", replicas: 1 });
    expect(hpcSessionAdmissionSteps({ ...created.session, lastHistory: record })).toEqual([
      "Submitted",
      "Validating",
      "Failed",
    ]);
  });

  test("any other record stands for no admission step", () => {
    expect(hpcAdmissionSteps({ handler: "ScheduleNewSessions", result: "SUCCESS" })).toBeUndefined();
    expect(hpcAdmissionSteps({ handler: "Submit", result: "SKIPPED" })).toBeUndefined();
    expect(hpcAdmissionSteps(undefined)).toBeUndefined();
  });
});
