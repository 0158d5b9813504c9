/**
 * Synthesizes a CairnStack the way `npx cdk synth` does (cdk.json's feature flags, cdk-nag's AWS
 * Solutions checks as a validation plugin, deprecated CDK APIs made fatal), for the CDK tests.
 * Bundling the functions with esbuild is the slow part (about 11 s of CPU a synth, three quarters
 * of it), so each test file synthesizes once in `beforeAll` and shares the result, and a file that
 * never reads the functions' code synthesizes with `{ bundle: false }`: CDK's own switch
 * (`aws:cdk:bundling-stacks`, what `cdk synth --exclusively` uses) stages each function's code
 * unbundled under a placeholder hash; the template is otherwise the same.
 */
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Validations } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import cdkNag from "cdk-nag";
import { CairnStack, type CairnStackProps } from "../lib/cairn-stack.ts";

export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly DeletionPolicy?: string;
  readonly UpdateReplacePolicy?: string;
  readonly Metadata?: Record<string, unknown>;
}

export interface CfnTemplate {
  readonly Resources: Record<string, CfnResource>;
  readonly Outputs?: Record<string, { readonly Value: unknown; readonly Description?: string }>;
}

export interface Violation {
  readonly ruleName: string;
  readonly severity: string;
  readonly description: string;
  readonly violatingConstructs: readonly { readonly constructPath: string }[];
}

export interface Synthesized {
  readonly stack: CairnStack;
  readonly template: Template;
  readonly json: CfnTemplate;
  /** cdk-nag (and CDK default rule) violations from the validation report, if any. */
  readonly violations: readonly Violation[];
  /** Directory of the cloud assembly (bundled function code, templates). */
  readonly outdir: string;
  cleanup(): void;
}

export const TEST_ENV = { account: "123456789012", region: "eu-west-1" } as const;

export interface SynthOptions {
  /** The stack's name. @default "Cairn" */
  readonly stackName?: string;
  /** Bundle the functions with esbuild. @default true */
  readonly bundle?: boolean;
}

export function synthesize(props: CairnStackProps = {}, options: SynthOptions = {}): Synthesized {
  // Any deprecated CDK API the stack touches throws instead of printing a warning.
  process.env["JSII_DEPRECATED"] = "fail";
  const outdir = mkdtempSync(join(tmpdir(), "cairn-cdk-"));
  const context = (JSON.parse(readFileSync("cdk.json", "utf8")) as { context: Record<string, unknown> })
    .context;
  const app = new App({
    outdir,
    context: options.bundle === false ? { ...context, "aws:cdk:bundling-stacks": [] } : context,
  });
  const stack = new CairnStack(app, options.stackName ?? "Cairn", { env: TEST_ENV, ...props });
  Validations.of(app).addPlugins(new cdkNag.AwsSolutionsChecks(app));
  let synthError: Error | undefined;
  try {
    app.synth();
  } catch (error) {
    synthError = error instanceof Error ? error : new Error(String(error));
  }
  const reportFile = join(outdir, "validation-report.json");
  const report = existsSync(reportFile)
    ? (JSON.parse(readFileSync(reportFile, "utf8")) as { pluginReports: { violations: Violation[] }[] })
    : { pluginReports: [] };
  const violations = report.pluginReports.flatMap((r) => r.violations);
  if (synthError !== undefined && violations.length === 0) throw synthError;
  // Read back what synth wrote: a failed validation still leaves the template to inspect.
  const json = JSON.parse(readFileSync(join(outdir, stack.templateFile), "utf8")) as CfnTemplate;
  return {
    stack,
    template: Template.fromJSON(json),
    json,
    violations,
    outdir,
    cleanup: () => rmSync(outdir, { recursive: true, force: true }),
  };
}

/** Resources of one type, by logical id. */
export function resourcesOf(json: CfnTemplate, type: string): [string, CfnResource][] {
  return Object.entries(json.Resources).filter(([, r]) => r.Type === type);
}

/** The single resource of a type whose logical id starts with `prefix`. */
export function resourceNamed(json: CfnTemplate, type: string, prefix: string): [string, CfnResource] {
  const found = resourcesOf(json, type).filter(([id]) => id.startsWith(prefix));
  if (found.length !== 1) {
    throw new Error(
      `expected one ${type} with logical id ${prefix}…, found ${found.map(([id]) => id).join(", ") || "none"}`,
    );
  }
  return found[0]!;
}

/**
 * The part of a state machine's physical name known at synth: `<prefix>-<declared name>-`, which
 * the stack's UUID follows when CloudFormation resolves it (lib/state-machine.ts stateMachineNameFor).
 */
export function nameHead(value: unknown): string {
  const join = (value as { "Fn::Join"?: [string, unknown[]] } | undefined)?.["Fn::Join"];
  const head = join?.[1][0];
  if (typeof head !== "string")
    throw new Error(`not a name joined with the stack's UUID: ${JSON.stringify(value)}`);
  return head;
}
