/**
 * A document a person wrote (a retry policy, a deployment spec): YAML, or JSON when the text
 * starts with `{` or `[`, to its value, with the line and column of any syntax problem. Only
 * the CLI reads documents from text, so only its bundle carries the YAML parser; the functions
 * read them from the table.
 */
import { LineCounter, parseDocument, visit } from "yaml";

export interface DocumentSyntaxProblem {
  /** The text was read as JSON (it started with `{` or `[`). */
  readonly json: boolean;
  readonly line: number;
  readonly column: number;
  readonly reason: string;
}

/** The document's value; `fail` is called (and must throw) with the first syntax problem. */
export function readDocumentText(text: string, fail: (problem: DocumentSyntaxProblem) => never): unknown {
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
  const at = (offset: number, reason: string): never => {
    const { line, col } = lineCounter.linePos(offset);
    return fail({ json, line, column: col, reason });
  };
  // Warnings (an unresolved `!tag`) mean the author wrote something Cairn would silently drop.
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) return at(problem.pos[0], problem.message);
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
    return at(offset, (error as Error).message);
  }
}
