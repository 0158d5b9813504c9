/**
 * Spec text (a file `cairn submit` reads) to a session spec: YAML, or JSON when the text starts
 * with `{` or `[`, with line and column on every syntax error. Apart from spec.ts so that only
 * the CLI carries the YAML parser: the Lambda functions receive specs as JSON in events and
 * never parse text (test/bundle-size.test.ts keeps `yaml` out of their bundles).
 */
import { LineCounter, parseDocument, Parser, visit, type CST, type Document, type YAMLError } from "yaml";
import type { SessionSpec } from "./model.ts";
import { parseSessionSpec, SpecSyntaxError, type SpecFormat } from "./spec.ts";

/** Parses spec text; the format is JSON when the text starts with `{` or `[`, else YAML. */
export function parseSpecText(text: string, format?: SpecFormat): SessionSpec {
  return parseSessionSpec(readSpecText(text, format));
}

/**
 * Spec text to the value written, before the schema and its defaults: what `cairn submit` sends,
 * so a job template's defaults apply to the fields left unset (HPC Pack's Validating).
 */
export function readSpecText(text: string, format?: SpecFormat): unknown {
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const chosen = format ?? (/^\s*[{[]/.test(source) ? "json" : "yaml");
  return chosen === "json" ? parseJsonText(source) : parseYamlText(source);
}

function parseYamlText(text: string): unknown {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  // Warnings (an unresolved `!tag`) mean the user wrote something Cairn would silently drop.
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    const { line, col } = lineCounter.linePos(problem.pos[0]);
    throw new SpecSyntaxError("yaml", line, col, problem.message);
  }
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // Unresolved alias or alias bomb: point at the first alias.
    const { line, col } = lineCounter.linePos(firstAliasOffset(doc));
    throw new SpecSyntaxError("yaml", line, col, (error as Error).message);
  }
}

function firstAliasOffset(doc: Document): number {
  let offset = 0;
  visit(doc, {
    Alias(_key, node) {
      offset = node.range?.[0] ?? 0;
      return visit.BREAK;
    },
  });
  return offset;
}

function parseJsonText(text: string): unknown {
  // YAML 1.2 reads JSON, so yaml's parser locates JSON errors too. The JSON schema makes a bare
  // word (`tru`, `01`) an error instead of a string.
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false, schema: "json" });
  const fail = (offset: number, reason: string): never => {
    const { line, col } = lineCounter.linePos(offset);
    throw new SpecSyntaxError("json", line, col, reason);
  };
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    const found = locateJsonError(text, doc) ?? jsonParsePosition((error as Error).message);
    fail(found.offset, found.reason);
  }
  // JSON.parse keeps the last of two equal keys without a word; yaml's `uniqueKeys` rejects them.
  // Other yaml errors on text JSON.parse accepted (nesting deeper than yaml's stack) are ignored.
  const duplicate = firstDuplicateKeyError(doc);
  if (duplicate) fail(duplicate.pos[0], duplicate.message);
  return value;
}

/**
 * Where and why text that JSON.parse rejected is not JSON: yaml's first error, or the first thing
 * yaml reads that JSON does not (a trailing comma, 'quotes', # comments), whichever comes first.
 */
function locateJsonError(text: string, doc: Document): { offset: number; reason: string } | undefined {
  const yamlError = doc.errors[0];
  let notJson: { offset: number; reason: string } | undefined;
  try {
    notJson = firstNonJsonToken(text);
  } catch {
    // Nesting deeper than the stack: yaml's error or JSON.parse's position must do.
  }
  if (notJson && (!yamlError || notJson.offset <= yamlError.pos[0])) return notJson;
  return yamlError && { offset: yamlError.pos[0], reason: jsonReason(text, yamlError) };
}

/** JSON.parse's own reason, at the position its message gives (V8 omits it for some errors). */
function jsonParsePosition(message: string): { offset: number; reason: string } {
  const at = / in JSON at position (\d+)/.exec(message);
  return at ? { offset: Number(at[1]), reason: message.slice(0, at.index) } : { offset: 0, reason: message };
}

