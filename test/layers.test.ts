/**
 * The layering check (.dependency-cruiser.cjs, run by `npm run lint`): this tree passes with no
 * exceptions, and every rule catches the import it names, on a scratch tree laid out like this one.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { cruise, type ICruiseResult } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";

const ROOT = resolve(import.meta.dirname, "..");
const LAYERS = ["functions", "lib", "agent", "bin", "dashboard", "local"];

async function check(baseDir: string): Promise<ICruiseResult> {
  const options = await extractDepcruiseOptions(join(ROOT, ".dependency-cruiser.cjs"));
  const { output } = await cruise(
    LAYERS,
    { ...options, baseDir, tsConfig: undefined, tsPreCompilationDeps: true },
    { extensions: [".ts", ".js", ".json"] },
  );
  if (typeof output === "string") throw new Error("dependency-cruiser returned text, expected a result");
  return output;
}

/** `rule: from → to` for every violation. */
function violations(result: ICruiseResult): string[] {
  return result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
}

describe("the layering check", () => {
  test("this repository has no violation and no exception", async () => {
    const result = await check(ROOT);
    expect(violations(result)).toEqual([]);
    expect(result.summary.totalCruised).toBeGreaterThan(200);
  });

  const scratch = mkdtempSync(join(tmpdir(), "cairn-layers-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  symlinkSync(join(ROOT, "node_modules"), join(scratch, "node_modules"));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(scratch, path)), { recursive: true });
    writeFileSync(join(scratch, path), text);
  };
  // Every file a fixture below points at.
  for (const path of [
    "functions/core/model.ts",
    "functions/topology/index.ts",
    "functions/app/coordinator.ts",
    "functions/core/ports/sessions.ts",
    "functions/adapters/dynamo/store.ts",
    "functions/handlers/wiring.ts",
    "lib/stack.ts",
    "local/runtime.ts",
    "bench/local.ts",
    "dashboard/server.ts",
    "agent/log-events.ts",
    "agent/host.ts",
  ]) {
    write(path, "export const x = 1;\n");
  }

  // [rule, importing file, import]: each must be reported under its rule.
  const cases: readonly (readonly [string, string, string])[] = [
    ["core-is-pure", "functions/core/a.ts", "../adapters/dynamo/store.ts"],
    ["core-is-pure", "functions/core/b.ts", "node:fs"],
    ["core-is-pure", "functions/core/c.ts", "@aws-sdk/client-dynamodb"],
    ["topology-is-contract", "functions/topology/a.ts", "../app/coordinator.ts"],
    ["app-has-no-aws", "functions/app/a.ts", "../adapters/dynamo/store.ts"],
    ["app-has-no-aws", "functions/app/b.ts", "@aws-sdk/client-sfn"],
    ["adapters-implement-ports", "functions/adapters/a.ts", "../app/coordinator.ts"],
    ["handlers-are-functions", "functions/handlers/a.ts", "../../lib/stack.ts"],
    ["stack-reads-contracts", "lib/a.ts", "../functions/handlers/wiring.ts"],
    ["agent-is-standalone", "agent/a.ts", "../functions/app/coordinator.ts"],
    ["agent-is-standalone", "agent/b.ts", "aws-cdk-lib"],
    ["cli-never-embeds", "bin/cli/a.ts", "../../local/runtime.ts"],
    ["product-never-imports-tooling", "functions/app/c.ts", "../../bench/local.ts"],
    ["runtime-is-not-the-cli", "local/a.ts", "../bench/local.ts"],
    ["dashboard-reads-through-ports", "dashboard/a.ts", "../functions/app/coordinator.ts"],
    ["dashboard-reads-through-ports", "dashboard/b.ts", "../local/runtime.ts"],
    ["dashboard-reads-through-ports", "dashboard/c.ts", "../bin/cli/a.ts"],
    ["dashboard-reads-through-ports", "dashboard/e.ts", "../agent/host.ts"],
    ["dashboard-is-a-front-end", "functions/adapters/b.ts", "../../dashboard/server.ts"],
    ["dashboard-is-a-front-end", "lib/b.ts", "../dashboard/server.ts"],
    ["product-never-imports-tooling", "dashboard/d.ts", "../bench/local.ts"],
  ];
  for (const [, from, spec] of cases) write(from, `import { x } from "${spec}";\nexport const y = x;\n`);
  // Allowed: an adapter implementing a port, the stack reading the topology, a two-file ring.
  write("functions/adapters/ok.ts", 'import { x } from "../core/ports/sessions.ts";\nexport const y = x;\n');
  write("lib/ok.ts", 'import { x } from "../functions/topology/index.ts";\nexport const y = x;\n');
  // Allowed: the dashboard reading through an adapter; the CLI and the runtime serving it.
  write(
    "dashboard/ok.ts",
    'import { x } from "../functions/adapters/dynamo/store.ts";\nexport const y = x;\n',
  );
  write("dashboard/logs/ok.ts", 'import { x } from "../../agent/log-events.ts";\nexport const y = x;\n');
  write("bin/cli/ok.ts", 'import { x } from "../../dashboard/server.ts";\nexport const y = x;\n');
  write("local/ok.ts", 'import { x } from "../dashboard/server.ts";\nexport const y = x;\n');
  // Allowed: the agent calling AWS through the SDK.
  write("agent/ok.ts", 'import { SQSClient } from "@aws-sdk/client-sqs";\nexport const y = SQSClient;\n');
  write("functions/core/ring-a.ts", 'import { b } from "./ring-b.ts";\nexport const a = () => b;\n');
  write("functions/core/ring-b.ts", 'import { a } from "./ring-a.ts";\nexport const b = () => a;\n');

  test("every rule reports the import it forbids, and only those", async () => {
    const found = violations(await check(scratch));
    for (const [rule, from] of cases) {
      expect(
        found.some((v) => v.startsWith(`${rule}: ${from} →`)),
        `${rule} on ${from}`,
      ).toBe(true);
    }
    expect(found.filter((v) => v.includes("/ok.ts"))).toEqual([]);
    expect(found.some((v) => v.startsWith("no-cycles: functions/core/ring-"))).toBe(true);
  });
});
