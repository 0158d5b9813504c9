/**
 * The session spec users write (YAML or JSON), validated once at the edge. The zod schema is the
 * single source of truth: defaults are applied here, every problem is reported at once as
 * `<path>: <reason>`, and the parsed type is checked at compile time against `SessionSpec`.
 */
import { CoreError } from "./errors.ts";
import * as z from "zod";
import {
  DEFAULT_EXECUTOR,
  EXECUTORS,
  Executor,
  FARGATE_ARCHITECTURES,
  fargateResourceIssues,
  IMAGE_PATTERN,
  IMAGE_PATTERN_MESSAGE,
} from "./fargate.ts";
import { STAGE_KEYS, type SessionSpec, type SpecTimeouts, type StageKey } from "./model.ts";
import { BUDGET_DEFAULTS } from "./retry/budgets.ts";
import { invalidMessage, type ValidationIssue } from "./validation-issue.ts";
import { HISTORY_LIMIT_REASON, MAX_COUNTED_RETRIES, MAX_FREE_RETURNS } from "./retry/history-budget.ts";
import { IRIS_TASK_ENV_NAMES } from "./task-env.ts";

// ---------------------------------------------------------------------------------------------
// Limits and defaults (documented data: docs/reference/spec.md is generated from these).

/** Step Functions' maximum execution duration: no stage can wait longer than this. */
const ONE_YEAR_SECONDS = 31_536_000;

export const SPEC_LIMITS = {
  nameMaxLength: 128,
  priority: { min: -1000, max: 1000 },
  replicas: { min: 1, max: 64 },
  /** cpu must be greater than `exclusiveMin`. */
  cpu: { exclusiveMin: 0, max: 1024 },
  memoryMiB: { min: 1 },
  timeoutSeconds: { min: 1, max: ONE_YEAR_SECONDS },
  maxTries: { min: 1, max: 100 },
  maxTaskFailures: { min: 0 },
  /** Returns to PENDING in one run: more would pass the session's bound on free returns first. */
  maxPendingReturns: { min: 0, max: MAX_FREE_RETURNS },
  /** Each retry budget, and their sum: what one execution's history holds (retry/history-budget.ts). */
  retries: { min: 0, max: MAX_COUNTED_RETRIES },
} as const;

/** Session and job ids: 3 to 63 lowercase letters, digits or '-' (Step Functions execution names). */
export const ID_PATTERN = /^[a-z0-9][a-z0-9-]{2,62}$/;
export const ID_PATTERN_MESSAGE =
  "must be 3 to 63 lowercase letters, digits or '-', starting with a letter or digit";

/** Names (spec name, queue, agent id): a letter or digit, then letters, digits, `.`, `_`, `-`. */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** POSIX portable environment variable names. */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Cairn sets `CAIRN_SESSION_ID`, `CAIRN_KERNEL_INDEX`, … in every kernel; users may not. */
export const RESERVED_ENV_PREFIX = "CAIRN_";

/** Every field a user may omit, and the value it takes. */
export const SPEC_DEFAULTS: Omit<SessionSpec, "name" | "command"> &
  Required<
    Pick<SessionSpec, "coscheduled" | "perAgent" | "maxTaskFailures" | "maxPendingReturns" | "executor">
  > = deepFreeze({
  queue: "default",
  priority: 0,
  replicas: 1,
  coscheduled: true,
  perAgent: 1,
  maxTaskFailures: 0,
  maxPendingReturns: 5,
  executor: DEFAULT_EXECUTOR,
  resources: { cpu: 1, memoryMiB: 256 },
  env: {},
  timeouts: {
    pending: 3600,
    scheduled: 300,
    preparing: 600,
    prepared: 300,
    creating: 300,
    running: 86_400,
    terminating: 300,
  },
  maxTries: {
    pending: 3,
    scheduled: 3,
    preparing: 3,
    prepared: 3,
    creating: 3,
    running: 3,
    terminating: 3,
  },
});

// ---------------------------------------------------------------------------------------------
// Schema building blocks (shared with events.ts).

