/**
 * FailureCategory text (a file `cairn failure-category create -f` reads) to a definition: YAML,
 * or JSON when the text starts with `{` or `[`. Apart from category-definitions.ts so that only
 * the CLI carries the YAML parser (the functions read categories from the table).
 */
import { readDocumentText } from "../document-text.ts";
import { parseFailureCategory, type FailureCategoryDefinition } from "./category-definitions.ts";
import { RetryError } from "./errors.ts";

/** The text is not YAML/JSON at all. Line and column are 1-based. */
export class FailureCategorySyntaxError extends RetryError {
  override readonly name = "FailureCategorySyntaxError";
  readonly code = "FAILURE_CATEGORY_SYNTAX";
  constructor(json: boolean, line: number, column: number, reason: string) {
    super(
      `invalid failure category: ${json ? "JSON" : "YAML"} syntax error at line ${line}, column ${column}: ${reason}`,
    );
  }
}

export function parseFailureCategoryText(text: string): FailureCategoryDefinition {
  return parseFailureCategory(
    readDocumentText(text, ({ json, line, column, reason }) => {
      throw new FailureCategorySyntaxError(json, line, column, reason);
    }),
  );
}
