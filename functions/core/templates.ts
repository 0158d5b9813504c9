/**
 * Job templates (HPC Pack's job and task states, "Validating"): "During validation, the Job Scheduler
 * service confirms permissions, applies default settings for any properties that the job owner
 * did not specify, and validates each property against constraints. Default settings and
 * constraints are defined by the job template."
 *
 * A template holds `defaults` (a partial spec, merged under what the submission wrote, deep) and
 * `constraints` keyed by field path. A submission names its template (`template: small`) or gets
 * `Default`, which always exists (built in, empty until an operator updates it). Validation is
 * pure: `validateSubmission` returns the spec as it will be queued, or every violated field with
 * its reason; HPC Pack's "no task has a run time that is greater in value than the run time of
 * the job" is the spec schema's own check on the merged spec (timeouts.running ≤ timeouts.job).
 */
import { CoreError } from "./errors.ts";
import * as z from "zod";
import type { SessionSpec } from "./model.ts";
import {
  nameSchema,
  SessionSpecSchema,
  safeParseWithIssues,
  strictObject,
  type IssuesResult,
} from "./spec.ts";
import { invalidMessage, type ValidationIssue } from "./validation-issue.ts";

/** The template a submission naming none is validated against. */
export const DEFAULT_TEMPLATE_NAME = "Default";

/**
 * Constraint kinds. `required`: the submission must set the field itself (HPC Pack's "Required"),
 * a template default does not count; `min`/`max`: numeric bounds, inclusive; `allowed`: the
 * values the field may take.
 */
export const CONSTRAINT_KINDS = ["required", "min", "max", "allowed"] as const;

type FieldType = "number" | "string" | "boolean";

/** Every field a constraint may name, and its type (spec.ts's scalar fields). */
export const CONSTRAINABLE_FIELDS: Readonly<Record<string, FieldType>> = {
  name: "string",
  queue: "string",
  priority: "number",
  replicas: "number",
  coscheduled: "boolean",
  perAgent: "number",
  maxTaskFailures: "number",
  maxPendingReturns: "number",
  rerunnable: "boolean",
  schedulingTimeout: "number",
  parent: "string",
  executor: "string",
  image: "string",
  "resources.cpu": "number",
  "resources.memoryMiB": "number",
  ...Object.fromEntries(
    ["pending", "scheduled", "preparing", "prepared", "creating", "running", "terminating", "job"].map(
      (stage) => [`timeouts.${stage}`, "number" as const],
    ),
  ),
  ...Object.fromEntries(
    ["pending", "scheduled", "preparing", "prepared", "creating", "running", "terminating"].map((stage) => [
      `maxTries.${stage}`,
      "number" as const,
    ]),
  ),
  "retry.maxRetriesFailure": "number",
  "retry.maxRetriesPreemption": "number",
  "retry.maxRetriesStart": "number",
};

/** Fields a template may not give a default for: they say what the job is, not how it runs. */
const NOT_DEFAULTABLE = ["name", "command", "template", "parent"] as const;

const scalarSchema = z.union([z.string(), z.number(), z.boolean()]);

const constraintSchema = strictObject({
  /** The submission must set the field itself (a template default does not count). */
  required: z.boolean().optional(),
  /** Numeric fields: the least value allowed. */
  min: z.number().optional(),
  /** Numeric fields: the greatest value allowed. */
  max: z.number().optional(),
  /** The only values allowed. */
  allowed: z.array(scalarSchema).min(1).max(64).readonly().optional(),
}).readonly();

export type FieldConstraint = z.output<typeof constraintSchema>;

const templateShape = {
  /** What submissions name it by (`template: NAME`); `Default` applies to those that name none. */
  name: nameSchema,
  /** Free text for the people choosing a template. */
  description: z.string().max(1024).optional(),
  /** A partial spec: values for the fields a submission leaves unset. */
  defaults: z.record(z.string(), z.unknown()).default({}),
  /** Per spec field path (`resources.cpu`, `queue`, `timeouts.job`): what a submission must satisfy. */
  constraints: z.record(z.string(), constraintSchema).default({}),
};