/** A strict object whose unknown-field error names the fields it does accept. */
export function strictObject<Shape extends z.ZodRawShape>(shape: Shape) {
  const expected = `unknown field (expected one of ${Object.keys(shape).join(", ")})`;
  return z.strictObject(shape, {
    error: (issue) => (issue.code === "unrecognized_keys" ? expected : undefined),
  });
}

export const nameSchema = z.string().min(1).max(SPEC_LIMITS.nameMaxLength).regex(NAME_PATTERN, {
  error: "must start with a letter or digit and contain only letters, digits, '.', '_' and '-'",
});

/** An argv element or env value: execve cannot pass a NUL byte. */
const noNulString = z.string().refine((s) => !s.includes("\0"), { error: "must not contain NUL characters" });

export const commandSchema = z.array(noNulString.min(1)).min(1).readonly();

export const envNameSchema = z.string().regex(ENV_NAME_PATTERN, {
  error: "must be a valid environment variable name (letters, digits and '_', not starting with a digit)",
});

/** Kernel environment as the control plane sends it: any valid name, including `CAIRN_…`. */
export const envSchema = z.record(envNameSchema, noNulString).readonly();

/** User-written environment: `CAIRN_…` names are reserved. */
export const userEnvSchema = z
  .record(
    envNameSchema
      .refine((name) => !name.startsWith(RESERVED_ENV_PREFIX), {
        error: `names starting with ${RESERVED_ENV_PREFIX} are reserved for Cairn`,
      })
      .refine((name) => !(IRIS_TASK_ENV_NAMES as readonly string[]).includes(name), {
        error: `${IRIS_TASK_ENV_NAMES.join(", ")} are reserved: Cairn sets them to the task's identity`,
      }),
    noNulString,
  )
  .readonly();

export const cpuSchema = z.number().gt(SPEC_LIMITS.cpu.exclusiveMin).max(SPEC_LIMITS.cpu.max);
export const memoryMiBSchema = z.number().int().min(SPEC_LIMITS.memoryMiB.min);

export const resourcesSchema = strictObject({
  /** CPUs (fractions allowed). */
  cpu: cpuSchema.default(SPEC_DEFAULTS.resources.cpu),
  /** Memory in MiB; a kernel that exceeds it is killed (OOMKilled, exit 137). */
  memoryMiB: memoryMiBSchema.default(SPEC_DEFAULTS.resources.memoryMiB),
}).readonly();

/** One strict object with a field per waiting stage, each defaulted individually. */
function perStage(field: (stage: StageKey) => z.ZodDefault<z.ZodNumber>) {
  const shape = Object.fromEntries(STAGE_KEYS.map((stage) => [stage, field(stage)])) as Record<
    StageKey,
    z.ZodDefault<z.ZodNumber>
  >;
  return strictObject(shape).readonly();
}

const timeoutSecondsSchema = z
  .number()
  .int()
  .min(SPEC_LIMITS.timeoutSeconds.min)
  .max(SPEC_LIMITS.timeoutSeconds.max, {
    error: `must be at most ${SPEC_LIMITS.timeoutSeconds.max} (1 year, the Step Functions execution limit)`,
  });

const stageTimeout = (stage: StageKey) =>
  timeoutSecondsSchema
    .default(SPEC_DEFAULTS.timeouts[stage])
    .describe(`Seconds the session may wait in ${stage.toUpperCase()} before the stage expires.`);

