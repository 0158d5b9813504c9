/**
 * The user guide's links resolve: every relative link in README.md and docs/ names a file that
 * exists and, with `#anchor`, a heading in it (GitHub's anchors: lower case, punctuation dropped,
 * spaces to hyphens). Sections move between pages as the guide grows; a link left pointing at the
 * old place fails here instead of in a reader's browser.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { expect, test } from "vitest";

const PAGES = [
  "README.md",
  ...readdirSync("docs", { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".md"))
    .map((name) => join("docs", name)),
];

/** GitHub's anchor for a heading: lower case, characters other than letters, digits, `-`, `_` and spaces dropped, spaces to hyphens. */
export function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, "")
    .replaceAll(" ", "-");
}

/** The anchors a Markdown page defines, with GitHub's -1, -2 … for repeated headings. */
function anchorsOf(page: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of readFileSync(page, "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (heading === null) continue;
    const base = githubAnchor(heading[1]!.replace(/`/g, ""));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Relative Markdown links of a page, outside code: `[text](target)`. */
function linksOf(page: string): string[] {
  const links: string[] = [];
  let fenced = false;
  for (const line of readFileSync(page, "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    if (fenced) continue;
    for (const match of line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1]!;
      if (!/^[a-z]+:/i.test(target)) links.push(target);
    }
  }
  return links;
}

test("GitHub's anchors: punctuation dropped, spaces to hyphens", () => {
  expect(githubAnchor("Validating: job templates and the submission filter")).toBe(
    "validating-job-templates-and-the-submission-filter",
  );
  expect(githubAnchor("Drafts (Configuring)")).toBe("drafts-configuring");
  expect(githubAnchor("On a host without a checkout: dist/cairn-agent.js")).toBe(
    "on-a-host-without-a-checkout-distcairn-agentjs",
  );
});

test("the check sees the links and headings it is meant to check", () => {
  expect(linksOf("README.md")).toContain("docs/README.md");
  expect(anchorsOf("docs/jobs.md")).toContain("drafts-configuring");
  expect(PAGES).toContain(join("docs", "reference", "spec.md"));
});

test.each(PAGES)("every relative link in %s resolves to a file and a heading", (page) => {
  const broken: string[] = [];
  for (const link of linksOf(page)) {
    const [path = "", anchor] = link.split("#");
    const target = path === "" ? page : normalize(join(dirname(page), decodeURI(path)));
    if (!existsSync(target)) {
      broken.push(`${link}: no file ${target}`);
      continue;
    }
    if (anchor === undefined || statSync(target).isDirectory() || !target.endsWith(".md")) continue;
    if (!anchorsOf(target).has(anchor)) broken.push(`${link}: no heading #${anchor} in ${target}`);
  }
  expect(broken).toEqual([]);
});

test("every file docs/architecture.md names exists, so its path can be followed in the code", () => {
  const text = readFileSync("docs/architecture.md", "utf8");
  const named = [
    ...text.matchAll(/`((?:functions|lib|bin|agent|dashboard|local|statemachines|test|scripts)\/[\w./-]+)`/g),
  ]
    .map((m) => m[1]!.replace(/[.,:;]$/, ""))
    .filter((path) => !path.includes("<"));
  expect(named.length).toBeGreaterThan(20);
  expect(named.filter((path) => !existsSync(path))).toEqual([]);
});
