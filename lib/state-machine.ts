/**
 * The lifecycle state machines, one per STATE_MACHINES entry (sessions; deployments and routes,
 * Backend.AI's BEP-1030), each loaded from the ASL file the topology names (the same file the embedded runtime
 * runs) with its `${…}` placeholders bound to function ARNs as definition substitutions. Standard
 * workflow, logging to CloudWatch Logs (errors only by default), X-Ray tracing on, and a role that may invoke exactly
 * the substituted functions and, where the definition renews its execution (a family's `Renew`),
 * start executions of this state machine and no other.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ArnFormat, Fn, Names, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as logs from "aws-cdk-lib/aws-logs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { STATE_MACHINES, StateMachineName, type StateMachineDecl } from "../functions/topology/index.ts";
import { TopologyError } from "./errors.ts";
import { acknowledge, NAG_ACKNOWLEDGEMENTS } from "./nag-acknowledgements.ts";
import { PROJECT_ROOT, type CairnFunctions } from "./functions.ts";
import type { ResolvedCairnProps } from "./props.ts";

/** `${Name}` placeholders, as Step Functions definition substitutions write them. */
const PLACEHOLDER = /\$\{([A-Za-z0-9_]+)\}/g;

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

/**
 * The declared state machines, checked: each name and each ARN variable once (a function is told
 * each ARN by its variable).
 */
export function stateMachineDecls(): readonly StateMachineDecl[] {
  const names = new Set<string>();
  const variables = new Set<string>();
  for (const decl of STATE_MACHINES) {
    if (names.has(decl.name)) throw new TopologyError(`STATE_MACHINES ${decl.name}`, "declared twice");
    if (variables.has(decl.arnVariable)) {
      throw new TopologyError(
        `STATE_MACHINES ${decl.name}.arnVariable`,
        `${decl.arnVariable} is another state machine's too`,
      );
    }
    names.add(decl.name);
    variables.add(decl.arnVariable);
  }
  return STATE_MACHINES;
}

/** Step Functions' longest state machine name. */
const MAX_STATE_MACHINE_NAME = 80;
/** A stack's id ends in a UUID (`arn:…:stack/<name>/<uuid>`), a new one each time the stack is created. */
const STACK_UUID_LENGTH = 36;

/** The UUID in the stack's id: a new one each time the stack is created. */
export function stackUuid(scope: Construct): string {
  return Fn.select(2, Fn.split("/", Stack.of(scope).stackId));
}

/**
 * The physical name of a declared state machine: `<prefix>-<declared name>-<stack UUID>`, 80
 * characters at most. The prefix is unique to the construct and the same for every declared
 * machine (its room is what the longest declared name leaves), so one machine's ARN tells its
 * siblings' (dashboard/deployments-page.ts). The UUID makes the name new each time the stack is
 * created: a deleted state machine stays DELETING until each of its executions makes its next
 * transition, and a stack deployed again after `cdk destroy` must not need its name meanwhile.
 * Known at synth otherwise, so that functions and roles are told its ARN without referencing the
 * resource.
 */
export function stateMachineNameFor(scope: Construct, decl: StateMachineDecl): string {
  const longest = Math.max(...stateMachineDecls().map((d) => d.name.length));
  const prefix = Names.uniqueResourceName(scope, {
    maxLength: MAX_STATE_MACHINE_NAME - longest - STACK_UUID_LENGTH - 2,
    separator: "-",
  });
  return `${prefix}-${decl.name}-${stackUuid(scope)}`;
}

/**
 * The construct id of a declared state machine. The session lifecycle's stays `Lifecycle`, the id
 * it had when it was the only one: its physical name is fixed, so a new logical id would make
 * CloudFormation create the replacement before deleting the old one, and fail on the name.
 */
export function stateMachineConstructId(decl: StateMachineDecl): string {
  return decl.name === StateMachineName.SessionLifecycle ? "Lifecycle" : decl.name;
}

const START_EXECUTION = "arn:aws:states:::states:startExecution";

/**
 * Whether the definition starts executions of its own state machine (a family's `Renew`: the next
 * generation of a long-lived execution, request-response, linked to its parent by
 * AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID in its input). Any other use of
 * states:startExecution (another state machine, `.sync`, a callback) would need grants this stack
 * does not make, so it fails at synth.
 */
export function startsItself(decl: StateMachineDecl, definition: string): boolean {
  let found = false;
  const visit = (states: Readonly<Record<string, Record<string, unknown>>>): void => {
    for (const [name, state] of Object.entries(states)) {
      const resource = state["Resource"];
      if (state["Type"] === "Task" && typeof resource === "string" && resource.startsWith(START_EXECUTION)) {
        const where = `STATE_MACHINES ${decl.name}`;
        if (resource !== START_EXECUTION) {
          throw new TopologyError(
            where,
            `${decl.file} state ${name}: only request-response ${START_EXECUTION} is granted, not ${resource}`,
          );
        }
        const parameters = (state["Parameters"] ?? {}) as Record<string, unknown>;
        if (parameters["StateMachineArn.$"] !== "$$.StateMachine.Id") {
          throw new TopologyError(
            where,
            `${decl.file} state ${name}: states:startExecution may start only its own state machine ("StateMachineArn.$": "$$.StateMachine.Id")`,
          );
        }
        found = true;
      }
      for (const branch of (state["Branches"] ?? []) as { States: Record<string, Record<string, unknown>> }[])
        visit(branch.States);
      for (const key of ["Iterator", "ItemProcessor"]) {
        const inner = state[key] as { States?: Record<string, Record<string, unknown>> } | undefined;
        if (inner?.States) visit(inner.States);
      }
    }
  };
  visit((JSON.parse(definition) as { States: Record<string, Record<string, unknown>> }).States);
  return found;
}

export interface LifecycleStateMachineProps {
  readonly settings: ResolvedCairnProps;
  readonly functions: CairnFunctions;
  /** The topology's declaration of this state machine. */
  readonly decl: StateMachineDecl;
  /** Physical name (stateMachineNameFor): the functions are told the ARN without depending on the resource. */
  readonly stateMachineName: string;
}

export class LifecycleStateMachine extends Construct {
  readonly stateMachine: sfn.StateMachine;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: LifecycleStateMachineProps) {
    super(scope, id);
    const { decl } = props;
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
        resources: [...new Set(substituted.map((s) => s.fn.functionArn))],
      }),
    );
    if (startsItself(decl, definition)) {
      // Its own ARN from its fixed name: a reference would make the state machine depend on its
      // role's policy and the policy on the state machine.
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ["states:StartExecution"],
          resources: [stateMachineArnFor(this, props.stateMachineName)],
        }),
      );
    }
    acknowledge(role, NAG_ACKNOWLEDGEMENTS.stateMachineRoleLogsAndXRay);
    // Vended-log groups under this prefix keep the account's log resource policy small. The
    // group is retained by default; it is named after the state machine, whose name ends with the
    // stack's UUID, so a stack deployed again after a destroy gets a new group instead of failing
    // on the one the old stack left.
    this.logGroup = new logs.LogGroup(this, "Logs", {
      logGroupName: `/aws/vendedlogs/states/${props.stateMachineName}`,
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
        level: props.settings.stateMachineLogLevel,
        includeExecutionData: props.settings.logExecutionData,
      },
      tracingEnabled: true,
    });
    if (props.settings.stateMachineLogLevel !== sfn.LogLevel.ALL) {
      acknowledge(this.stateMachine, NAG_ACKNOWLEDGEMENTS.stateMachineLogsErrorsOnly);
    }
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