// HPC Pack's job and task states: the job's properties "encompass all task properties (for example, no task has a run
// time that is greater in value than the run time of the job)".
/** Seconds: each waiting stage's expiry, and the whole job's run-time limit (`job`). */
const timeoutsSchema = strictObject({
  pending: stageTimeout("pending"),
  scheduled: stageTimeout("scheduled"),
  preparing: stageTimeout("preparing"),
  prepared: stageTimeout("prepared"),
  creating: stageTimeout("creating"),
  running: timeoutSecondsSchema
    .optional()
    .describe("A task's run-time limit: default 86400, or `job` if that is less; at most `job`."),
  terminating: stageTimeout("terminating"),
  job: timeoutSecondsSchema
    .optional()
    .describe(
      "The whole job's run-time limit, counted from its first task's start (no default): past it, the job is cancelled.",
    ),
})
  .superRefine((t, ctx) => {
    if (t.job !== undefined && t.running !== undefined && t.running > t.job) {
      ctx.addIssue({
        code: "custom",
        path: ["running"],
        message: `must be at most timeouts.job (${t.job}): no task may run longer than its job's run-time limit`,
      });
    }
  })
  .transform((t): SpecTimeouts => ({
    pending: t.pending,
    scheduled: t.scheduled,
    preparing: t.preparing,
    prepared: t.prepared,
    creating: t.creating,
    running: t.running ?? Math.min(SPEC_DEFAULTS.timeouts.running, t.job ?? Infinity),
    terminating: t.terminating,
    ...(t.job !== undefined ? { job: t.job } : {}),
  }))
  .readonly();

const maxTriesSchema = perStage((stage) =>
  z
    .number()
    .int()
    .min(SPEC_LIMITS.maxTries.min)
    .max(SPEC_LIMITS.maxTries.max)
    .default(SPEC_DEFAULTS.maxTries[stage])
    .describe(`Handler tries in ${stage.toUpperCase()} before the stage gives up.`),
);

const retryBudgetSchema = z
  .number()
  .int()
  .min(SPEC_LIMITS.retries.min)
  .max(SPEC_LIMITS.retries.max, {
    error: `must be at most ${SPEC_LIMITS.retries.max}: ${HISTORY_LIMIT_REASON}`,
  });

// ---------------------------------------------------------------------------------------------
// The session spec. One line per field: a new field is its schema with its default.

export const LABEL_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$/;
/** Node labels an agent declares and a spec's nodeSelector matches. */
export const labelsSchema = z
  .record(
    z.string().regex(LABEL_KEY_PATTERN, {
      error: "label keys are 1 to 63 of letters, digits, '.', '_', '/', '-', starting with a letter or digit",
    }),
    z.string().max(63),
  )
  .refine((labels) => Object.keys(labels).length <= 32, { error: "at most 32 labels" });

/** A session's own priority; its queue's is added to it when it is queued. */
export const prioritySchema = z.number().int().min(SPEC_LIMITS.priority.min).max(SPEC_LIMITS.priority.max);

