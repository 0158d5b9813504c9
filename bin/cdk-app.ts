/**
 * The CDK app `cdk.json` runs (`npx cdk synth|deploy`, `npx cdklocal deploy`): one CairnStack,
 * checked by cdk-nag's AWS Solutions rules on every synth, so a finding fails the synth.
 *
 * Context (`-c key=value`; lib/app-context.ts reads and checks it):
 *   stackName              stack name (default "Cairn"); the CLI finds it with `cairn --stack NAME`
 *   ephemeral              "true": the table and log groups are deleted with the stack and the table
 *                          is not deletion-protected (for trials and LocalStack); default "false"
 *   localstack             "true": no EventBridge schema registry, no CloudWatch dashboard, functions
 *                          on x86_64 (what LocalStack offers and runs); default "false"
 *   fargateSubnets         subnet-…,subnet-…  with fargateSecurityGroups=sg-…[,sg-…]: kernels may run
 *   fargateSecurityGroups  as ECS tasks on Fargate in those subnets (docs/deploy.md, "Fargate")
 */
import { App, Validations } from "aws-cdk-lib";
import cdkNag from "cdk-nag";
import { appSettings } from "../lib/app-context.ts";
import { CairnStack } from "../lib/cairn-stack.ts";

const app = new App();
const { stackName, cairn } = appSettings(app);

new CairnStack(app, stackName, {
  env: { account: process.env["CDK_DEFAULT_ACCOUNT"], region: process.env["CDK_DEFAULT_REGION"] },
  cairn,
});
Validations.of(app).addPlugins(new cdkNag.AwsSolutionsChecks(app));
app.synth();
