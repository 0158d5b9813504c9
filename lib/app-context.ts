/**
 * What the CDK app (`bin/cdk-app.ts`, the app `cdk.json` runs) takes from context, `-c key=value`
 * on the command line, and the CairnStack props it makes of it. Everything synthesizes offline:
 * nothing here looks anything up in an account.
 *
 *   stackName              the stack's name (default "Cairn"); the CLI finds it with `--stack NAME`
 *   ephemeral              "true": the table and log groups go with the stack, and the table is not
 *                          deletion-protected (for trials and LocalStack); default "false"
 *   localstack             "true": leave out what LocalStack does not offer (the EventBridge schema
 *                          registry, the CloudWatch dashboard) and run the functions on x86_64, the
 *                          architecture LocalStack's Lambda runs on a PC; default "false"
 *   fargateSubnets         `subnet-…,subnet-…`: Fargate kernels (the `fargate` prop) in these subnets,
 *   fargateSecurityGroups  `sg-…[,sg-…]` with these security groups, as AWS Batch's first-run
 *                          wizard asks for them; both or neither
 */
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { RemovalPolicy } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { CairnDeploymentError } from "./errors.ts";
import type { CairnProps } from "./props.ts";

export const DEFAULT_STACK_NAME = "Cairn";

/** A context value the app cannot use, naming the key and why. */
export class AppContextError extends CairnDeploymentError {
  override readonly name = "AppContextError";
  readonly code = "CAIRN_CONTEXT";
  readonly key: string;
  constructor(key: string, reason: string) {
    super(`context ${key}: ${reason}`);
    this.key = key;
  }
}

export interface AppSettings {
  readonly stackName: string;
  readonly cairn: CairnProps;
}

/** EC2's ids: the prefix and hexadecimal digits (8 or 17 in ids EC2 makes today). */
const SUBNET_ID = /^subnet-[0-9a-f]{1,17}$/;
const SECURITY_GROUP_ID = /^sg-[0-9a-f]{1,17}$/;

/** Reads the app's context; `scope` (the App) holds the imported subnets and security groups. */
export function appSettings(scope: Construct): AppSettings {
  const context = (key: string): unknown => scope.node.tryGetContext(key);
  const stackName = stackNameContext(context("stackName"));
  const ephemeral = booleanContext("ephemeral", context("ephemeral"));
  const localstack = booleanContext("localstack", context("localstack"));
  const fargate = fargateContext(scope, context("fargateSubnets"), context("fargateSecurityGroups"));
  return {
    stackName,
    cairn: {
      ...(ephemeral ? { deletionProtection: false, removalPolicy: RemovalPolicy.DESTROY } : {}),
      ...(localstack
        ? { eventSchemas: false, dashboard: false, lambdaArchitecture: lambda.Architecture.X86_64 }
        : {}),
      ...(fargate ? { fargate } : {}),
    },
  };
}

function stackNameContext(value: unknown): string {
  if (value === undefined) return DEFAULT_STACK_NAME;
  if (typeof value !== "string" || !/^[A-Za-z][A-Za-z0-9-]{0,127}$/.test(value)) {
    throw new AppContextError(
      "stackName",
      `must be a CloudFormation stack name (a letter, then up to 127 letters, digits, hyphens), got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

function booleanContext(key: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (value === true || value === "true") return true;
  if (value === false || value === "false") return false;
  throw new AppContextError(key, `must be "true" or "false", got ${JSON.stringify(value)}`);
}

/** `-c fargateSubnets=… -c fargateSecurityGroups=…` as the `fargate` prop; neither: no Fargate. */
function fargateContext(
  scope: Construct,
  subnetsValue: unknown,
  groupsValue: unknown,
): CairnProps["fargate"] | undefined {
  if (subnetsValue === undefined && groupsValue === undefined) return undefined;
  if (subnetsValue === undefined) {
    throw new AppContextError(
      "fargateSubnets",
      "is required with fargateSecurityGroups: the subnets Fargate kernels run in (subnet-…,subnet-…)",
    );
  }
  if (groupsValue === undefined) {
    throw new AppContextError(
      "fargateSecurityGroups",
      "is required with fargateSubnets: the security groups of Fargate kernels (sg-…[,sg-…])",
    );
  }
  const subnetIds = idList("fargateSubnets", subnetsValue, SUBNET_ID, "subnet-", 16);
  const groupIds = idList("fargateSecurityGroups", groupsValue, SECURITY_GROUP_ID, "sg-", 5);
  return {
    subnets: subnetIds.map((id) => ec2.Subnet.fromSubnetId(scope, `FargateSubnet-${id}`, id)),
    securityGroups: groupIds.map((id) =>
      // Imported as it is: the stack adds no rule to a group it does not own.
      ec2.SecurityGroup.fromSecurityGroupId(scope, `FargateSecurityGroup-${id}`, id, { mutable: false }),
    ),
  };
}

/** A comma-separated list of EC2 ids of one kind, 1 to `max` of them (RunTask's limit), each once. */
function idList(key: string, value: unknown, pattern: RegExp, prefix: string, max: number): string[] {
  if (typeof value !== "string") {
    throw new AppContextError(
      key,
      `must be a comma-separated list of ${prefix}… ids, got ${JSON.stringify(value)}`,
    );
  }
  const ids = value.split(",").map((id) => id.trim());
  const malformed = ids.filter((id) => !pattern.test(id));
  if (malformed.length > 0) {
    throw new AppContextError(
      key,
      `${malformed.map((id) => JSON.stringify(id)).join(", ")} ${malformed.length === 1 ? "is not an id" : "are not ids"} of the form ${prefix} and up to 17 hexadecimal digits (${prefix}0123456789abcdef0)`,
    );
  }
  if (ids.length > max) {
    throw new AppContextError(key, `names ${ids.length} ids; RunTask takes at most ${max}`);
  }
  const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
  if (twice.length > 0) throw new AppContextError(key, `names ${twice[0]} twice`);
  return ids;
}
