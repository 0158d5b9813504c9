/**
 * How events reach the functions, from the topology: the rules on Cairn's bus deliver to the
 * coordinator queue, an SQS event source feeds the queue to its consumer in batches with partial
 * batch failures, and each sweep's schedule puts a scheduled event on its queue. Every rule target has a
 * retry policy and a dead-letter queue for events it could not deliver; every work queue has its
 * own redrive dead-letter queue. Heartbeats are disposable: they are dropped, not dead-lettered,
 * once they are older than the agent timeout. All queues are encrypted and refuse requests
 * without TLS.
 */
import { Duration } from "aws-cdk-lib";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import type { QueueName } from "../functions/topology/index.ts";
import {
  bindClusterArn,
  disposableLifetimeSeconds,
  FARGATE,
  maxReceiveCountOf,
  QUEUES,
  RULES,
  RuleBus,
  SWEEP,
  SWEEPS,
  type SweepDecl,
  visibilityTimeoutSeconds,
  WORK_RETENTION_SECONDS,
} from "../functions/topology/index.ts";
import { TopologyError } from "./errors.ts";
import { acknowledge, NAG_ACKNOWLEDGEMENTS } from "./nag-acknowledgements.ts";
import type { CairnFunctions } from "./functions.ts";
import type { ResolvedCairnProps } from "./props.ts";

/** Dead letters wait this long for an operator (the SQS maximum). */
const DEAD_LETTER_RETENTION = Duration.days(14);
/**
 * Work kept by a queue whose consumer is down (the topology's WORK_RETENTION_SECONDS, a week):
 * shorter than the dead-letter retention, because a standard queue's message keeps its first
 * enqueue time in its DLQ: a message that waited the whole week still has a week there.
 */
const WORK_RETENTION = Duration.seconds(WORK_RETENTION_SECONDS);
/**
 * Queues whose messages are disposable (QueueDecl.disposable): agents' heartbeats and
 * registration requests. A newer heartbeat supersedes an old one, and an agent asks again until
 * its registration is answered, so such a message is dropped when its consumer keeps failing on
 * it or when it is older than the agent timeout (past which it says nothing), instead of being
 * dead-lettered and alarming.
 */
const DISPOSABLE_QUEUES: ReadonlySet<QueueName> = new Set(
  QUEUES.filter((q) => q.disposable === true).map((q) => q.name),
);

export interface CairnRoutingProps {
  readonly settings: ResolvedCairnProps;
  readonly bus: events.IEventBus;
  readonly functions: CairnFunctions;
  /**
   * The Fargate cluster's ARN, when there is a Fargate executor: its task state changes are
   * routed in (FARGATE.rules).
   */
  readonly fargateClusterArn?: string;
}

export class CairnRouting extends Construct {
  readonly queues: ReadonlyMap<QueueName, sqs.Queue>;
  /**
   * Per queue: where messages go after `maxReceiveCount` failed receives. Disposable queues
   * (heartbeats) have none.
   */
  readonly queueDeadLetterQueues: ReadonlyMap<QueueName, sqs.Queue>;
  /** Events a rule target (or the sweep) could not deliver within its retry policy. */
  readonly deliveryDeadLetterQueue: sqs.Queue;
  readonly rules: ReadonlyMap<string, events.Rule>;
  /** The safety sweep (SWEEP). */
  readonly sweep: events.Rule;
  /** Every scheduled sweep (SWEEPS), by name. */
  readonly sweeps: ReadonlyMap<string, events.Rule>;

