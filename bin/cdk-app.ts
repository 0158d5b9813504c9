/**
 * The CDK app `cdk.json` runs (`npx cdk synth|deploy`, `npx cdklocal deploy`): one CairnStack,
 * checked by cdk-nag's AWS Solutions rules on every synth, so a finding fails the synth.
 *
 * Context (`-c key=value`):
 *   stackName   stack name (default "Cairn"); the CLI finds it with `cairn --stack NAME`
 *   ephemeral   "true": the table and log groups are deleted with the stack and the table is
 *               not deletion-protected (for trials and LocalStack); default "false"
 */
import { App, RemovalPolicy, Validations } from "aws-cdk-lib";
import cdkNag from "cdk-nag";
import { CairnStack } from "../lib/cairn-stack.ts";

const app = new App();
const stackName = stringContext("stackName", "Cairn");
const ephemeral = booleanContext("ephemeral", false);

new CairnStack(app, stackName, {
  env: { account: process.env["CDK_DEFAULT_ACCOUNT"], region: process.env["CDK_DEFAULT_REGION"] },
  cairn: ephemeral ? { deletionProtection: false, removalPolicy: RemovalPolicy.DESTROY } : {},
});
Validations.of(app).addPlugins(new cdkNag.AwsSolutionsChecks(app));
app.synth();

function stringContext(key: string, fallback: string): string {
  const value: unknown = app.node.tryGetContext(key);
  if (value === undefined) return fallback;
  if (typeof value !== "string" || !/^[A-Za-z][A-Za-z0-9-]{0,127}$/.test(value)) {
    throw new Error(
      `context ${key}: must be a CloudFormation stack name (letters, digits, hyphens), got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

function booleanContext(key: string, fallback: boolean): boolean {
  const value: unknown = app.node.tryGetContext(key);
  if (value === undefined) return fallback;
  if (value === true || value === "true") return true;
  if (value === false || value === "false") return false;
  throw new Error(`context ${key}: must be "true" or "false", got ${JSON.stringify(value)}`);
}
