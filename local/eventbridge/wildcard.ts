/**
 * EventBridge `wildcard` values: `*` matches any run of characters (including none), `\*` is a
 * literal asterisk and `\\` a literal backslash. Two `*` in a row and any other escape are
 * rejected, as AWS rejects them (aws/event-ruler README, "Wildcard matching").
 */
export type StringTest = (value: string) => boolean;

export function compileWildcard(pattern: string, fail: (reason: string) => never): StringTest {
  let source = "";
  let literal = true;
  let previousWasStar = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === "*") {
      if (previousWasStar) fail(`Consecutive wildcard characters at pos ${i} in wildcard "${pattern}"`);
      source += "[\\s\\S]*";
      literal = false;
      previousWasStar = true;
      continue;
    }
    previousWasStar = false;
    if (ch === "\\") {
      const next = pattern[i + 1];
      if (next !== "*" && next !== "\\")
        fail(`Invalid escape character at pos ${i} in wildcard "${pattern}"`);
      source += escapeRegExp(next);
      i++;
      continue;
    }
    source += escapeRegExp(ch);
  }
  if (literal) {
    const exact = unescapeLiteral(pattern);
    return (value) => value === exact;
  }
  const re = new RegExp(`^${source}$`, "u");
  return (value) => re.test(value);
}

function unescapeLiteral(pattern: string): string {
  return pattern.replace(/\\([*\\])/g, "$1");
}

function escapeRegExp(ch: string): string {
  return ch.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * AWS refuses a rule whose wildcards are too costly to match: "If a rule is too complex,
 * EventBridge returns an InvalidEventPatternException" (User Guide, "Wildcards and event pattern
 * complexity"). The measure is aws/event-ruler's MachineComplexityEvaluator: the largest number
 * of wildcard-pattern prefixes one input value can be inside at once, over all the wildcard
 * values (and anything-but wildcards) that share a field's byte machine, each value compiled as
 * its JSON text with the quotes (`"*:stack/a/*"`) and matched byte by byte (UTF-8). AWS does not
 * publish the threshold: more than 10 is refused, which agrees with the evaluator's own test
 * cases and with what users report (three `*:stack/<name>/*` values in one field are accepted,
 * a fourth is refused with "Rule is too complex").
 */
export const MAX_WILDCARD_COMPLEXITY = 10;

export const WILDCARD_TOO_COMPLEX =
  "Rule is too complex - try using fewer wildcard characters or fewer repeating character sequences after a wildcard character";

const STAR = -1;

/**
 * The complexity of a field's wildcard patterns (values already validated by compileWildcard),
 * evaluated up to `cap + 1`: exact up to `cap`, "more than cap" beyond it. Each pattern is one
 * value or several (an anything-but wildcard list). As in event-ruler's byte machine, the values
 * of one pattern share their states up to and including the first star, and a state counts once
 * per pattern that passes through it.
 */
export function wildcardComplexity(
  patternsOfField: readonly (readonly string[])[],
  cap = MAX_WILDCARD_COMPLEXITY,
): number {
  const owners: number[] = [];
  const texts: string[] = [];
  patternsOfField.forEach((values, owner) => {
    for (const value of values) {
      owners.push(owner);
      texts.push(value);
    }
  });
  // One token list per value: the bytes of `"value"`, with STAR for each unescaped `*`.
  const patterns = texts.map(wildcardTokens);
  const firstStar = patterns.map((tokens) => tokens.indexOf(STAR));
  /** The state's identity: shared within a pattern up to its first star, else its own. */
  const identity = (id: number): string => {
    const p = Math.floor(id / 65536);
    const i = id % 65536;
    const star = firstStar[p]!;
    return star < 0 || i <= star ? `${owners[p]}:${patterns[p]!.slice(0, i + 1).join(",")}` : `v${p}:${i}`;
  };
  // A state is [pattern, token index]: "just consumed this literal" or "inside this star".
  const alphabet = new Set<number>();
  for (const tokens of patterns) for (const t of tokens) if (t !== STAR) alphabet.add(t);
  alphabet.add(256); // Any byte no value names: only stars take it.

  /** Adds state (p, i) and, when the next token is a star, that star too (it may match nothing). */
  const add = (into: Set<number>, p: number, i: number): void => {
    const tokens = patterns[p]!;
    into.add(p * 65536 + i);
    if (tokens[i] !== STAR && tokens[i + 1] === STAR) into.add(p * 65536 + i + 1);
  };
  /** From "before token i" of pattern p, on byte b. */
  const advance = (into: Set<number>, p: number, i: number, b: number): void => {
    const tokens = patterns[p]!;
    const t = tokens[i];
    if (t === undefined) return;
    if (t === STAR) {
      into.add(p * 65536 + i); // The star takes b.
      if (tokens[i + 1] === b) add(into, p, i + 1);
    } else if (t === b) add(into, p, i);
  };

  let worst = 0;
  const seen = new Set<string>();
  // The start: nothing consumed yet (not itself counted).
  let frontier: { start: boolean; states: Set<number> }[] = [{ start: true, states: new Set() }];
  while (frontier.length > 0) {
    const next: typeof frontier = [];
    for (const { start, states } of frontier) {
      for (const b of alphabet) {
        const reached = new Set<number>();
        if (start) for (let p = 0; p < patterns.length; p++) advance(reached, p, 0, b);
        for (const id of states) {
          const p = Math.floor(id / 65536);
          const i = id % 65536;
          if (patterns[p]![i] === STAR) advance(reached, p, i, b);
          else advance(reached, p, i + 1, b);
        }
        if (reached.size === 0) continue;
        worst = Math.max(worst, new Set([...reached].map(identity)).size);
        if (worst > cap) return worst;
        const key = [...reached].sort((x, y) => x - y).join(",");
        if (seen.has(key)) continue;
        seen.add(key);
        next.push({ start: false, states: reached });
      }
    }
    frontier = next;
  }
  return worst;
}

function wildcardTokens(value: string): number[] {
  const tokens: number[] = [0x22];
  const bytes = new TextEncoder();
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!;
    if (ch === "*") tokens.push(STAR);
    else if (ch === "\\") {
      tokens.push(...bytes.encode(value[i + 1] ?? ""));
      i++;
    } else {
      // Surrogate pairs: encode the whole code point.
      const cp = value.codePointAt(i)!;
      const s = String.fromCodePoint(cp);
      tokens.push(...bytes.encode(s));
      i += s.length - 1;
    }
  }
  tokens.push(0x22);
  return tokens;
}
