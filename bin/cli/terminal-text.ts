/**
 * Text from users, kernels and replicas reaches the terminal as text, never as instructions.
 * Session names are checked at submission, but kernel messages, history reasons, labels,
 * rejection reasons and descriptions are free text: an ESC in one (a kernel writes its
 * termination log, an agent reports it) would otherwise move the cursor, retitle the window,
 * rewrite the clipboard (OSC 52) or hide the lines after it. Every control character (C0 but
 * what is allowed, DEL, C1, bidi overrides and isolates) is written as `\uXXXX`.
 */

/** One line: whitespace runs become one space, every control character is escaped. */
export function printable(text: string): string {
  return escapeControls(text.replace(/\s+/g, " ").trim(), "");
}

/** Several lines (an error naming each problem): newlines and tabs stay, other controls are escaped. */
export function terminalText(text: string): string {
  return escapeControls(text, "\n\t");
}

/**
 * A kernel's output line for a terminal: as the program wrote it, colours (SGR, `ESC [ … m`) and
 * tabs included, but every other control escaped. A kernel is anyone's code, and whoever reads
 * its output (`cairn logs` on a colleague's job) must not have their terminal driven by it.
 */
export function terminalOutputLine(text: string): string {
  let out = "";
  let from = 0;
  for (const match of text.matchAll(SGR)) {
    out += escapeControls(text.slice(from, match.index), "\t") + match[0];
    from = match.index + match[0].length;
  }
  return out + escapeControls(text.slice(from), "\t");
}

/** Select Graphic Rendition: colours and weights, nothing else. */
const SGR = /\u001b\[[0-9;:]*m/g;

function escapeControls(text: string, allowed: string): string {
  let out = "";
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    out += isControl(code) && !allowed.includes(ch) ? `\\u${code.toString(16).padStart(4, "0")}` : ch;
  }
  return out;
}

function isControl(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x200e ||
    code === 0x200f ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}
