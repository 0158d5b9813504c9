#!/usr/bin/env node
/**
 * `npx cairn …`: submit, follow and cancel Cairn sessions. Everything lives in bin/cli/; this
 * file only connects it to the process. It is JavaScript so that Node has no TypeScript to strip
 * before the compile cache is on: the cache keeps the CLI's modules with their types stripped, and
 * a start that finds them all there never loads Node's type stripper (about a quarter of a
 * start's CPU: 0.59 – 0.64 s of CPU for `cairn --help` instead of 0.77 – 0.79 s).
 */
import module from "node:module";

// Node's on-disk compile cache (in the OS temp directory; NODE_DISABLE_COMPILE_CACHE=1 turns it
// off): every later run of the CLI, and every `cairn agent` start, skips compiling its modules
// again, about half of a start's CPU. Only modules loaded after this call are cached, so the
// CLI is imported below, not statically. A stale entry is detected by its checksum and replaced.
module.enableCompileCache?.();

const { runCli } = await import("./cli/main.ts");
const { processIo } = await import("./cli/process-io.ts");

// exitCode rather than process.exit(): pending stdout writes to a pipe still get flushed.
process.exitCode = await runCli(process.argv.slice(2), processIo());
