/**
 * Job template text (a file `cairn template create -f` reads) to a template: YAML, or JSON when
 * the text starts with `{` or `[`. Apart from templates.ts so that only the CLI carries the YAML
 * parser (the functions read templates from the table).
 */
import { CoreError } from "./errors.ts";
import { readDocumentText } from "./document-text.ts";
import { JobTemplateValidationError, parseJobTemplate, type JobTemplate } from "./templates.ts";

/** The text is not YAML/JSON at all. */
export class JobTemplateSyntaxError extends CoreError {
  override readonly name = "JobTemplateSyntaxError";
  readonly code = "JOB_TEMPLATE_SYNTAX";
  constructor(json: boolean, line: number, column: number, reason: string) {
    super(
      `invalid job template: ${json ? "JSON" : "YAML"} syntax error at line ${line}, column ${column}: ${reason}`,
    );
  }
}

export function parseJobTemplateText(text: string): JobTemplate {
  const value = readDocumentText(text, ({ json, line, column, reason }) => {
    throw new JobTemplateSyntaxError(json, line, column, reason);
  });
  const parsed = parseJobTemplate(value);
  if (!parsed.success) throw new JobTemplateValidationError(parsed.issues);
  return parsed.data;
}
