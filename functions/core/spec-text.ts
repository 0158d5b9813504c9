/**
 * Spec text (a file `cairn submit` reads) to a session spec: YAML, or JSON when the text starts
 * with `{` or `[`, with line and column on every syntax error. Apart from spec.ts so that only
 * the CLI carries the YAML parser: the Lambda functions receive specs as JSON in events and
 * never parse text (test/bundle-size.test.ts keeps `yaml` out of their bundles).
 */
import { LineCounter, parseDocument, visit, type Document } from "yaml";
import type { SessionSpec } from "./model.ts";
import { parseSessionSpec, SpecSyntaxError, type SpecFormat } from "./spec.ts";

/** Parses spec text; the format is JSON when the text starts with `{` or `[`, else YAML. */
export function parseSpecText(text: string, format?: SpecFormat): SessionSpec {
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const chosen = format ?? (/^\s*[{[]/.test(source) ? "json" : "yaml");
  return parseSessionSpec(chosen === "json" ? parseJsonText(source) : parseYamlText(source));
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
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    // V8's messages omit the position for some errors, so locate it ourselves.
    const found = locateJsonError(text) ?? { offset: 0, reason: (error as Error).message };
    const { line, column } = lineAndColumn(text, found.offset);
    throw new SpecSyntaxError("json", line, column, found.reason);
  }
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  return { line: before.split("\n").length, column: offset - lineStart + 1 };
}

/** A minimal JSON scanner, run only after JSON.parse failed, to find where and why. */
function locateJsonError(text: string): { offset: number; reason: string } | undefined {
  let i = 0;
  const fail = (reason: string): never => {
    throw new JsonSyntax(i, reason);
  };
  const describe = (): string => (i >= text.length ? "end of input" : `character ${JSON.stringify(text[i])}`);
  const ws = (): void => {
    while (i < text.length && " \t\n\r".includes(text[i] ?? "")) i++;
  };
  const expect = (char: string, what: string): void => {
    ws();
    if (text[i] !== char) fail(`expected ${what}, found ${describe()}`);
    i++;
  };
  const string = (): void => {
    i++; // opening quote
    while (i < text.length && text[i] !== '"') {
      const c = text.charCodeAt(i);
      if (c < 0x20) fail("control character in string (escape it)");
      if (text[i] === "\\") {
        i++;
        if (/^u[0-9a-fA-F]{4}/.test(text.slice(i, i + 5))) i += 5;
        else if ('"\\/bfnrt'.includes(text[i] ?? "x")) i++;
        else fail(`invalid escape sequence "\\${text[i] ?? ""}"`);
      } else i++;
    }
    if (i >= text.length) fail("unterminated string");
    i++;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail(`expected a double-quoted property name, found ${describe()}`);
        string();
        expect(":", '":"');
        value();
        ws();
        if (text[i] === "}") return void i++;
        if (text[i] !== ",") fail(`expected "," or "}", found ${describe()}`);
        i++;
      }
    }
    if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === "]") return void i++;
        if (text[i] !== ",") fail(`expected "," or "]", found ${describe()}`);
        i++;
      }
    }
    if (c === '"') return string();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![\w.+-])/.exec(
      text.slice(i),
    );
    if (!literal) fail(/^[-\d]/.test(c ?? "") ? "invalid number" : `expected a value, found ${describe()}`);
    i += literal?.[0].length ?? 0;
  };
  try {
    value();
    ws();
    if (i < text.length) fail(`unexpected ${describe()} after the end of the JSON value`);
    return undefined;
  } catch (error) {
    return error instanceof JsonSyntax ? { offset: error.offset, reason: error.reason } : undefined;
  }
}

class JsonSyntax extends Error {
  readonly offset: number;
  readonly reason: string;
  constructor(offset: number, reason: string) {
    super(reason);
    this.offset = offset;
    this.reason = reason;
  }
}
