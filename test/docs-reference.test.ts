/**
 * The reference pages (docs/reference/) are generated from the zod schemas and the CLI's commander
 * definitions: each file on disk must be what `npm run docs:reference` writes now, so a schema or a
 * command changed without its page fails here. The renderer is checked on a schema of its own, and
 * the staleness check on a page that differs, so neither check can pass by seeing nothing.
 */
import { describe, expect, test } from "vitest";
import { z } from "zod";
import { strictObject } from "../functions/core/spec.ts";
import {
  CLI_REFERENCE,
  fieldRows,
  generateReferences,
  readProjectFile,
  SPEC_REFERENCE,
  stalePages,
} from "../scripts/docs-reference.ts";

describe("docs/reference", () => {
  test("every generated page on disk is what the code generates now (else: npm run docs:reference)", async () => {
    const pages = await generateReferences();
    expect([...pages.keys()].sort()).toEqual([CLI_REFERENCE, SPEC_REFERENCE].sort());
    expect(stalePages(pages, (path) => readProjectFile(path))).toEqual([]);
  });

  test("a page that differs from the generated one, or is missing, is reported stale by its path", () => {
    const pages = new Map([
      [SPEC_REFERENCE, "# Spec reference\n\nnew\n"],
      [CLI_REFERENCE, "# CLI reference\n"],
    ]);
    const onDisk = new Map([[SPEC_REFERENCE, "# Spec reference\n\nold\n"]]);
    expect(stalePages(pages, (path) => onDisk.get(path))).toEqual([SPEC_REFERENCE, CLI_REFERENCE]);
    onDisk.set(SPEC_REFERENCE, pages.get(SPEC_REFERENCE)!).set(CLI_REFERENCE, pages.get(CLI_REFERENCE)!);
    expect(stalePages(pages, (path) => onDisk.get(path))).toEqual([]);
  });

  test("the spec page lists every field with its type, whether it is required, its default, its rules and its comment", () => {
    const schema = strictObject({
      name: z.string().min(1).max(8),
      size: strictObject({ cpu: z.number().gt(0).default(1) }).prefault({}),
      mode: z.enum(["a", "b"]).optional(),
      tags: z.array(strictObject({ key: z.string() })).max(3),
    });
    const comments = {
      description: undefined,
      fields: new Map([
        ["name", { description: "What it is called.", fields: new Map() }],
        [
          "size",
          { description: undefined, fields: new Map([["cpu", { description: "CPUs.", fields: new Map() }]]) },
        ],
      ]),
    };
    expect(fieldRows(schema, comments)).toEqual([
      {
        path: "name",
        type: "string",
        required: true,
        defaultValue: "",
        rules: "length ≥ 1, length ≤ 8",
        description: "What it is called.",
      },
      {
        path: "size",
        type: "object",
        required: false,
        defaultValue: "`{}`",
        rules: "no other fields",
        description: "",
      },
      {
        path: "size.cpu",
        type: "number",
        required: false,
        defaultValue: "`1`",
        rules: "> 0",
        description: "CPUs.",
      },
      {
        path: "mode",
        type: '`"a"` \\| `"b"`',
        required: false,
        defaultValue: "",
        rules: "",
        description: "",
      },
      {
        path: "tags",
        type: "list of object",
        required: true,
        defaultValue: "",
        rules: "items ≤ 3",
        description: "",
      },
      { path: "tags[].key", type: "string", required: true, defaultValue: "", rules: "", description: "" },
    ]);
  });

  test("the CLI page has every command's help, global options and exit codes included", async () => {
    const page = (await generateReferences()).get(CLI_REFERENCE)!;
    for (const heading of [
      "## cairn submit",
      "## cairn job create",
      "## cairn deployment scale",
      "## cairn agent",
    ]) {
      expect(page).toContain(`\n${heading}\n`);
    }
    expect(page).toContain("--stack <NAME>");
    expect(page).toMatch(/Usage: cairn submit/);
    expect(page).toMatch(/Exit codes:\n {2}0 {4}ok\n/);
  });
});
