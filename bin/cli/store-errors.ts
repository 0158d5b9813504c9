/**
 * The store's answers to a change that does not apply (a name taken, a policy in use, a missing
 * resource, a value it refuses) as CLI errors with their exit codes. Branches on the store's
 * stable `code`s, never `instanceof`.
 */
import type { CliError } from "./errors.ts";
import { ConflictError, ResourceNotFoundError, UsageError } from "./errors.ts";

const COMMAND_OF: Readonly<Record<string, string>> = {
  "retry policy": "retry-policy",
  "job template": "template",
  "failure category": "failure-category",
  queue: "queue",
};

export function explainStoreError(error: unknown): CliError | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { code, message, entity, id, usedBy } = error as {
    code?: unknown;
    message?: unknown;
    entity?: unknown;
    id?: unknown;
    usedBy?: unknown;
  };
  if (typeof message !== "string") return undefined;
  const group = typeof entity === "string" ? COMMAND_OF[entity] : undefined;
  switch (code) {
    case "ALREADY_EXISTS":
      return new ConflictError(
        group === undefined ? message : `${message} (change it with \`cairn ${group} update\`)`,
      );
    case "IN_USE": {
      const first = Array.isArray(usedBy) ? (usedBy[0] as unknown) : undefined;
      const hint =
        entity === "retry policy" && typeof first === "string"
          ? ` (detach it first, e.g. \`cairn queue update ${first} --retry-policy …\` without ${String(id)})`
          : "";
      return new ConflictError(`${message}${hint}`);
    }
    case "NOT_FOUND":
      // Sessions have their own message (SessionNotFoundError); this is for named resources.
      return group === undefined ? undefined : new ResourceNotFoundError(message);
    // The template Default always exists: a conflict with what is, not a bad request.
    case "DEFAULT_TEMPLATE":
      return new ConflictError(message);
    case "INVALID_STORE_REQUEST":
      return new UsageError(message);
    default:
      return undefined;
  }
}
