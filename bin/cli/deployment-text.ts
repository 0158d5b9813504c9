/**
 * Deployment spec text (`cairn deployment create -f`) to a deployment spec: YAML, or JSON when
 * the text starts with `{` or `[`, with line and column on every syntax error, then the spec's
 * schema (every field named) and the one rule the schema leaves to the event: the spec's name
 * is the deployment's id.
 */
import { LineCounter, parseDocument, visit } from "yaml";
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
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const json = /^\s*[{[]/.test(source);
  const lineCounter = new LineCounter();
  // JSON is read as YAML too (the same line/column errors), with the JSON schema so that a bare
  // word where a JSON value belongs is an error rather than a string.
  const doc = parseDocument(source, {
    lineCounter,
    uniqueKeys: true,
    prettyErrors: false,
    ...(json ? { schema: "json" as const } : {}),
  });
  // Warnings (an unresolved `!tag`) mean the user wrote something Cairn would silently drop.
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    const { line, col } = lineCounter.linePos(problem.pos[0]);
    throw new DeploymentSpecSyntaxError(json, line, col, problem.message);
  }
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // Unresolved alias or alias bomb: point at the first alias.
    let offset = 0;
    visit(doc, {
      Alias(_key, node) {
        offset = node.range?.[0] ?? 0;
        return visit.BREAK;
      },
    });
    const { line, col } = lineCounter.linePos(offset);
    throw new DeploymentSpecSyntaxError(json, line, col, (error as Error).message);
  }
}
