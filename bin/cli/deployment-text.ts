/**
 * Deployment spec text (`cairn deployment create -f`) to a deployment spec: YAML, or JSON when
 * the text starts with `{` or `[`, with line and column on every syntax error, then the spec's
 * schema (every field named) and the one rule the schema leaves to the event: the spec's name
 * is the deployment's id.
 */
import { readDocumentText } from "../../functions/core/document-text.ts";
import { parseDeploymentSpec, type DeploymentSpec } from "../../functions/core/deployments/spec.ts";
import { deploymentIdSchema } from "../../functions/core/service-binding.ts";
import { safeParseWithIssues, SpecValidationError } from "../../functions/core/spec.ts";

/** A deployment spec that is not YAML (or JSON); the message says where. */
export class DeploymentSpecSyntaxError extends Error {
  override readonly name = "DeploymentSpecSyntaxError";
  readonly code = "DEPLOYMENT_SPEC_SYNTAX";
  constructor(json: boolean, line: number, column: number, reason: string) {
    super(
      `invalid deployment spec: ${json ? "JSON" : "YAML"} syntax error at line ${line}, column ${column}: ${reason}`,
    );
  }
}

/** Throws DeploymentSpecSyntaxError, or SpecValidationError (code INVALID_SPEC) with every problem. */
export function parseDeploymentSpecText(text: string): DeploymentSpec {
  const spec = parseDeploymentSpec(documentValue(text));
  const id = safeParseWithIssues(deploymentIdSchema, spec.name);
  if (!id.success) {
    throw new SpecValidationError(
      id.issues.map((issue) => ({
        path: "name",
        message: `"${spec.name}" cannot be a deployment's id: ${issue.message}`,
      })),
    );
  }
  return spec;
}

function documentValue(text: string): unknown {
  return readDocumentText(text, ({ json, line, column, reason }) => {
    throw new DeploymentSpecSyntaxError(json, line, column, reason);
  });
}
