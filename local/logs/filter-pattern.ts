/**
 * FilterLogEvents' `filterPattern` for unstructured events, the part the embedded endpoint
 * supports: terms (all must occur, case-sensitive), "quoted phrases", `?term` (any of them) and
 * `-term` (must not occur). JSON (`{ … }`), space-delimited (`[ … ]`) and regex (`%…%`) patterns
 * are refused with a clear error rather than matched wrongly.
 */
import { InvalidParameterError } from "./errors.ts";

export type MessageMatcher = (message: string) => boolean;

/** Unquoted terms are limited to these, as on AWS; anything else goes in double quotes. */
const BARE_TERM = /^[A-Za-z0-9_]+$/;

export function compileFilterPattern(pattern: string | undefined): MessageMatcher {
  const text = (pattern ?? "").trim();
  if (text === "") return () => true;
  const first = text[0];
  if (first === "{" || first === "[" || first === "%") {
    const kind = first === "{" ? "JSON" : first === "[" ? "space-delimited" : "regular expression";
    throw new InvalidParameterError(
      `filterPattern: ${kind} patterns are not supported by the embedded CloudWatch Logs ` +
        '(it matches plain terms, "quoted phrases", ?any-of terms and -excluded terms)',
    );
  }
  const all: string[] = [];
  const any: string[] = [];
  const none: string[] = [];
  for (const token of tokens(text)) {
    const target = token.prefix === "?" ? any : token.prefix === "-" ? none : all;
    if (!token.quoted && !BARE_TERM.test(token.term)) {
      throw new InvalidParameterError(
        `Invalid character(s) in term '${token.term}' (filterPattern: put terms with other than letters, digits and _ in double quotes)`,
      );
    }
    target.push(token.term);
  }
  if (any.length > 0 && all.length > 0) {
    throw new InvalidParameterError(
      "filterPattern: the embedded CloudWatch Logs does not combine ?terms with plain terms",
    );
  }
  return (message) =>
    all.every((t) => message.includes(t)) &&
    (any.length === 0 || any.some((t) => message.includes(t))) &&
    !none.some((t) => message.includes(t));
}

interface Token {
  readonly prefix: "" | "?" | "-";
  readonly term: string;
  readonly quoted: boolean;
}

function* tokens(text: string): Generator<Token> {
  let at = 0;
  while (at < text.length) {
    if (/\s/.test(text[at]!)) {
      at++;
      continue;
    }
    let prefix: Token["prefix"] = "";
    if (text[at] === "?" || text[at] === "-") {
      prefix = text[at] as "?" | "-";
      at++;
    }
    if (text[at] === '"') {
      let end = at + 1;
      let term = "";
      while (end < text.length && text[end] !== '"') {
        // \" inside a phrase is a quote character.
        if (text[end] === "\\" && end + 1 < text.length) end++;
        term += text[end];
        end++;
      }
      if (end >= text.length) throw new InvalidParameterError("filterPattern: unterminated quoted phrase");
      if (term === "") throw new InvalidParameterError('filterPattern: empty quoted phrase ""');
      yield { prefix, term, quoted: true };
      at = end + 1;
      continue;
    }
    let end = at;
    while (end < text.length && !/\s/.test(text[end]!)) end++;
    const term = text.slice(at, end);
    if (term === "") throw new InvalidParameterError(`filterPattern: "${prefix}" must be followed by a term`);
    yield { prefix, term, quoted: false };
    at = end;
  }
}
