/** Plain-text tables: left-aligned columns two spaces apart, no trailing spaces. */

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