  constructor(scope: Construct, id: string, props: CairnRoutingProps) {
    super(scope, id);
    const { settings, bus, functions } = props;

    this.deliveryDeadLetterQueue = secureQueue(this, "DeliveryDeadLetterQueue", {
      retentionPeriod: DEAD_LETTER_RETENTION,
    });
    acknowledge(this.deliveryDeadLetterQueue, NAG_ACKNOWLEDGEMENTS.deliveryDeadLetterQueue);

    const queues = new Map<QueueName, sqs.Queue>();
    const queueDeadLetterQueues = new Map<QueueName, sqs.Queue>();
    for (const decl of QUEUES) {
      if (queues.has(decl.name)) throw new TopologyError(`QUEUES ${decl.name}`, "declared twice");
      const consumer = functions.get(decl.consumer);
      // Close to the consumer's timeout, so a failed message is back soon (the topology says why).
      const visibilityTimeout = Duration.seconds(visibilityTimeoutSeconds(decl));
      let queue: sqs.Queue;
      if (DISPOSABLE_QUEUES.has(decl.name)) {
        queue = secureQueue(this, decl.name, {
          visibilityTimeout,
          retentionPeriod: disposableLifetime(settings),
        });
        acknowledge(queue, NAG_ACKNOWLEDGEMENTS.disposableQueue);
      } else {
        // A FIFO queue's dead-letter queue must be FIFO too.
        const fifo = decl.fifoGroup !== undefined ? { fifo: true } : {};
        const deadLetterQueue = secureQueue(this, `${decl.name}DeadLetterQueue`, {
          retentionPeriod: DEAD_LETTER_RETENTION,
          ...fifo,
        });
        queue = secureQueue(this, decl.name, {
          visibilityTimeout,
          retentionPeriod: WORK_RETENTION,
          deadLetterQueue: {
            queue: deadLetterQueue,
            maxReceiveCount: maxReceiveCountOf(decl, settings.maxReceiveCount),
          },
          ...(decl.fifoGroup !== undefined ? { fifo: true, contentBasedDeduplication: true } : {}),
        });
        queueDeadLetterQueues.set(decl.name, deadLetterQueue);
      }
      consumer.addEventSource(
        new SqsEventSource(queue, {
          batchSize: decl.batchSize,
          ...(decl.maxBatchingWindowSeconds > 0
            ? { maxBatchingWindow: Duration.seconds(decl.maxBatchingWindowSeconds) }
            : {}),
          maxConcurrency: settings.queueConcurrency[decl.name],
          reportBatchItemFailures: true,
        }),
      );
      queues.set(decl.name, queue);
    }
    this.queues = queues;
    this.queueDeadLetterQueues = queueDeadLetterQueues;

    const retry = {
      deadLetterQueue: this.deliveryDeadLetterQueue,
      retryAttempts: settings.eventRetryAttempts,
      maxEventAge: settings.maxEventAge,
    };
    const rules = new Map<string, events.Rule>();
    const fargateRules =
      props.fargateClusterArn === undefined
        ? []
        : FARGATE.rules.map((r) => bindClusterArn(r, props.fargateClusterArn!));
    for (const decl of [...RULES, ...fargateRules]) {
      if (rules.has(decl.name)) throw new TopologyError(`RULES ${decl.name}`, "declared twice");
      const queue = queues.get(decl.target.queue);
      if (!queue)
        throw new TopologyError(`RULES ${decl.name}.target`, `queue ${decl.target.queue} is not declared`);
      // A disposable event EventBridge cannot deliver while it still means something is dropped.
      const delivery = DISPOSABLE_QUEUES.has(decl.target.queue)
        ? { retryAttempts: settings.eventRetryAttempts, maxEventAge: disposableLifetime(settings) }
        : retry;
      rules.set(
        decl.name,
        new events.Rule(this, decl.name, {
          // AWS services' events (ECS task state changes) are on the account's default bus,
          // which is where a rule without a bus is.
          ...((decl.bus ?? RuleBus.Cairn) === RuleBus.Cairn ? { eventBus: bus } : {}),
          description: decl.description,
          eventPattern: toEventPattern(decl.name, decl.eventPattern),
          targets: [
            new targets.SqsQueue(queue, {
              ...delivery,
              ...messageGroupOf(decl.target.queue),
            }),
          ],
        }),
      );
    }
    this.rules = rules;

    // Schedules live on the default bus. Each sweep goes onto its queue (the safety sweep onto
    // the placement queue; a FIFO queue's in its message group); a sweep is stale once the next
    // one is due, so EventBridge gives up delivering it after one period.
    const sweeps = new Map<string, events.Rule>();
    for (const decl of SWEEPS) {
      if (sweeps.has(decl.name) || rules.has(decl.name)) {
        throw new TopologyError(`SWEEPS ${decl.name}`, "declared twice");
      }
      const sweepQueue = queues.get(decl.target.queue);
      if (!sweepQueue) {
        throw new TopologyError(`SWEEPS ${decl.name}.target`, `queue ${decl.target.queue} is not declared`);
      }
      const period = Duration.seconds(sweepRateSeconds(decl));
      sweeps.set(
        decl.name,
        new events.Rule(this, decl.name, {
          description: `${decl.name}: every ${period.toMinutes()} min, runs ${consumerOf(decl.target.queue)}'s passes on ${decl.target.queue} for anything an event missed`,
          schedule: events.Schedule.rate(period),
          targets: [
            new targets.SqsQueue(sweepQueue, {
              deadLetterQueue: this.deliveryDeadLetterQueue,
              retryAttempts: 2,
              maxEventAge: period,
              ...messageGroupOf(decl.target.queue),
            }),
          ],
        }),
      );
    }
    this.sweeps = sweeps;
    const sweep = sweeps.get(SWEEP.name);
    if (!sweep) throw new TopologyError("SWEEPS", `must include the safety sweep ${SWEEP.name}`);
    this.sweep = sweep;
  }
}