/** The duplicate key that comes first in the text (yaml reports inner maps before outer ones). */
export function firstDuplicateKeyError(doc: Document): YAMLError | undefined {
  return doc.errors
    .filter((error) => error.code === "DUPLICATE_KEY")
    .reduce<YAMLError | undefined>(
      (first, error) => (first && first.pos[0] <= error.pos[0] ? first : error),
      undefined,
    );
}

/** yaml's reason, with its YAML terms put in JSON ones where they would puzzle a JSON writer. */
function jsonReason(text: string, error: YAMLError): string {
  if (error.code === "TAG_RESOLVE_FAILED" && error.message.startsWith("Unresolved plain scalar")) {
    const word = text.slice(error.pos[0], error.pos[1]).trim();
    return word ? `expected a value, found ${JSON.stringify(word)}` : "expected a value";
  }
  if (error.code === "UNEXPECTED_TOKEN") {
    // "Unexpected double-quoted-scalar token" names a YAML token type; show the text instead.
    const found = text.slice(error.pos[0], error.pos[1]);
    return `unexpected ${found.startsWith('"') ? found : JSON.stringify(found)}`;
  }
  return error.message;
}

/** Tokens yaml reads in a flow collection that JSON has no place for. */
const NOT_JSON: Partial<Record<CST.Token["type"], string>> = {
  "single-quoted-scalar": "strings must be in double quotes in JSON",
  comment: "comments are not allowed in JSON",
  anchor: "YAML anchors are not allowed in JSON",
  alias: "YAML aliases are not allowed in JSON",
  tag: "YAML tags are not allowed in JSON",
  "doc-start": "YAML document markers are not allowed in JSON",
  "doc-end": "YAML document markers are not allowed in JSON",
  "explicit-key-ind": "YAML explicit keys are not allowed in JSON",
};

/** The first token of yaml's CST that is YAML but not JSON, with why. */
function firstNonJsonToken(text: string): { offset: number; reason: string } | undefined {
  let comma: Located | undefined; // the last comma, until a token other than whitespace follows it
  for (const token of [...new Parser().parse(text)].flatMap(sourceTokens)) {
    const reason = NOT_JSON[token.type];
    if (reason) return { offset: token.offset, reason };
    if (token.type === "double-quoted-scalar") {
      // JSON strings hold no raw tab or newline; YAML's may.
      const control = /[\u0000-\u001f]/.exec(token.source);
      if (control)
        return { offset: token.offset + control.index, reason: "control character in string (escape it)" };
    }
    if (token.type === "space" || token.type === "newline") continue;
    if (comma && (token.type === "flow-map-end" || token.type === "flow-seq-end")) {
      return { offset: comma.offset, reason: "trailing comma (JSON allows none before a closing bracket)" };
    }
    comma = token.type === "comma" ? token : undefined;
  }
  return undefined;
}

type Located = { readonly type: CST.Token["type"]; readonly offset: number; readonly source: string };

/** A CST token and everything inside it, in text order. */
function sourceTokens(token: CST.Token | null | undefined): Located[] {
  if (!token) return [];
  const items = (list: readonly CST.CollectionItem[]): Located[] =>
    list.flatMap((item) => [
      ...item.start,
      ...sourceTokens(item.key),
      ...(item.sep ?? []),
      ...sourceTokens(item.value),
    ]);
  switch (token.type) {
    case "document":
      return [...token.start, ...sourceTokens(token.value), ...(token.end ?? [])];
    case "flow-collection":
      return [token.start, ...items(token.items), ...token.end];
    case "block-map":
    case "block-seq":
      return items(token.items);
    case "block-scalar":
      return [...token.props.flatMap(sourceTokens), token];
    case "doc-end":
    case "alias":
    case "scalar":
    case "single-quoted-scalar":
    case "double-quoted-scalar":
      return [token, ...(token.end ?? [])];
    default:
      return [token];
  }
}
