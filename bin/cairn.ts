#!/usr/bin/env node
/**
 * `npx cairn …`: submit, follow and cancel Cairn sessions. Everything lives in bin/cli/; this
 * file only connects it to the process.
 */
import { runCli } from "./cli/main.ts";
import { processIo } from "./cli/process-io.ts";

// exitCode rather than process.exit(): pending stdout writes to a pipe still get flushed.
process.exitCode = await runCli(process.argv.slice(2), processIo());
