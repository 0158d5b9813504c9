/**
 * `cairn agent` as a program of its own, for hosts without a development checkout: the entry of
 * dist/cairn-agent.js (`npm run build:agent`, scripts/build-agent.ts), one file with the AWS SDK
 * bundled in that a stock Node.js 22 or later runs with no `npm install`. It takes `cairn agent`'s
 * options, parsed and checked by the CLI's own definition of the command (`--help` lists them).
 */
import { runCli } from "./cli/main.ts";
import { processIo } from "./cli/process-io.ts";

// exitCode rather than process.exit(): pending stderr writes to a pipe still get flushed.
process.exitCode = await runCli(["agent", ...process.argv.slice(2)], processIo());
