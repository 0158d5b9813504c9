/**
 * `npm run build:agent`: `cairn agent` as one file, dist/cairn-agent.js, for hosts without a
 * development checkout. esbuild bundles bin/cairn-agent.ts with everything it imports (the AWS
 * SDK included) into an ES module for Node 22 or later; nothing is left to `npm install`.
 *
 * ESM because the CLI's modules are ESM (top-level await); the SDK's CommonJS dependencies call
 * `require` for Node's built-in modules, which an ES module lacks, so the banner makes one.
 * Identifiers are kept (whitespace and syntax minified only): an agent's `unexpected error` stack
 * on a host should still name the functions it passed through.
 */
import { statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const AGENT_ENTRY = join(ROOT, "bin/cairn-agent.ts");
export const AGENT_BUNDLE = join(ROOT, "dist/cairn-agent.js");
/** The oldest Node the bundle is for: esbuild lowers any newer syntax, and refuses what it cannot. */
export const AGENT_NODE_TARGET = "node22";

const REQUIRE_BANNER =
  'import { createRequire as __cairnCreateRequire } from "node:module"; ' +
  "const require = __cairnCreateRequire(import.meta.url);";

export interface AgentBuild {
  readonly bytes: number;
  /** What the bundle still imports at run time (esbuild's metafile): Node's own modules only. */
  readonly externalImports: readonly string[];
}

/** Bundles the agent into `outfile`. */
export async function buildAgent(outfile: string = AGENT_BUNDLE): Promise<AgentBuild> {
  const result = await build({
    entryPoints: [AGENT_ENTRY],
    outfile,
    bundle: true,
    platform: "node",
    target: AGENT_NODE_TARGET,
    format: "esm",
    banner: { js: `#!/usr/bin/env node\n${REQUIRE_BANNER}` },
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: "none",
    logLevel: "warning",
    metafile: true,
  });
  const externalImports = Object.values(result.metafile.outputs).flatMap((o) =>
    o.imports.filter((i) => i.external).map((i) => i.path),
  );
  return { bytes: statSync(outfile).size, externalImports: [...new Set(externalImports)].sort() };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { bytes } = await buildAgent();
  console.log(`${relative(process.cwd(), AGENT_BUNDLE)}: ${(bytes / 1024 / 1024).toFixed(1)} MB`);
}