const sessionSpecShape = {
  /** The session's name, shown by `cairn list` and the dashboard; not its id. */
  name: nameSchema,
  /** The queue it waits in (it must exist, unless it is `default`): its priority and retry policies apply. */
  queue: nameSchema.default(SPEC_DEFAULTS.queue),
  priority: prioritySchema.default(SPEC_DEFAULTS.priority),
  /** The job's tasks: one gang of this many kernels (coscheduled), or this many sessions. */
  replicas: z
    .number()
    .int()
    .min(SPEC_LIMITS.replicas.min)
    .max(SPEC_LIMITS.replicas.max)
    .default(SPEC_DEFAULTS.replicas),
  // Job fields (Iris's jobs of many tasks). Optional with the defaults in SPEC_DEFAULTS, read through core/jobs.ts,
  // so a spec written before jobs existed reads back unchanged.
  /** true (the default): the tasks are one gang, placed all or none and retried together; false: independent tasks. */
  coscheduled: z.boolean().optional(),
  /** Co-scheduled only: at most this many of the job's tasks on one agent. */
  perAgent: z.number().int().min(1).max(SPEC_LIMITS.replicas.max).optional(),
  /** FAILED tasks the job tolerates before the rest are killed and the job fails (default 0). */
  maxTaskFailures: z
    .number()
    .int()
    .min(SPEC_LIMITS.maxTaskFailures.min)
    .max(SPEC_LIMITS.replicas.max)
    .optional(),
  /** Seconds a task may wait to be placed; the same as `timeouts.pending`, which it sets. */
  schedulingTimeout: z
    .number()
    .int()
    .min(SPEC_LIMITS.timeoutSeconds.min)
    .max(SPEC_LIMITS.timeoutSeconds.max)
    .optional(),
  /** A job this one depends on: it is cancelled when that job ends other than SUCCEEDED. */
  parent: z.string().regex(ID_PATTERN, { error: ID_PATTERN_MESSAGE }).optional(),
  /** Only agents carrying every one of these labels (`cairn agent --labels k=v`) may run the kernels. */
  nodeSelector: labelsSchema.optional(),
  // Optional with its default in SPEC_DEFAULTS (read through fargate.ts's executorOf), so specs
  // written before executors existed read back unchanged.
  /** `agent` (the default): kernels run on hosts running `cairn agent`; `fargate`: each kernel is an ECS task. */
  executor: z.enum(EXECUTORS).optional(),
  /** The container image each kernel's task runs `command` in: required with executor fargate, refused otherwise. */
  image: z.string().regex(IMAGE_PATTERN, { error: IMAGE_PATTERN_MESSAGE }).optional(),
  /** Fargate only: the CPU architecture `image` is built for (default x86_64; arm64 runs on Graviton). */
  architecture: z.enum(FARGATE_ARCHITECTURES).optional(),
  /** What each kernel reserves on its agent (or, with executor fargate, its task size); memory is enforced. */
  resources: resourcesSchema.prefault({}),
  /** The program and its arguments (argv, no shell). */
  command: commandSchema,
  /** Environment variables for each kernel; `CAIRN_…` and Iris's task identity names are reserved. */
  env: userEnvSchema.prefault({}),
  timeouts: timeoutsSchema.prefault({}),
  /** Handler tries per stage before the stage gives up (GIVE_UP). */
  maxTries: maxTriesSchema.prefault({}),
  // Optional with its default in SPEC_DEFAULTS, so a spec written before it existed reads back.
  /** Returns to PENDING a run may make before it starts (default 5); one more ends it FAILED. */
  maxPendingReturns: z
    .number()
    .int()
    .min(SPEC_LIMITS.maxPendingReturns.min)
    .max(SPEC_LIMITS.maxPendingReturns.max, {
      error: `must be at most ${SPEC_LIMITS.maxPendingReturns.max}: ${HISTORY_LIMIT_REASON}`,
    })
    .optional(),
  /** A run preempted while running is retried (the default), or, with false, ends the session FAILED. */
  rerunnable: z.boolean().optional(),
  /** How failed runs are retried: the session's budgets and its own retry policies (docs/retries.md). */
  retry: strictObject({
    // No defaults: a budget the user wrote caps retries even under policies (core/retry).
    /** Runs that ended with a non-zero exit, retried at most this many times (default 0). */
    maxRetriesFailure: retryBudgetSchema.optional(),
    /** Runs lost to a worker's loss or a preemption, retried at most this many times (default 100). */
    maxRetriesPreemption: retryBudgetSchema.optional(),
    /** Runs that could not start because of the cluster, retried automatically (default 3). */
    maxRetriesStart: z
      .number()
      .int()
      .min(0)
      .max(MAX_FREE_RETURNS, {
        error: `must be at most ${MAX_FREE_RETURNS}: ${HISTORY_LIMIT_REASON}`,
      })
      .optional(),
    /** The session's own retry policies, consulted after its queue's. */
    policies: z.array(nameSchema).max(16).readonly().optional(),
  })
    .readonly()
    .optional(),
  /** The job template the submission is validated against (core/templates.ts); absent: Default. */
  template: nameSchema.optional(),
};

