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
