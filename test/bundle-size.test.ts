/**
 * What each Lambda bundle carries. Each handler the topology names is bundled
 * with esbuild exactly as lib/functions.ts bundles it, and its metafile is read: the YAML parser,
 * the CLI, the agent and the embedded runtime have no business in a function, and neither do
 * zod's translations (a `import { z } from "zod"` pulls in every locale; `import * as z` lets
 * esbuild shake them out). Each bundle's size is printed, and held under a budget so that such a
 * regression shows here rather than as a slower cold start.
 */
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, test } from "vitest";
import { FUNCTIONS } from "../functions/topology/index.ts";
import { FUNCTION_BUNDLING, PROJECT_ROOT } from "../lib/functions.ts";

/**
 * Was 1.56 MB before the YAML parser and zod's locales left the bundles (1.10 MB after); the ECS
 * client the Fargate executor sends with adds about 0.13 MB to the coordinator and
 * EnterStage (1.27 MB).
 */
const BUDGET_BYTES = 1_300_000;
/**
 * The coordinator alone invokes the submission filter, with @aws-sdk/client-lambda:
 * about 0.14 MB more (its schemas, and the event-stream support of InvokeWithResponseStream).
 * Only its bundle carries it (handlers/submission-filter.ts), so EnterStage keeps the budget.
 * 1.449 MB as last measured; the budget leaves room for our own code to grow.
 */
/**
 * EnterStage carries the coordinator it advances (whose passes send the agents' prepare and
 * start commands), with admission and drafts: 1.32 MB, 1.33 MB with the one-item store,
 * concurrent reservations and intake (our own code, no new dependency).
 */
/**
 * Both judge finished runs against retry policies, whose termination-message patterns RE2JS
 * compiles and matches as Armada's Go regexp does (core/retry/pattern.ts): 0.151 MB more each,
 * most of it RE2's Unicode tables. Placement and deployment leases, the agents' reconciliation,
 * RunTask's client token and the start-failure retry added about 6 KB more to each (1.62 MB and
 * 1.50 MB); the budgets leave about 20 KB for our own code to grow.
 */
const BUDGETS: Readonly<Record<string, number>> = { Coordinator: 1_640_000, EnterStage: 1_520_000 };

/** Inputs that must never be bundled into a function, with why. */
const FORBIDDEN: readonly { readonly pattern: RegExp; readonly what: string }[] = [
  { pattern: /(^|\/)node_modules\/yaml\//, what: "the YAML parser (the CLI reads YAML; functions get JSON)" },
  { pattern: /^bin\//, what: "the CLI" },
  { pattern: /^agent\//, what: "the agent" },
  { pattern: /^local\//, what: "the embedded runtime" },
  { pattern: /(^|\/)node_modules\/zod\/v4\/locales\/(?!en\.js$)/, what: "zod's translations" },
];

async function bundle(entry: string): Promise<{ bytes: number; inputs: string[] }> {
  const result = await build({
    entryPoints: [join(PROJECT_ROOT, entry)],
    absWorkingDir: PROJECT_ROOT,
    bundle: true,
    platform: "node",
    format: FUNCTION_BUNDLING.format,
    target: FUNCTION_BUNDLING.target,
    minify: FUNCTION_BUNDLING.minify,
    // bundleAwsSDK: the SDK is inside the bundle, as deployed.
    external: FUNCTION_BUNDLING.bundleAwsSDK ? [] : ["@aws-sdk/*"],
    write: false,
    metafile: true,
    outfile: "index.js",
    logLevel: "silent",
  });
  const [output] = Object.values(result.metafile.outputs);
  if (!output) throw new Error(`esbuild produced no output for ${entry}`);
  return { bytes: output.bytes, inputs: Object.keys(output.inputs) };
}

describe("the Lambda bundles", () => {
  test.each(FUNCTIONS.map((f) => [f.name, f.entry] as const))(
    "%s carries neither the YAML parser nor the CLI, and stays within its budget",
    async (name, entry) => {
      const { bytes, inputs } = await bundle(entry);
      console.log(`${name} (${entry}): ${bytes} bytes`);
      const found = FORBIDDEN.flatMap(({ pattern, what }) =>
        inputs.filter((input) => pattern.test(input)).map((input) => `${what}: ${input}`),
      );
      expect(found, `${name} bundle (${bytes} bytes) carries what it never uses`).toEqual([]);
      expect(bytes, `${name} bundle is ${bytes} bytes`).toBeLessThanOrEqual(BUDGETS[name] ?? BUDGET_BYTES);
      // The Tracer is imported only when tracing is on (handlers/telemetry.ts), but bundled:
      // in Lambda it is there to load.
      expect(inputs.some((input) => /(^|\/)node_modules\/aws-xray-sdk-core\//.test(input))).toBe(true);
    },
    60_000,
  );
});