export interface JobTemplate {
  readonly name: string;
  readonly description?: string;
  readonly defaults: Readonly<Record<string, unknown>>;
  readonly constraints: Readonly<Record<string, FieldConstraint>>;
}

/** The built-in Default: no defaults beyond the spec's own, no constraints. */
export const BUILT_IN_DEFAULT_TEMPLATE: JobTemplate = Object.freeze({
  name: DEFAULT_TEMPLATE_NAME,
  defaults: Object.freeze({}),
  constraints: Object.freeze({}),
});

export const JobTemplateSchema = strictObject(templateShape).superRefine((t, ctx) => {
  const issue = (path: (string | number)[], message: string) =>
    ctx.addIssue({ code: "custom", path, message });
  for (const [path, constraint] of Object.entries(t.constraints)) {
    const type = CONSTRAINABLE_FIELDS[path];
    if (type === undefined) {
      issue(
        ["constraints", path],
        `unknown field path (expected one of ${Object.keys(CONSTRAINABLE_FIELDS).join(", ")})`,
      );
      continue;
    }
    if (Object.keys(constraint).length === 0) {
      issue(["constraints", path], `names no constraint (expected one of ${CONSTRAINT_KINDS.join(", ")})`);
    }
    for (const kind of ["min", "max"] as const) {
      if (constraint[kind] !== undefined && type !== "number") {
        issue(["constraints", path, kind], `applies only to numeric fields (${path} is a ${type})`);
      }
    }
    if (constraint.min !== undefined && constraint.max !== undefined && constraint.min > constraint.max) {
      issue(["constraints", path], `min (${constraint.min}) is greater than max (${constraint.max})`);
    }
    constraint.allowed?.forEach((value, index) => {
      if (typeof value !== type) {
        issue(
          ["constraints", path, "allowed", index],
          `must be a ${type}, like ${path} (got ${JSON.stringify(value)})`,
        );
      }
    });
  }
  for (const field of NOT_DEFAULTABLE) {
    if (field in t.defaults) issue(["defaults", field], "a template cannot give a default for it");
  }
  // The defaults must make a valid spec with any name and command, and obey the template's own
  // constraints: otherwise every submission leaning on them would fail.
  const probe = safeParseWithIssues(SessionSpecSchema, mergeDefaults(t.defaults, PROBE));
  if (!probe.success) {
    for (const { path, message } of probe.issues) issue(["defaults", ...path.split(".")], message);
    return;
  }
  for (const { path, message } of constraintIssues(probe.data, t.defaults, t, false)) {
    if (hasPath(t.defaults, path)) issue(["defaults", ...path.split(".")], message);
  }
});

const PROBE = { name: "template-probe", command: ["true"] };

/** A template document as an operator writes it; every problem at once (`<path>: <reason>`). */
export function parseJobTemplate(input: unknown): IssuesResult<JobTemplate> {
  const result = safeParseWithIssues(JobTemplateSchema, input);
  if (!result.success) return result;
  const { name, description, defaults, constraints } = result.data;
  // One order however the document was written or stored (DynamoDB keeps no map order): the
  // constraints in the spec's field order, the defaults' keys sorted.
  const ordered = Object.fromEntries(
    Object.keys(CONSTRAINABLE_FIELDS).flatMap((path) => {
      const c = constraints[path];
      return c === undefined ? [] : [[path, c] as const];
    }),
  );
  return {
    success: true,
    data: {
      name,
      ...(description !== undefined ? { description } : {}),
      defaults: sortedKeys(defaults) as Record<string, unknown>,
      constraints: ordered,
    },
  };
}

function sortedKeys(value: unknown): unknown {
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys(value[key])]),
  );
}

/** The document refused; `issues` holds every problem. Stable `code` (callers never `instanceof`). */
export class JobTemplateValidationError extends CoreError {
  override readonly name = "JobTemplateValidationError";
  readonly code = "INVALID_JOB_TEMPLATE";
  readonly issues: readonly ValidationIssue[];

  constructor(issues: readonly ValidationIssue[]) {
    super(invalidMessage("job template", issues));
    this.issues = issues;
  }
}