export const SessionSpecSchema = strictObject(sessionSpecShape)
  .superRefine((spec, ctx) => {
    const issue = (path: string, message: string): void =>
      ctx.addIssue({ code: "custom", path: [path], message });
    if (spec.perAgent !== undefined && spec.coscheduled === false) {
      issue("perAgent", "only applies to a co-scheduled job (coscheduled: true)");
    }
    if (spec.executor === Executor.fargate) {
      if (spec.image === undefined) issue("image", "required with executor fargate: the image the task runs");
      // No agent runs a Fargate kernel, so agent placement fields could only leave it unplaceable.
      for (const field of ["nodeSelector", "perAgent"] as const) {
        if (spec[field] !== undefined)
          issue(field, "only applies to executor agent (Fargate tasks run on no agent)");
      }
      // A gang's kernels are one task each: the task size is checked per kernel.
      for (const { path, message } of fargateResourceIssues(spec.resources)) {
        ctx.addIssue({ code: "custom", path: path.split("."), message });
      }
    } else {
      if (spec.image !== undefined) {
        issue(
          "image",
          "only applies to executor fargate (agents run the command on their host, with no image)",
        );
      }
      if (spec.architecture !== undefined) {
        issue(
          "architecture",
          "only applies to executor fargate (an agent runs the command on its host's own architecture)",
        );
      }
    }
    if (spec.maxTaskFailures !== undefined && spec.maxTaskFailures >= spec.replicas) {
      issue(
        "maxTaskFailures",
        `must be less than replicas (${spec.replicas}): otherwise the job could never fail`,
      );
    }
    // schedulingTimeout is the PENDING stage's timer; a different explicit one is a contradiction.
    const pending = spec.timeouts.pending;
    if (
      spec.schedulingTimeout !== undefined &&
      pending !== SPEC_DEFAULTS.timeouts.pending &&
      pending !== spec.schedulingTimeout
    ) {
      issue("schedulingTimeout", `conflicts with timeouts.pending (${pending}): set one of them`);
    }
    // Every counted retry is one more run in the same execution: the two budgets together must fit.
    const failure = spec.retry?.maxRetriesFailure ?? BUDGET_DEFAULTS.maxRetriesFailure;
    const preemption = spec.retry?.maxRetriesPreemption ?? BUDGET_DEFAULTS.maxRetriesPreemption;
    if (failure + preemption > SPEC_LIMITS.retries.max) {
      const dflt = (written: number | undefined) => (written === undefined ? ", the default" : "");
      ctx.addIssue({
        code: "custom",
        path: [
          "retry",
          spec.retry?.maxRetriesFailure !== undefined ? "maxRetriesFailure" : "maxRetriesPreemption",
        ],
        message:
          `maxRetriesFailure (${failure}${dflt(spec.retry?.maxRetriesFailure)}) + maxRetriesPreemption ` +
          `(${preemption}${dflt(spec.retry?.maxRetriesPreemption)}) allow ${failure + preemption} retries, ` +
          `more than ${SPEC_LIMITS.retries.max}: ${HISTORY_LIMIT_REASON}`,
      });
    }
  })
  .transform((spec): SessionSpec =>
    spec.schedulingTimeout === undefined || spec.schedulingTimeout === spec.timeouts.pending
      ? spec
      : { ...spec, timeouts: { ...spec.timeouts, pending: spec.schedulingTimeout } },
  )
  .readonly();

/** What a user may write: every defaulted field optional. */
export type SessionSpecInput = z.input<typeof SessionSpecSchema>;

// The parsed type and the model's `SessionSpec` must agree exactly (a field added to one but not
// the other fails to compile here).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
type _SpecSchemaMatchesModel = Assert<Same<z.output<typeof SessionSpecSchema>, SessionSpec>>;

// ---------------------------------------------------------------------------------------------
// Errors.

export type { ValidationIssue };

export abstract class SpecError extends CoreError {
  abstract override readonly code: string;
}

/** The spec is well-formed YAML/JSON but breaks the schema; `issues` holds every problem. */
export class SpecValidationError extends SpecError {
  override readonly name = "SpecValidationError";
  readonly code = "INVALID_SPEC";
  readonly issues: readonly ValidationIssue[];

  constructor(issues: readonly ValidationIssue[]) {
    super(invalidMessage("session spec", issues));
    this.issues = issues;
  }
}

