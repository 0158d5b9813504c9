/**
 * JSON.parse keeps the last of two equal keys without a word, so `{"command": [...], ...,
 * "command": [...]}` would run a command the user may not have meant. yaml's `uniqueKeys` finds
 * them (JSON is YAML 1.2); this adds the key's name and the object holding it to the message.
 */
import { isMap, isNode, isScalar, isSeq, LineCounter, parseDocument } from "yaml";
import { firstDuplicateKeyError } from "../../functions/core/spec-text.ts";

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
 * JSON yields undefined too: the spec or policy parser reports syntax errors with their position.
 */
export function findDuplicateKey(text: string): DuplicateKey | undefined {
  try {
    JSON.parse(text);
  } catch {
    return undefined;
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false, schema: "json" });
  const error = firstDuplicateKeyError(doc);
  if (!error) return undefined;
  const offset = error.pos[0];
  const { line, col } = lineCounter.linePos(offset);
  // yaml compares keys after unescaping, as JSON does ("A" and "\u0041" are the same key).
  const found = keyAt(doc.contents, offset, "") ?? { key: text.slice(offset, error.pos[1]), path: "" };
  return { ...found, line, column: col };
}

/** The key whose text starts at `offset`, and the field path of the object holding it. */
function keyAt(node: unknown, offset: number, path: string): { key: string; path: string } | undefined {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : "";
      if (isNode(pair.key) && pair.key.range?.[0] === offset) return { key, path };
      const inner = keyAt(pair.value, offset, path ? `${path}.${key}` : key);
      if (inner) return inner;
    }
  }
  if (isSeq(node)) {
    for (const [index, item] of node.items.entries()) {
      const inner = keyAt(item, offset, `${path}[${index}]`);
      if (inner) return inner;
    }
  }
  return undefined;
}
