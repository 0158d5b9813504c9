/**
 * JSON.parse keeps the last of two equal keys without a word, so `{"command": [...], ...,
 * "command": [...]}` would run a command the user may not have meant. This scanner finds the
 * first duplicate key (YAML specs already reject them: the parser's `uniqueKeys`).
 */

export interface DuplicateKey {
  readonly key: string;
  /** The object holding it, as a field path (`resources`, `env`); empty for the top level. */
  readonly path: string;
  /** Where the second occurrence starts (1-based). */
  readonly line: number;
  readonly column: number;
}

/**
 * The first duplicate key of `text`, or undefined when there is none. Text that is not valid
 * JSON yields undefined too: JSON.parse reports syntax errors with their own position.
 */
export function findDuplicateKey(text: string): DuplicateKey | undefined {
  let i = 0;
  const ws = (): void => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  const string = (): string => {
    const start = i;
    i++; // opening quote
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    if (i >= text.length) throw new NotJson();
    i++;
    // Compare keys as JSON does: after unescaping ("a" and "\u0061" are the same key).
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (path: string): DuplicateKey | undefined => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const seen = new Set<string>();
      ws();
      if (text[i] === "}") return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') throw new NotJson();
        const at = i;
        const key = string();
        if (seen.has(key)) return { key, path, ...lineAndColumn(text, at) };
        seen.add(key);
        ws();
        if (text[i] !== ":") throw new NotJson();
        i++;
        const inner = value(path ? `${path}.${key}` : key);
        if (inner) return inner;
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "}") return void i++;
        else throw new NotJson();
      }
    }
    if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") return void i++;
      for (let index = 0; ; index++) {
        const inner = value(`${path}[${index}]`);
        if (inner) return inner;
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "]") return void i++;
        else throw new NotJson();
      }
    }
    if (c === '"') return void string();
    // A number, true, false or null: skip to the next delimiter.
    const start = i;
    while (i < text.length && !",}] \t\n\r".includes(text[i]!)) i++;
    if (i === start) throw new NotJson();
    return undefined;
  };
  try {
    return value("");
  } catch (error) {
    if (error instanceof NotJson) return undefined;
    throw error;
  }
}

class NotJson extends Error {}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  return { line: before.split("\n").length, column: offset - lineStart + 1 };
}