/** Parses or throws JobTemplateValidationError. */
export function requireJobTemplate(input: unknown): JobTemplate {
  const result = parseJobTemplate(input);
  if (!result.success) throw new JobTemplateValidationError(result.issues);
  return result.data;
}

// ---------------------------------------------------------------------------------------------
// Validating a submission.

export type Validation =
  | { readonly ok: true; readonly spec: SessionSpec }
  | {
      readonly ok: false;
      readonly issues: readonly ValidationIssue[];
      /** The spec with the template's defaults, when that much parsed (stored with the failure). */
      readonly spec?: SessionSpec;
    };

/** The template a written spec names: its own `template`, else Default. */
export function templateNameOf(written: unknown): string {
  const named = isPlainObject(written) ? written["template"] : undefined;
  return typeof named === "string" ? named : DEFAULT_TEMPLATE_NAME;
}

/**
 * Validates a submission as written (before any default) against its template: the template's
 * defaults merged under it, the spec schema (so the run-time check holds on the merged spec),
 * then each constraint. `template` undefined: the one the spec names does not exist.
 */
export function validateSubmission(written: unknown, template: JobTemplate | undefined): Validation {
  if (template === undefined) {
    return {
      ok: false,
      issues: [
        {
          path: "template",
          message: `no job template named ${JSON.stringify(templateNameOf(written))} (see \`cairn template list\`)`,
        },
      ],
    };
  }
  const parsed = safeParseWithIssues(SessionSpecSchema, mergeDefaults(template.defaults, written));
  if (!parsed.success) return { ok: false, issues: parsed.issues };
  const issues = constraintIssues(parsed.data, written, template, true);
  return issues.length === 0 ? { ok: true, spec: parsed.data } : { ok: false, issues, spec: parsed.data };
}

/** The reason a job that failed validation ends with: every violated field, one per line. */
export function validationFailureReason(templateName: string, issues: readonly ValidationIssue[]): string {
  return (
    `failed validation against job template ${templateName}: ` +
    issues.map((i) => `${i.path}: ${i.message}`).join("; ")
  );
}

function constraintIssues(
  spec: SessionSpec,
  written: unknown,
  template: JobTemplate,
  checkRequired: boolean,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const by = `(template ${template.name})`;
  // In the spec's field order, whatever order the stored document keeps.
  for (const path of Object.keys(CONSTRAINABLE_FIELDS)) {
    const c = template.constraints[path];
    if (c === undefined) continue;
    if (checkRequired && c.required === true && !hasPath(written, path)) {
      issues.push({ path, message: `required ${by}: the submission must set it` });
      continue;
    }
    const value = valueAt(spec, path);
    if (value === undefined) continue;
    if (c.allowed !== undefined && !c.allowed.includes(value as string | number | boolean)) {
      issues.push({
        path,
        message: `must be one of ${c.allowed.map((v) => String(v)).join(", ")} ${by}, got ${JSON.stringify(value)}`,
      });
    } else if (c.min !== undefined && typeof value === "number" && value < c.min) {
      issues.push({ path, message: `must be at least ${c.min} ${by}, got ${value}` });
    } else if (c.max !== undefined && typeof value === "number" && value > c.max) {
      issues.push({ path, message: `must be at most ${c.max} ${by}, got ${value}` });
    }
  }
  return issues;
}

/** `defaults` under `written`: objects merged key by key, anything else the written value wins. */
export function mergeDefaults(defaults: unknown, written: unknown): unknown {
  if (written === undefined) return defaults;
  if (!isPlainObject(defaults) || !isPlainObject(written)) return written;
  const out: Record<string, unknown> = { ...defaults };
  for (const [key, value] of Object.entries(written)) out[key] = mergeDefaults(defaults[key], value);
  return out;
}

function valueAt(value: unknown, path: string): unknown {
  let at: unknown = value;
  for (const key of path.split(".")) {
    if (!isPlainObject(at)) return undefined;
    at = at[key];
  }
  return at;
}

function hasPath(value: unknown, path: string): boolean {
  return valueAt(value, path) !== undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
