/**
 * Job templates: operator-managed documents, written by the CLI through the
 * admin API and read by the coordinator (cached). Documents are validated (core/templates.ts)
 * before they reach the store. `Default` always exists: built in until an operator updates it,
 * and never deleted.
 */
import type { JobTemplate } from "../templates.ts";
import { PortError } from "./errors.ts";

export interface TemplateRepository {
  /** Throws AlreadyExistsError when the name is taken (Default always is). */
  createTemplate(template: JobTemplate, nowMs: number): Promise<void>;
  /** Throws TemplateNotFoundError when absent (Default never is). */
  updateTemplate(template: JobTemplate, nowMs: number): Promise<void>;
  /** Default is the stored one, else the built-in. */
  getTemplate(name: string): Promise<JobTemplate | undefined>;
  /** Every template by name, Default among them. */
  listTemplates(): Promise<JobTemplate[]>;
  /** Throws TemplateNotFoundError when absent, DefaultTemplateError for Default. */
  deleteTemplate(name: string): Promise<void>;
}

/** Same `code` and `entity` shape as the store's NotFoundError: callers branch on `code`. */
export class TemplateNotFoundError extends PortError {
  override readonly name = "TemplateNotFoundError";
  readonly code = "NOT_FOUND";
  readonly entity = "job template";
  readonly id: string;
  constructor(name: string) {
    super(`job template ${name} not found`);
    this.id = name;
  }
}

/** Deleting Default: it always exists (an operator may update it). */
export class DefaultTemplateError extends PortError {
  override readonly name = "DefaultTemplateError";
  readonly code = "DEFAULT_TEMPLATE";
  constructor() {
    super(
      "job template Default cannot be deleted: it always exists (change it with `cairn template update`)",
    );
  }
}