/** The text is not YAML/JSON at all. Line and column are 1-based. */
export class SpecSyntaxError extends SpecError {
  override readonly name = "SpecSyntaxError";
  readonly code = "SPEC_SYNTAX";
  readonly format: SpecFormat;
  readonly line: number;
  readonly column: number;
  readonly reason: string;

  constructor(format: SpecFormat, line: number, column: number, reason: string) {
    super(
      `invalid session spec: ${format === "yaml" ? "YAML" : "JSON"} syntax error at line ${line}, column ${column}: ${reason}`,
    );
    this.format = format;
    this.line = line;
    this.column = column;
    this.reason = reason;
  }
}

// ---------------------------------------------------------------------------------------------
// Parsing.

export function parseSessionSpec(input: unknown): SessionSpec {
  const result = safeParseWithIssues(SessionSpecSchema, input);
  if (!result.success) throw new SpecValidationError(result.issues);
  return result.data;
}

export type SpecFormat = "yaml" | "json";

// ---------------------------------------------------------------------------------------------
// Issue formatting (shared with events.ts): zod's issues become `<path>: <reason>`.

export type IssuesResult<T> =
  | { readonly success: true; readonly data: T }
  | { readonly success: false; readonly issues: readonly ValidationIssue[] };

/** Parses with Cairn's messages and returns every problem, one per field path. */
export function safeParseWithIssues<S extends z.ZodType>(
  schema: S,
  input: unknown,
): IssuesResult<z.output<S>> {
  const result = schema.safeParse(input, { error: reasonFor });
  if (result.success) return { success: true, data: result.data };
  return { success: false, issues: toValidationIssues(result.error.issues) };
}

/** Flattens zod issues: unknown keys become one issue each; only the first issue per path is kept. */
export function toValidationIssues(issues: readonly z.core.$ZodIssue[]): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const seen = new Set<string>();
  const add = (path: readonly PropertyKey[], message: string): void => {
    const rendered = formatPath(path);
    if (seen.has(rendered)) return;
    seen.add(rendered);
    out.push({ path: rendered, message });
  };
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) add([...issue.path, key], issue.message);
    } else {
      add(issue.path, issue.message);
    }
  }
  return out;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][\w$-]*$/.test(key)) out += out ? `.${key}` : key;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out || "(root)";
}

/** The reason for one raw zod issue, in Cairn's words. Schema-level messages take precedence. */
function reasonFor(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case "invalid_type": {
      const received = (issue as { received?: string }).received;
      if (received === "NaN" || received === "Infinity") return "must be a finite number";
      if (issue.input === undefined) return "required";
      if (issue.expected === "int" && typeof issue.input === "number") return "must be an integer";
      return `expected ${TYPE_NAMES[issue.expected] ?? issue.expected}, got ${typeOf(issue.input)}`;
    }
    case "too_small":
      if (issue.origin === "string")
        return issue.minimum === 1 ? "must not be empty" : `must be at least ${issue.minimum} characters`;
      if (issue.origin === "array")
        return issue.minimum === 1 ? "must not be empty" : `must have at least ${issue.minimum} items`;
      return issue.inclusive ? `must be at least ${issue.minimum}` : `must be greater than ${issue.minimum}`;
    case "too_big":
      if (issue.origin === "string") return `must be at most ${issue.maximum} characters`;
      if (issue.origin === "array") return `must have at most ${issue.maximum} items`;
      return issue.inclusive ? `must be at most ${issue.maximum}` : `must be less than ${issue.maximum}`;
    case "invalid_value":
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map((v) => String(v)).join(", ")}`;
    case "invalid_format":
      return `must match ${issue.pattern ?? issue.format}`;
    case "invalid_key":
      return issue.issues[0]?.message ?? "invalid key";
    case "unrecognized_keys":
      return "unknown field";
    default:
      return undefined;
  }
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  object: "an object",
  record: "an object",
  array: "an array",
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "a boolean",
};

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  const type = typeof value;
  return type === "object" ? "an object" : (TYPE_NAMES[type] ?? type);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
