/**
 * Failure categories operators define (core/retry/category-definitions.ts): documents written by
 * the CLI through the admin API and read by the coordinator (cached, like retry policies) where
 * runs end. Documents are validated before they reach the store.
 */
import type { FailureCategoryDefinition } from "../retry/category-definitions.ts";
import { PortError } from "./errors.ts";

export interface FailureCategoryRepository {
  /** Throws AlreadyExistsError when the name is taken. */
  createFailureCategory(definition: FailureCategoryDefinition, nowMs: number): Promise<void>;
  /** Throws FailureCategoryNotFoundError when absent. */
  updateFailureCategory(definition: FailureCategoryDefinition, nowMs: number): Promise<void>;
  getFailureCategory(name: string): Promise<FailureCategoryDefinition | undefined>;
  /** Every definition, in the order they are checked (precedence, then name). */
  listFailureCategories(): Promise<FailureCategoryDefinition[]>;
  /** Throws FailureCategoryNotFoundError when absent. */
  deleteFailureCategory(name: string): Promise<void>;
}

/** Same `code` and `entity` shape as the store's NotFoundError: callers branch on `code`. */
export class FailureCategoryNotFoundError extends PortError {
  override readonly name = "FailureCategoryNotFoundError";
  readonly code = "NOT_FOUND";
  readonly entity = "failure category";
  readonly id: string;
  constructor(name: string) {
    super(`failure category ${name} not found`);
    this.id = name;
  }
}
