/**
 * The submission filter in the embedded runtime: a local module whose default
 * export is the filter, `(request) => answer | Promise<answer>`. Loaded once, on first use.
 */
import { pathToFileURL } from "node:url";
import type { SubmissionFilterPort } from "../../core/ports/submission-filter.ts";
import type { SubmissionFilterRequest } from "../../core/submission-filter.ts";

type FilterFunction = (request: SubmissionFilterRequest) => unknown;

export class ModuleSubmissionFilter implements SubmissionFilterPort {
  readonly #path: string;
  #loaded: Promise<FilterFunction> | undefined;

  /** `path`: absolute, or relative to the working directory. */
  constructor(path: string) {
    this.#path = path;
  }

  async ask(request: SubmissionFilterRequest, signal: AbortSignal): Promise<unknown> {
    const filter = await this.#load();
    return new Promise((resolve, reject) => {
      const aborted = () => reject(new Error("aborted"));
      if (signal.aborted) return aborted();
      signal.addEventListener("abort", aborted, { once: true });
      Promise.resolve()
        .then(() => filter(structuredClone(request)))
        .then(resolve, reject)
        .finally(() => signal.removeEventListener("abort", aborted));
    });
  }

  #load(): Promise<FilterFunction> {
    this.#loaded ??= import(pathToFileURL(this.#path).href).then((module: { default?: unknown }) => {
      if (typeof module.default !== "function") {
        throw new Error(`the submission filter module ${this.#path} has no default export function`);
      }
      return module.default as FilterFunction;
    });
    // A failed load is tried again next time (the file may be fixed).
    this.#loaded.catch(() => {
      this.#loaded = undefined;
    });
    return this.#loaded;
  }
}
