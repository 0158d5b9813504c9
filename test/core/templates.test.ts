// Job templates (HPC Pack's "Validating"): defaults applied deep, each constraint
// kind passing and failing with its error text verbatim, the run-time check on the merged spec, the
// Default template and an unknown one, and template documents refused with every problem named.
import { describe, expect, test } from "vitest";
import {
  BUILT_IN_DEFAULT_TEMPLATE,
  parseJobTemplate,
  templateNameOf,
  validateSubmission,
  validationFailureReason,
  type JobTemplate,
} from "../../functions/core/templates.ts";

const SMALL: JobTemplate = {
  name: "small",
  defaults: { resources: { cpu: 1 }, timeouts: { running: 600 } },
  constraints: {
    "resources.cpu": { max: 2 },
    "timeouts.running": { max: 3600 },
    queue: { allowed: ["default", "batch"] },
  },
};

const written = (extra: Record<string, unknown> = {}) => ({
  name: "train",
  command: ["/bin/true"],
  template: "small",
  ...extra,
});

function template(constraints: JobTemplate["constraints"]): JobTemplate {
  return { name: "t", defaults: {}, constraints };
}

describe("given a template's defaults", () => {
  test("when the submission leaves a field unset, then the template's default applies, deep", () => {
    const result = validateSubmission(written({ resources: { memoryMiB: 512 } }), SMALL);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    // cpu from the template, memoryMiB as written, the other timeouts the spec's own defaults.
    expect(result.spec.resources).toEqual({ cpu: 1, memoryMiB: 512 });
    expect(result.spec.timeouts.running).toBe(600);
    expect(result.spec.timeouts.pending).toBe(3600);
    expect(result.spec.template).toBe("small");
  });

  test("when the submission sets the field, then what it wrote wins", () => {
    const result = validateSubmission(written({ resources: { cpu: 2 }, timeouts: { running: 60 } }), SMALL);
    expect(result.ok && result.spec.resources.cpu).toBe(2);
    expect(result.ok && result.spec.timeouts.running).toBe(60);
  });

  test("env maps merge key by key; arrays are replaced, never merged", () => {
    const t: JobTemplate = {
      name: "t",
      defaults: { env: { A: "1", B: "2" }, retry: { policies: ["x"] } },
      constraints: {},
    };
    const result = validateSubmission({ ...written(), env: { B: "3" }, retry: { policies: ["y"] } }, t);
    expect(result.ok && result.spec.env).toEqual({ A: "1", B: "3" });
    expect(result.ok && result.spec.retry?.policies).toEqual(["y"]);
  });
});

describe("given each constraint kind", () => {
  const cases: {
    kind: string;
    constraints: JobTemplate["constraints"];
    pass: Record<string, unknown>;
    fail: Record<string, unknown>;
    issue: { path: string; message: string };
  }[] = [
    {
      kind: "max",
      constraints: { "resources.cpu": { max: 2 } },
      pass: { resources: { cpu: 2 } },
      fail: { resources: { cpu: 4 } },
      issue: { path: "resources.cpu", message: "must be at most 2 (template t), got 4" },
    },
    {
      kind: "min",
      constraints: { priority: { min: 10 } },
      pass: { priority: 10 },
      fail: { priority: 5 },
      issue: { path: "priority", message: "must be at least 10 (template t), got 5" },
    },
    {
      kind: "allowed",
      constraints: { queue: { allowed: ["default", "batch"] } },
      pass: { queue: "batch" },
      fail: { queue: "gpu" },
      issue: { path: "queue", message: 'must be one of default, batch (template t), got "gpu"' },
    },
    {
      kind: "allowed (a boolean)",
      constraints: { rerunnable: { allowed: [true] } },
      pass: { rerunnable: true },
      fail: { rerunnable: false },
      issue: { path: "rerunnable", message: "must be one of true (template t), got false" },
    },
    {
      kind: "required",
      constraints: { "timeouts.job": { required: true } },
      pass: { timeouts: { job: 7200 } },
      fail: {},
      issue: { path: "timeouts.job", message: "required (template t): the submission must set it" },
    },
  ];

  for (const c of cases) {
    test(`${c.kind}: when the submission obeys it, then it passes`, () => {
      const result = validateSubmission({ ...written(), ...c.pass }, template(c.constraints));
      expect(result).toMatchObject({ ok: true });
    });
    test(`${c.kind}: when the submission breaks it, then the field and reason are named`, () => {
      const result = validateSubmission({ ...written(), ...c.fail }, template(c.constraints));
      expect(result.ok).toBe(false);
      expect(!result.ok && result.issues).toEqual([c.issue]);
    });
  }

  test("a constraint on an optional field the submission leaves unset is not broken (only required is)", () => {
    expect(validateSubmission(written(), template({ "timeouts.job": { max: 60 } })).ok).toBe(true);
  });

  test("a template default must also pass the constraints: required is only met by the submission", () => {
    const t: JobTemplate = {
      name: "t",
      defaults: { priority: 5 },
      constraints: { priority: { required: true } },
    };
    expect(validateSubmission(written(), t)).toMatchObject({
      ok: false,
      issues: [{ path: "priority", message: "required (template t): the submission must set it" }],
    });
  });

  test("every violated field is listed, in the spec's field order, and the reason names them all", () => {
    const result = validateSubmission(
      written({ queue: "gpu", resources: { cpu: 8 }, timeouts: { running: 7200 } }),
      SMALL,
    );
    expect(!result.ok && result.issues).toEqual([
      { path: "queue", message: 'must be one of default, batch (template small), got "gpu"' },
      { path: "resources.cpu", message: "must be at most 2 (template small), got 8" },
      { path: "timeouts.running", message: "must be at most 3600 (template small), got 7200" },
    ]);
    expect(!result.ok && result.spec?.resources.cpu).toBe(8);
    expect(validationFailureReason("small", !result.ok ? result.issues : [])).toBe(
      'failed validation against job template small: queue: must be one of default, batch (template small), got "gpu"; ' +
        "resources.cpu: must be at most 2 (template small), got 8; " +
        "timeouts.running: must be at most 3600 (template small), got 7200",
    );
  });
});

