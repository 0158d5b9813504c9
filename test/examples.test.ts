/** Every example spec parses: the README and the examples' comments point users at them. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { jobSettings } from "../functions/core/jobs.ts";
import { parseSpecText } from "../functions/core/spec.ts";

const dir = join(import.meta.dirname, "..", "examples");
const specs = readdirSync(dir).filter((f) => f.endsWith(".yaml"));

test.each(specs)("examples/%s is a valid spec", (file) => {
  expect(() => parseSpecText(readFileSync(join(dir, file), "utf8"))).not.toThrow();
});

test("the job examples say what they claim", () => {
  const gang = parseSpecText(readFileSync(join(dir, "gang.yaml"), "utf8"));
  expect(jobSettings(gang)).toEqual({ coscheduled: true, perAgent: 1, maxTaskFailures: 0 });
  const tasks = parseSpecText(readFileSync(join(dir, "tasks.yaml"), "utf8"));
  expect(jobSettings(tasks)).toEqual({ coscheduled: false, perAgent: 1, maxTaskFailures: 1 });
  expect(tasks.timeouts.pending).toBe(120);
});
