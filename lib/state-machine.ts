/**
 * The session-lifecycle state machine, loaded from the ASL file the topology names (the same file
 * the embedded runtime runs) with its `${…}` placeholders bound to function ARNs as definition
 * substitutions. Standard workflow, logging ALL to CloudWatch Logs, X-Ray tracing on, and a role
 * that may invoke exactly the substituted functions.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ArnFormat, Fn, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as logs from "aws-cdk-lib/aws-logs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { STATE_MACHINES, type StateMachineDecl } from "../functions/topology/index.ts";
import { TopologyError } from "./errors.ts";
import { acknowledge, NAG_ACKNOWLEDGEMENTS } from "./nag-acknowledgements.ts";
import { PROJECT_ROOT, type CairnFunctions } from "./functions.ts";
import type { ResolvedCairnProps } from "./props.ts";

/** `${Name}` placeholders, as Step Functions definition substitutions write them. */
const PLACEHOLDER = /\$\{([A-Za-z0-9_]+)\}/g;

/** The one lifecycle state machine: the functions get a single CAIRN_STATE_MACHINE_ARN. */
export function lifecycleDecl(): StateMachineDecl {
  if (STATE_MACHINES.length !== 1) {
    throw new TopologyError(
      "STATE_MACHINES",
      `must declare exactly one state machine, found ${STATE_MACHINES.length}`,
    );
  }
  return STATE_MACHINES[0]!;
}

/** The ASL text and the placeholders it uses, checked against the declared substitutions. */
export function loadDefinition(decl: StateMachineDecl): string {
  const text = readFileSync(join(PROJECT_ROOT, decl.file), "utf8");
  JSON.parse(text); // a syntax error fails here with the parser's position
  const used = new Set([...text.matchAll(PLACEHOLDER)].map((m) => m[1]!));
  for (const key of used) {
    if (!(key in decl.substitutions)) {
      throw new TopologyError(
        `STATE_MACHINES ${decl.name}`,
        `${decl.file} uses \${${key}} but substitutions do not bind it`,
      );
    }
  }
  for (const key of Object.keys(decl.substitutions)) {
    if (!used.has(key)) {
      throw new TopologyError(
        `STATE_MACHINES ${decl.name}.substitutions.${key}`,
        `${decl.file} never uses \${${key}}`,
      );
    }
  }
  return text;
}

export interface LifecycleStateMachineProps {
  readonly settings: ResolvedCairnProps;
  readonly functions: CairnFunctions;
  /** Physical name: fixed so the functions can be told the ARN without depending on the resource. */
  readonly stateMachineName: string;
}

export class LifecycleStateMachine extends Construct {
  readonly stateMachine: sfn.StateMachine;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: LifecycleStateMachineProps) {
    super(scope, id);
    const decl = lifecycleDecl();
    const definition = loadDefinition(decl);
    const substituted = Object.entries(decl.substitutions).map(([key, fnName]) => ({
      key,
      fn: props.functions.get(fnName),
    }));

    const role = new iam.Role(this, "Role", {
      assumedBy: new iam.ServicePrincipal("states.amazonaws.com"),
      description: `Cairn ${decl.name} state machine`,
    });
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["lambda:InvokeFunction"],
        resources: substituted.map((s) => s.fn.functionArn),
      }),
    );
    acknowledge(role, NAG_ACKNOWLEDGEMENTS.stateMachineRoleLogsAndXRay);
    // Vended-log groups under this prefix keep the account's log resource policy small. The
    // group is retained by default, so its name ends with the stack's unique id: a stack deployed
    // again after a destroy gets a new group instead of failing on the one the old stack left
    // (the stack id is `arn:…:stack/<name>/<uuid>`, with a new uuid on every creation).
    const stackUuid = Fn.select(2, Fn.split("/", Stack.of(this).stackId));
    this.logGroup = new logs.LogGroup(this, "Logs", {
      logGroupName: `/aws/vendedlogs/states/${props.stateMachineName}-${stackUuid}`,
      retention: props.settings.logRetention,
      removalPolicy: props.settings.removalPolicy,
    });
    this.stateMachine = new sfn.StateMachine(this, decl.name, {
      stateMachineName: props.stateMachineName,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromString(definition),
      definitionSubstitutions: Object.fromEntries(substituted.map((s) => [s.key, s.fn.functionArn])),
      role,
      logs: {
        destination: this.logGroup,
        level: sfn.LogLevel.ALL,
        includeExecutionData: props.settings.logExecutionData,
      },
      tracingEnabled: true,
    });
  }
}

/** The ARN a named state machine will have, as a string that references no resource. */
export function stateMachineArnFor(scope: Construct, name: string): string {
  return Stack.of(scope).formatArn({
    service: "states",
    resource: "stateMachine",
    resourceName: name,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}