describe("given the seed's rule that no task runs longer than its job", () => {
  test("when a template's default task limit exceeds the job's limit the submission sets, then it fails naming timeouts.running", () => {
    const result = validateSubmission(written({ timeouts: { job: 300 } }), SMALL);
    expect(!result.ok && result.issues).toEqual([
      {
        path: "timeouts.running",
        message: "must be at most timeouts.job (300): no task may run longer than its job's run-time limit",
      },
    ]);
  });

  test("when the job's limit covers the task's, then it passes", () => {
    expect(validateSubmission(written({ timeouts: { job: 600 } }), SMALL).ok).toBe(true);
  });
});

describe("given the template a submission names", () => {
  test("no template named: Default, built in, which changes nothing", () => {
    expect(templateNameOf({ name: "x" })).toBe("Default");
    const result = validateSubmission({ name: "x", command: ["true"] }, BUILT_IN_DEFAULT_TEMPLATE);
    expect(result.ok && result.spec.resources).toEqual({ cpu: 1, memoryMiB: 256 });
    expect(result.ok && "template" in result.spec).toBe(false);
  });

  test("a template that does not exist fails validation naming template", () => {
    expect(validateSubmission(written({ template: "big" }), undefined)).toEqual({
      ok: false,
      issues: [{ path: "template", message: 'no job template named "big" (see `cairn template list`)' }],
    });
  });
});

describe("given a template document", () => {
  test("the example template is valid", () => {
    expect(parseJobTemplate(SMALL)).toEqual({ success: true, data: SMALL });
  });

  const refused: { doc: Record<string, unknown>; issues: { path: string; message: string }[] }[] = [
    {
      doc: { name: "t", constraints: { "resources.gpu": { max: 1 } } },
      issues: [
        {
          path: 'constraints["resources.gpu"]',
          message:
            "unknown field path (expected one of name, queue, priority, replicas, coscheduled, perAgent, maxTaskFailures, maxPendingReturns, rerunnable, schedulingTimeout, parent, executor, image, resources.cpu, resources.memoryMiB, timeouts.pending, timeouts.scheduled, timeouts.preparing, timeouts.prepared, timeouts.creating, timeouts.running, timeouts.terminating, timeouts.job, maxTries.pending, maxTries.scheduled, maxTries.preparing, maxTries.prepared, maxTries.creating, maxTries.running, maxTries.terminating, retry.maxRetriesFailure, retry.maxRetriesPreemption, retry.maxRetriesStart)",
        },
      ],
    },
    {
      doc: { name: "t", constraints: { queue: { maximum: 1 } } },
      issues: [
        {
          path: "constraints.queue.maximum",
          message: "unknown field (expected one of required, min, max, allowed)",
        },
        {
          path: "constraints.queue",
          message: "names no constraint (expected one of required, min, max, allowed)",
        },
      ],
    },
    {
      doc: { name: "t", constraints: { queue: { max: 1 } } },
      issues: [
        { path: "constraints.queue.max", message: "applies only to numeric fields (queue is a string)" },
      ],
    },
    {
      doc: { name: "t", constraints: { "resources.cpu": { min: 4, max: 2 } } },
      issues: [{ path: 'constraints["resources.cpu"]', message: "min (4) is greater than max (2)" }],
    },
    {
      doc: { name: "t", constraints: { queue: { allowed: [1] } } },
      issues: [{ path: "constraints.queue.allowed[0]", message: "must be a string, like queue (got 1)" }],
    },
    {
      doc: { name: "t", constraints: { queue: {} } },
      issues: [
        {
          path: "constraints.queue",
          message: "names no constraint (expected one of required, min, max, allowed)",
        },
      ],
    },
    {
      doc: { name: "t", defaults: { resources: { cpu: -1 } } },
      issues: [{ path: "defaults.resources.cpu", message: "must be greater than 0" }],
    },
    {
      doc: { name: "t", defaults: { colour: "red" } },
      issues: [
        {
          path: "defaults.colour",
          message:
            "unknown field (expected one of name, queue, priority, replicas, coscheduled, perAgent, maxTaskFailures, schedulingTimeout, parent, nodeSelector, executor, image, architecture, resources, command, env, timeouts, maxTries, maxPendingReturns, rerunnable, retry, template)",
        },
      ],
    },
    {
      doc: { name: "t", defaults: { command: ["x"] } },
      issues: [{ path: "defaults.command", message: "a template cannot give a default for it" }],
    },
    {
      doc: { name: "t", defaults: { resources: { cpu: 4 } }, constraints: { "resources.cpu": { max: 2 } } },
      issues: [{ path: "defaults.resources.cpu", message: "must be at most 2 (template t), got 4" }],
    },
    {
      doc: { name: "t", colour: 1 },
      issues: [
        {
          path: "colour",
          message: "unknown field (expected one of name, description, defaults, constraints)",
        },
      ],
    },
  ];
  for (const { doc, issues } of refused) {
    test(`refused with every problem named: ${JSON.stringify(doc)}`, () => {
      expect(parseJobTemplate(doc)).toEqual({ success: false, issues });
    });
  }
});
