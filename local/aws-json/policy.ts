/**
 * A small declarative identity policy for the embedded endpoints: Allow statements only
 * (anything not allowed is denied, as IAM's implicit deny), each naming principals, actions,
 * resource ARN patterns and conditions on the request's condition keys. Compiled once, with
 * every malformed field reported by its path.
 */
import { accessDeniedMessage, type AuthorizationRequest, type AuthorizeHook } from "./auth.ts";

export interface PolicyCondition {
  /** A condition key the endpoint derives from the request, e.g. `events:source`. */
  readonly key: string;
  /**
   * Every value the request carries for `key` must be one of these, and it must carry at least
   * one (IAM's `ForAllValues:StringEquals` with a `Null: false` guard, so an empty request
   * cannot pass vacuously).
   */
  readonly anyOf: readonly string[];
}

export interface PolicyStatement {
  /** Named in denial reasons. @default the statement's index */
  readonly sid?: string;
  readonly principals: readonly string[];
  /** `service:Action`; `*` and `?` match as in IAM (actions case-insensitively). */
  readonly actions: readonly string[];
  /**
   * ARN patterns with `*` and `?`, or `*` alone for every resource. A policy variable
   * (`${aws:PrincipalTag/cairn-agent-id}`) is replaced by the request context's value of that
   * key, taken literally; a pattern whose variable the request has no value for matches nothing,
   * as IAM leaves a statement with an unresolved variable out.
   */
  readonly resources: readonly string[];
  /** All must hold. @default none */
  readonly conditions?: readonly PolicyCondition[];
  /**
   * An IAM JSON condition block, evaluated as IAM does (operator → key → values; every operator
   * and key must hold, any value of a list may match): StringEquals, StringLike, their
   * `ForAllValues:` / `ForAnyValue:` set forms and `IfExists` variants, and Null. Holds with
   * `conditions` when both are given. @default none
   */
  readonly condition?: IamConditionBlock;
}

/** operator → condition key → value or values, as in an IAM policy's `Condition`. */
export type IamConditionBlock = Readonly<
  Record<string, Readonly<Record<string, string | readonly string[]>>>
>;

export class PolicyError extends Error {
  readonly code = "InvalidPolicy";
  readonly path: string;
  constructor(path: string, reason: string) {
    super(`policy ${path}: ${reason}`);
    this.name = "PolicyError";
    this.path = path;
  }
}

interface CompiledStatement {
  readonly sid: string;
  readonly principals: ReadonlySet<string>;
  readonly actions: readonly RegExp[];
  readonly resources: readonly ResourcePattern[];
  readonly conditions: readonly PolicyCondition[];
  readonly condition: readonly CompiledCondition[];
}

interface CompiledCondition {
  /** As written, for denial reasons: `ForAllValues:StringLike`. */
  readonly operator: string;
  readonly key: string;
  readonly values: readonly string[];
  readonly test: (requestValues: readonly string[] | undefined) => boolean;
}

const ACTION = /^[a-z0-9-]+:[A-Za-z0-9*?]+$/;

export function compilePolicy(statements: readonly PolicyStatement[]): AuthorizeHook {
  const compiled = statements.map((s, i) => compileStatement(s, `statements[${i}]`, String(i)));
  return (principal, request) => decide(compiled, principal, request);
}

function compileStatement(s: PolicyStatement, path: string, index: string): CompiledStatement {
  nonEmpty(s.principals, `${path}.principals`);
  nonEmpty(s.actions, `${path}.actions`);
  nonEmpty(s.resources, `${path}.resources`);
  s.actions.forEach((a, i) => {
    if (!ACTION.test(a))
      throw new PolicyError(`${path}.actions[${i}]`, `"${a}" is not of the form service:Action`);
  });
  s.resources.forEach((r, i) => {
    if (r !== "*" && !r.startsWith("arn:")) {
      throw new PolicyError(`${path}.resources[${i}]`, `"${r}" is neither "*" nor an ARN pattern`);
    }
  });
  (s.conditions ?? []).forEach((c, i) => {
    if (!c.key) throw new PolicyError(`${path}.conditions[${i}].key`, "must not be empty");
    nonEmpty(c.anyOf, `${path}.conditions[${i}].anyOf`);
  });
  return {
    sid: s.sid ?? index,
    principals: new Set(s.principals),
    actions: s.actions.map((a) => wildcard(a, "i")),
    resources: s.resources.map(resourcePattern),
    conditions: s.conditions ?? [],
    condition: compileConditionBlock(s.condition ?? {}, `${path}.condition`),
  };
}

const OPERATOR = /^(?:(ForAllValues|ForAnyValue):)?(StringEquals|StringLike|Null)(IfExists)?$/;

