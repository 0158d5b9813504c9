/**
 * Evaluates ASL reference paths (`$.a.b`, `$['a'][0]`, `$$.Execution.Name`): the restricted
 * JSONPath that `TimeoutSecondsPath` and `HeartbeatSecondsPath` take. The embedded runtime
 * evaluates those itself, against the state input as AWS does, because the interpreter would
 * evaluate them against the effective input after Parameters.
 */

export class ReferencePathError extends Error {
  readonly code = "InvalidReferencePath";
  constructor(message: string) {
    super(message);
    this.name = this.code;
  }
}

type Segment = string | number;

export function parseReferencePath(path: string): { root: "input" | "context"; segments: Segment[] } {
  let rest: string;
  let root: "input" | "context";
  if (path.startsWith("$$")) {
    root = "context";
    rest = path.slice(2);
  } else if (path.startsWith("$")) {
    root = "input";
    rest = path.slice(1);
  } else {
    throw new ReferencePathError(`'${path}' is not a reference path (it must start with $ or $$)`);
  }
  const segments: Segment[] = [];
  const token = /^(?:\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\])/;
  while (rest.length > 0) {
    const match = token.exec(rest);
    if (!match) throw new ReferencePathError(`'${path}' is not a reference path (unexpected '${rest}')`);
    const [whole, dotted, index, single, double] = match;
    segments.push(index !== undefined ? Number(index) : (dotted ?? single ?? double ?? ""));
    rest = rest.slice(whole.length);
  }
  return { root, segments };
}

/** The value at `path`, or `undefined` when the path selects nothing. */
export function evaluateReferencePath(path: string, input: unknown, context: unknown): unknown {
  const { root, segments } = parseReferencePath(path);
  let node: unknown = root === "input" ? input : context;
  for (const segment of segments) {
    if (typeof segment === "number") {
      if (!Array.isArray(node)) return undefined;
      node = node[segment];
    } else {
      if (typeof node !== "object" || node === null || Array.isArray(node)) return undefined;
      node = (node as Record<string, unknown>)[segment];
    }
  }
  return node;
}
