/**
 * Cairn's layers, checked by `npm run lint` (dependency-cruiser) with no exceptions:
 *
 *   functions/core       pure decisions: imports only itself, zod, yaml and re2js (the clock and
 *                        randomness are kept out by eslint.config.js)
 *   functions/topology   contracts every side reads (resources, table schema, metric names,
 *                        IAM action lists, the agent signature): core and itself
 *   functions/app        the application layer (coordinator, stage entry, batch handlers under
 *                        app/lifecycle): core, topology, config; no AWS SDK
 *   functions/adapters   one per AWS service: implement the ports (functions/core/ports)
 *   functions/handlers   Lambda entry points and their wiring: anything in functions/
 *   lib                  the CDK stack: core and topology, never code that runs in a function
 *   agent                the host agent: core and topology
 *   bin                  the CLI and the CDK app: never the embedded runtime or the application
 *   dashboard            the web dashboard (served by `npm start` and `cairn dashboard`): reads
 *                        through the store's ports and adapters (core, topology, adapters, the
 *                        AWS SDK, the agents' log format); never the application, handlers, stack,
 *                        the rest of the agent, the CLI or the runtime,
 *                        and nothing below it (functions, lib, agent) imports it
 *   local                the embedded runtime: runs the product, and nothing of it imports local
 *
 * test/layers.test.ts proves each rule catches what it names.
 */
const PRODUCT = "^(functions|lib|agent|bin|dashboard)/";
const NOT_PRODUCT = "^(local|bench|scripts|test)/";
const AWS_OR_CDK = "node_modules/(@aws-sdk|@smithy|aws-cdk-lib|constructs)/";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      comment: "Modules form layers, not rings: a cycle means a piece belongs somewhere else.",
      severity: "error",
      from: { path: "^(functions|lib|agent|bin|dashboard|local)/" },
      to: { circular: true },
    },
    {
      name: "core-is-pure",
      comment:
        "functions/core imports only itself, zod, yaml and re2js (RE2 patterns): no AWS, no node:, no other layer.",
      severity: "error",
      from: { path: "^functions/core/" },
      to: { pathNot: "^(functions/core/|node_modules/(zod|yaml|re2js)/)" },
    },
    {
      name: "topology-is-contract",
      comment:
        "functions/topology is data every side shares: it reads only the core (and node:crypto for the signature).",
      severity: "error",
      from: { path: "^functions/topology/" },
      to: { pathNot: "^(functions/(topology|core)/|crypto$)" },
    },
    {
      name: "app-has-no-aws",
      comment: "The application layer talks to AWS only through its ports; adapters implement them.",
      severity: "error",
      from: { path: "^functions/app/" },
      to: { path: `^functions/(adapters|handlers)/|^(lib|local|agent|bin)/|${AWS_OR_CDK}` },
    },
    {
      name: "adapters-implement-ports",
      comment:
        "An adapter implements the core's ports (functions/core/ports), never the application or the wiring.",
      severity: "error",
      from: { path: "^functions/adapters/" },
      to: {
        path: "^functions/(app|handlers)/|^(lib|local|agent|bin)/",
      },
    },
    {
      name: "handlers-are-functions",
      comment:
        "Lambda entry points and their wiring run in a function: no CDK, CLI, agent or embedded runtime.",
      severity: "error",
      from: { path: "^functions/handlers/" },
      to: { path: "^(lib|local|agent|bin)/|node_modules/(aws-cdk-lib|constructs)/" },
    },
    {
      name: "stack-reads-contracts",
      comment:
        "The CDK stack reads shared contracts (functions/topology, the core's event schemas), never code that runs in a function.",
      severity: "error",
      from: { path: "^lib/" },
      to: { path: "^functions/(app|adapters|handlers)/|^(local|agent|bin)/" },
    },
    {
      name: "agent-is-standalone",
      comment: "The agent runs on a user's host: the core's protocol and the topology's contracts only.",
      severity: "error",
      from: { path: "^agent/" },
      to: {
        path: "^functions/(app|adapters|handlers)/|^(lib|local|bin)/|node_modules/(aws-cdk-lib|constructs)/",
      },
    },
    {
      name: "cli-never-embeds",
      comment:
        "The CLI talks to a stack or a runtime over its endpoints; it never imports the embedded runtime or the application.",
      severity: "error",
      from: { path: "^bin/" },
      to: { path: "^(local)/|^functions/(app|handlers)/" },
    },
    {
      name: "dashboard-reads-through-ports",
      comment:
        "The dashboard renders what the store's ports and adapters read (core, topology, adapters, the AWS SDK): never the application, the handlers, the CDK stack, the agent, the CLI or the embedded runtime.",
      severity: "error",
      from: { path: "^dashboard/" },
      to: {
        path: "^functions/(app|handlers)/|^(lib|local|agent|bin)/|node_modules/(aws-cdk-lib|constructs)/",
        // The format the agents write kernel logs in is theirs; the dashboard reads it, as the CLI does.
        pathNot: "^agent/log-events\\.ts$",
      },
    },
    {
      name: "dashboard-is-a-front-end",
      comment:
        "The dashboard sits beside the CLI: the CLI and the embedded runtime may serve it; functions, the stack and the agent never import it.",
      severity: "error",
      from: { path: "^(functions|lib|agent)/" },
      to: { path: "^dashboard/" },
    },
    {
      name: "product-never-imports-tooling",
      comment:
        "What ships (functions, lib, agent, bin) never imports the embedded runtime, benches, scripts or tests.",
      severity: "error",
      from: { path: PRODUCT },
      to: { path: NOT_PRODUCT },
    },
    {
      name: "runtime-is-not-the-cli",
      comment:
        "The embedded runtime runs the product's functions and agents; the CLI drives it from outside.",
      severity: "error",
      from: { path: "^local/" },
      to: { path: "^(bin|bench|scripts|test)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".json"] },
  },
};