function compileConditionBlock(block: IamConditionBlock, path: string): CompiledCondition[] {
  const compiled: CompiledCondition[] = [];
  for (const [operator, entries] of Object.entries(block)) {
    const m = OPERATOR.exec(operator);
    if (!m || (m[2] === "Null" && (m[1] !== undefined || m[3] !== undefined))) {
      throw new PolicyError(
        `${path}.${operator}`,
        "is not a supported condition operator (StringEquals, StringLike, with ForAllValues:/ForAnyValue: or IfExists; Null)",
      );
    }
    const [, set, kind, ifExists] = m;
    for (const [key, raw] of Object.entries(entries)) {
      const values = typeof raw === "string" ? [raw] : [...raw];
      if (values.length === 0)
        throw new PolicyError(`${path}.${operator}.${key}`, "must list at least one value");
      let test: CompiledCondition["test"];
      if (kind === "Null") {
        if (values.length !== 1 || (values[0] !== "true" && values[0] !== "false")) {
          throw new PolicyError(`${path}.${operator}.${key}`, 'must be "true" or "false"');
        }
        // Null true: the key is absent from the request; false: it is there.
        const absent = values[0] === "true";
        test = (got) => (got === undefined || got.length === 0) === absent;
      } else {
        const patterns = kind === "StringLike" ? values.map((v) => wildcard(v, "")) : undefined;
        const matches = (v: string) =>
          patterns === undefined ? values.includes(v) : patterns.some((p) => p.test(v));
        if (set === "ForAllValues") {
          // Every value the request has must match; a request with none passes (IAM's rule).
          test = (got) => (got ?? []).every(matches);
        } else if (set === "ForAnyValue") {
          test = (got) => (got ?? []).some(matches);
        } else {
          // A single-valued operator: the key must be there (or IfExists) and its value match.
          test = (got) =>
            got === undefined || got.length === 0 ? ifExists !== undefined : got.every(matches);
        }
      }
      compiled.push({ operator, key, values, test });
    }
  }
  return compiled;
}

function decide(
  statements: readonly CompiledStatement[],
  principal: string,
  request: AuthorizationRequest,
): string | undefined {
  const resources = request.resources.length > 0 ? request.resources : ["*"];
  for (const resource of resources) {
    // Every statement whose condition failed, so the reason names the one the caller meant.
    const conditionFailures: string[] = [];
    let allowed = false;
    for (const s of statements) {
      if (!s.principals.has(principal)) continue;
      if (!s.actions.some((a) => a.test(request.action))) continue;
      if (!s.resources.some((r) => r(request.conditionValues)?.test(resource) === true)) continue;
      const failed = failedCondition(s, request);
      if (failed === undefined) {
        allowed = true;
        break;
      }
      conditionFailures.push(failed);
    }
    if (!allowed) {
      return accessDeniedMessage(
        principal,
        request.action,
        resource,
        conditionFailures.length > 0
          ? conditionFailures.join("; ")
          : `no identity-based policy allows the ${request.action} action`,
      );
    }
  }
  return undefined;
}

function failedCondition(s: CompiledStatement, request: AuthorizationRequest): string | undefined {
  for (const c of s.condition) {
    const got = request.conditionValues[c.key];
    if (!c.test(got)) {
      const has = got === undefined || got.length === 0 ? "none" : `[${got.join(", ")}]`;
      return `statement ${s.sid} allows ${request.action} only when ${c.operator} ${c.key} [${c.values.join(", ")}] holds, and the request has ${has}`;
    }
  }
  for (const c of s.conditions) {
    const values = request.conditionValues[c.key] ?? [];
    const outside = values.filter((v) => !c.anyOf.includes(v));
    if (values.length === 0 || outside.length > 0) {
      const got = values.length === 0 ? "none" : `[${values.join(", ")}]`;
      return `statement ${s.sid} allows ${request.action} only when every ${c.key} is one of [${c.anyOf.join(", ")}], and the request has ${got}`;
    }
  }
  return undefined;
}

/** A resource pattern, resolved against a request's context: undefined when a variable has no value. */
type ResourcePattern = (context: Readonly<Record<string, readonly string[]>>) => RegExp | undefined;

const VARIABLE = /\$\{([^}]+)\}/g;

function resourcePattern(pattern: string): ResourcePattern {
  const parts = pattern.split(VARIABLE);
  if (parts.length === 1) {
    const compiled = wildcard(pattern, "");
    return () => compiled;
  }
  // split with a capture group alternates text and variable names: text, key, text, …
  return (context) => {
    let body = "";
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      if (i % 2 === 0) {
        body += wildcardBody(part);
        continue;
      }
      const values = context[part];
      if (values?.length !== 1) return undefined;
      body += escapeRegExp(values[0]!);
    }
    return new RegExp(`^${body}$`);
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function wildcardBody(pattern: string): string {
  return pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
}

function wildcard(pattern: string, flags: string): RegExp {
  return new RegExp(`^${wildcardBody(pattern)}$`, flags);
}

function nonEmpty(list: readonly unknown[] | undefined, path: string): void {
  if (!Array.isArray(list) || list.length === 0) throw new PolicyError(path, "must list at least one entry");
}
