/**
 * Plain-text tables: left-aligned columns two spaces apart, no trailing spaces. Every cell is
 * printed as text (terminal-text.ts), whoever wrote it.
 */
import { printable, terminalText } from "./terminal-text.ts";

/** Styles a cell after padding (colours take no width): row 0 is the first row after the header. */
export type CellPaint = (row: number, column: number, padded: string) => string;

export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  paint?: CellPaint,
): string {
  return renderTableLines(headers, rows, paint).join("\n");
}

/** The header line and the row lines, apart (`list --watch` prints rows without the header). */
export function renderTableLines(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  paint?: CellPaint,
): string[] {
  rows = rows.map((row) => row.map(printable));
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i] ?? "").length)),
  );
  const line = (cells: readonly string[], row: number) =>
    cells
      .map((cell, i) => {
        const padded = i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0);
        if (paint === undefined || row < 0) return padded;
        // Trailing spaces stay outside the colour, so a line still ends where its text does.
        const text = padded.trimEnd();
        return paint(row, i, text) + padded.slice(text.length);
      })
      .join("  ")
      .trimEnd();
  return [line(headers, -1), ...rows.map((cells, row) => line(cells, row))];
}

/** `label  value` lines of a block, labels padded to one width, values printed as text. */
export function renderBlockRows(rows: readonly (readonly [string, string])[]): string[] {
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `  ${label.padEnd(width)}  ${terminalText(value)}`);
}