/** How long a heartbeat means something: the agent timeout, within what the services accept. */
export function disposableLifetime(settings: Pick<ResolvedCairnProps, "agentTimeoutMs">): Duration {
  return Duration.seconds(disposableLifetimeSeconds(settings.agentTimeoutMs));
}

/** A FIFO queue's target names its message group (EventBridge requires one); others none. */
function messageGroupOf(name: QueueName): { messageGroupId?: string } {
  const group = QUEUES.find((q) => q.name === name)?.fifoGroup;
  return group !== undefined ? { messageGroupId: group } : {};
}

function secureQueue(scope: Construct, id: string, props: sqs.QueueProps): sqs.Queue {
  return new sqs.Queue(scope, id, {
    ...props,
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
  });
}

/** EventBridge schedules count whole minutes; the topology states seconds. */
export function sweepRateSeconds(decl: SweepDecl): number {
  if (!Number.isInteger(decl.rateSeconds) || decl.rateSeconds < 60 || decl.rateSeconds % 60 !== 0) {
    throw new TopologyError(
      `SWEEPS ${decl.name}.rateSeconds`,
      `must be a whole number of minutes, got ${decl.rateSeconds}`,
    );
  }
  return decl.rateSeconds;
}

/** The function a queue feeds. */
function consumerOf(name: QueueName): string {
  return QUEUES.find((q) => q.name === name)?.consumer ?? name;
}

/** Event pattern fields as EventBridge writes them → the CDK's EventPattern keys. */
const PATTERN_KEYS: Readonly<Record<string, keyof events.EventPattern>> = {
  version: "version",
  id: "id",
  "detail-type": "detailType",
  source: "source",
  account: "account",
  time: "time",
  region: "region",
  resources: "resources",
  detail: "detail",
};

export function toEventPattern(
  rule: string,
  pattern: Readonly<Record<string, unknown>>,
): events.EventPattern {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(pattern)) {
    const cdkKey = PATTERN_KEYS[key];
    if (!cdkKey) {
      throw new TopologyError(`RULES ${rule}.eventPattern.${key}`, "is not an EventBridge event field");
    }
    out[cdkKey] = value;
  }
  return out;
}
