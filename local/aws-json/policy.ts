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
  /** ARN patterns with `*` and `?`, or `*` alone for every resource. */
  readonly resources: readonly string[];
  /** All must hold. @default none */
  readonly conditions?: readonly PolicyCondition[];
}

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
  readonly resources: readonly RegExp[];
  readonly conditions: readonly PolicyCondition[];
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
    resources: s.resources.map((r) => wildcard(r, "")),
    conditions: s.conditions ?? [],
  };
}

function decide(
  statements: readonly CompiledStatement[],
  principal: string,
  request: AuthorizationRequest,
): string | undefined {
  const resources = request.resources.length > 0 ? request.resources : ["*"];
  for (const resource of resources) {
    let conditionFailure: string | undefined;
    let allowed = false;
    for (const s of statements) {
      if (!s.principals.has(principal)) continue;
      if (!s.actions.some((a) => a.test(request.action))) continue;
      if (!s.resources.some((r) => r.test(resource))) continue;
      const failed = failedCondition(s, request);
      if (failed === undefined) {
        allowed = true;
        break;
      }
      conditionFailure ??= failed;
    }
    if (!allowed) {
      return accessDeniedMessage(
        principal,
        request.action,
        resource,
        conditionFailure ?? `no identity-based policy allows the ${request.action} action`,
      );
    }
  }
  return undefined;
}

function failedCondition(s: CompiledStatement, request: AuthorizationRequest): string | undefined {
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

function wildcard(pattern: string, flags: string): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${body}$`, flags);
}

function nonEmpty(list: readonly unknown[] | undefined, path: string): void {
  if (!Array.isArray(list) || list.length === 0) throw new PolicyError(path, "must list at least one entry");
}
