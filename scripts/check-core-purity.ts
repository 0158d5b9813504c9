/**
 * Keeps functions/core pure: no AWS SDK, no CDK, no adapters or handlers, no wall clock.
 * Run by `npm run lint` (and so by CI). Exits non-zero naming every offending import.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const CORE = "functions/core";
const FORBIDDEN_IMPORTS = [
  /^@aws-sdk\//,
  /^aws-cdk-lib/,
  /^constructs$/,
  /^node:/,
  /\/adapters\//,
  /\/handlers\//,
];
const FORBIDDEN_CALLS = [/\bDate\.now\(\)/, /\bnew Date\(\)/, /\bMath\.random\(\)/];

function* files(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else if (path.endsWith(".ts")) yield path;
  }
}

const problems: string[] = [];
for (const file of files(CORE)) {
  const text = readFileSync(file, "utf8");
  for (const match of text.matchAll(/\bfrom\s+["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g)) {
    const spec = match[1] ?? match[2] ?? "";
    const escapesCore = spec.startsWith(".") && !join(file, "..", spec).startsWith(CORE);
    if (FORBIDDEN_IMPORTS.some((re) => re.test(spec)) || escapesCore) {
      problems.push(
        `${relative(".", file)}: imports "${spec}" (the core may import only itself, zod and yaml)`,
      );
    }
  }
  text.split("\n").forEach((line, i) => {
    if (FORBIDDEN_CALLS.some((re) => re.test(line)) && !line.trim().startsWith("//")) {
      problems.push(`${relative(".", file)}:${i + 1}: reads the clock or randomness; pass it in`);
    }
  });
}

if (problems.length > 0) {
  console.error(`core purity check failed:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log("core purity check: ok");
