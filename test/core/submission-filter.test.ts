// The submission filter's contract: each decision, and every failure —
// an error, a timeout, a malformed answer — settled fail-open or fail-closed; texts verbatim.
import { describe, expect, test } from "vitest";
import { filterVerdict } from "../../functions/core/submission-filter.ts";

describe("given the filter's answer", () => {
  const cases: [string, unknown, unknown][] = [
    ["accept", { decision: "accept" }, { kind: "accept" }],
    [
      "reject with a reason",
      { decision: "reject", reason: "over budget" },
      { kind: "reject", reason: "rejected by the submission filter: over budget" },
    ],
    [
      "modify with a spec",
      { decision: "modify", spec: { name: "x", command: ["true"] } },
      { kind: "modify", spec: { name: "x", command: ["true"] } },
    ],
  ];
  for (const [what, answer, verdict] of cases) {
    test(`${what}: whatever the failure mode`, () => {
      expect(filterVerdict({ answer }, "reject")).toEqual(verdict);
      expect(filterVerdict({ answer }, "accept")).toEqual(verdict);
    });
  }
});

describe("given a failure", () => {
  const failures: [string, { answer: unknown } | { failure: string }, string][] = [
    ["a timeout", { failure: "no answer within 1000 ms" }, "no answer within 1000 ms"],
    ["an error", { failure: "the filter crashed" }, "the filter crashed"],
    [
      "an unknown decision",
      { answer: { decision: "maybe" } },
      "malformed answer (decision: must be accept, reject or modify)",
    ],
    ["a reject without a reason", { answer: { decision: "reject" } }, "malformed answer (reason: required)"],
    [
      "a modify without a spec",
      { answer: { decision: "modify", spec: "x" } },
      "malformed answer (spec: expected an object, got a string)",
    ],
    [
      "an extra field",
      { answer: { decision: "accept", note: 1 } },
      "malformed answer (note: unknown field (expected one of decision))",
    ],
    ["not an object", { answer: null }, "malformed answer ((root): expected an object, got null)"],
  ];
  for (const [what, outcome, why] of failures) {
    test(`${what}: fail-closed rejects saying why`, () => {
      expect(filterVerdict(outcome, "reject")).toEqual({
        kind: "reject",
        reason: `the submission filter failed (${why}) and fails closed`,
      });
    });
    test(`${what}: fail-open accepts`, () => {
      expect(filterVerdict(outcome, "accept")).toEqual({ kind: "accept" });
    });
  }
});
