/**
 * What an operator watches: one dashboard (sessions per status, transitions, coordinator work,
 * handler errors, dead letters, executions) and the alarms that say "look now": failed or
 * timed-out executions of each lifecycle state machine, dead letters, handler errors, sessions
 * stuck beyond their stage timeout.
 * Cairn's own metrics come from the handlers through Powertools (functions/handlers/metrics.ts
 * names them; this file reads the same names).
 */
import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { METRICS_SERVICE, MetricDimension, MetricName } from "../functions/topology/metrics.ts";
import { SESSION_STATUSES, WAITING_SESSION_STATUSES } from "../functions/core/status.ts";
import type { ResolvedCairnProps } from "./props.ts";

const PERIOD = Duration.minutes(5);
const CENSUS_PERIOD = Duration.minutes(1);

export interface CairnMonitoringProps {
  readonly settings: ResolvedCairnProps;
  readonly functions: ReadonlyMap<string, lambda.IFunction>;
  /** The lifecycle state machines by declared name (SessionLifecycle, DeploymentLifecycle, …). */
  readonly stateMachines: ReadonlyMap<string, sfn.IStateMachine>;
  /** Dead-letter queues by a display name. */
  readonly deadLetterQueues: ReadonlyMap<string, sqs.IQueue>;
  /** Work queues by a display name (backlog and age on the dashboard). */
  readonly queues: ReadonlyMap<string, sqs.IQueue>;
}

export class CairnMonitoring extends Construct {
  /** Absent with the `dashboard` prop false. */
  readonly dashboard: cloudwatch.Dashboard | undefined;
  readonly alarms: readonly cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: CairnMonitoringProps) {
    super(scope, id);
    const { settings, stateMachines } = props;
    const cairn = (name: MetricName, statistic: string, period: Duration, extra?: Record<string, string>) =>
      new cloudwatch.Metric({
        namespace: settings.metricsNamespace,
        metricName: name,
        dimensionsMap: { service: METRICS_SERVICE, ...extra },
        statistic,
        period,
      });
    const alarms: cloudwatch.Alarm[] = [];
    const alarm = (alarmId: string, props: cloudwatch.AlarmProps) => {
      const a = new cloudwatch.Alarm(this, alarmId, props);
      for (const action of settings.alarmActions) {
        a.addAlarmAction(action);
        a.addOkAction(action);
      }
      alarms.push(a);
      return a;
    };

    // --- alarms ------------------------------------------------------------------------------
    for (const [name, stateMachine] of stateMachines) {
      // What a machine carries, from its declared name: SessionLifecycle → session.
      const what = name.replace(/Lifecycle$/, "").toLowerCase();
      const executionsFailed = new cloudwatch.MathExpression({
        expression: "FILL(failed, 0) + FILL(timedOut, 0)",
        usingMetrics: {
          failed: stateMachine.metricFailed({ period: PERIOD, statistic: "Sum" }),
          timedOut: stateMachine.metricTimedOut({ period: PERIOD, statistic: "Sum" }),
        },
        label: `${name} executions failed or timed out`,
        period: PERIOD,
      });
      // The session lifecycle's alarm keeps the id it had when it was the only one.
      alarm(name === "SessionLifecycle" ? "ExecutionsFailedAlarm" : `${name}ExecutionsFailedAlarm`, {
        alarmDescription: `A ${what}'s lifecycle execution (${name}) failed or timed out: its ${what} is no longer carried through its lifecycle. Find the execution by the ${what} id in the Step Functions console.`,
        metric: executionsFailed,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    for (const [name, queue] of props.deadLetterQueues) {
      alarm(`${name}MessagesAlarm`, {
        alarmDescription: `Messages in ${name}: events or batches that could not be delivered or processed. Inspect them, fix the cause, then redrive.`,
        metric: queue.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: "Maximum" }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    for (const [name, fn] of props.functions) {
      alarm(`${name}ErrorsAlarm`, {
        alarmDescription: `The ${name} function failed invocations (uncaught errors or timeouts). See its log group.`,
        metric: fn.metricErrors({ period: PERIOD, statistic: "Sum" }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    // The census runs with the sweep every minute; no data means the sweep itself stopped,
    // which leaves nothing watching for stuck sessions, so missing data counts as breaching.
    alarm("StuckSessionsAlarm", {
      alarmDescription:
        "Sessions are still in a stage more than 5 minutes past its expiry: their lifecycle execution did not move them on (or the sweep that counts them is not running). List them with `cairn list` and check their executions.",
      metric: cairn(MetricName.SessionsStuck, "Maximum", CENSUS_PERIOD),
      threshold: 1,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    this.alarms = alarms;

    // --- dashboard -----------------------------------------------------------------------------
    if (!settings.dashboard) {
      this.dashboard = undefined;
      return;
    }
    const graph = (title: string, left: cloudwatch.IMetric[], width = 12) =>
      new cloudwatch.GraphWidget({ title, left, width, height: 6 });
    const fnMetrics = [...props.functions];
    this.dashboard = new cloudwatch.Dashboard(this, "Dashboard", {
      ...(settings.dashboardName !== undefined ? { dashboardName: settings.dashboardName } : {}),
      defaultInterval: Duration.hours(3),
      widgets: [
        [new cloudwatch.AlarmStatusWidget({ title: "Alarms", alarms, width: 24, height: 3 })],
        [
          graph(
            "Sessions per status (waiting stages, counted each minute)",
            WAITING_SESSION_STATUSES.map((s) =>
              cairn(MetricName.SessionsInStatus, "Maximum", CENSUS_PERIOD, {
                [MetricDimension.Status]: s,
              }).with({
                label: s,
              }),
            ),
          ),
          graph(
            "Transitions by status entered",
            SESSION_STATUSES.map((s) =>
              cairn(MetricName.Transitions, "Sum", PERIOD, { [MetricDimension.Status]: s }).with({
                label: s,
              }),
            ),
          ),
        ],
        [
          graph("Coordinator", [
            ...["events", "sweep"].map((t) =>
              cairn(MetricName.CoordinatorRuns, "Sum", PERIOD, { [MetricDimension.Trigger]: t }).with({
                label: `runs (${t})`,
              }),
            ),
            cairn(MetricName.EventsApplied, "Sum", PERIOD).with({ label: "events applied" }),
            cairn(MetricName.EventsRejected, "Sum", PERIOD).with({ label: "events rejected" }),
            cairn(MetricName.EventsRetried, "Sum", PERIOD).with({ label: "events retried" }),
            cairn(MetricName.StageCompletions, "Sum", PERIOD).with({ label: "stage completions" }),
          ]),
          graph("Decisions per handler pass", [
            new cloudwatch.MathExpression({
              expression: `SEARCH('{"${settings.metricsNamespace}",${MetricDimension.Pass},service} MetricName="${MetricName.PassDecisions}"', 'Sum', ${PERIOD.toSeconds()})`,
              label: "",
              period: PERIOD,
            }),
          ]),
        ],
        [
          graph(
            "Handler errors",
            fnMetrics.map(([name, fn]) =>
              fn.metricErrors({ period: PERIOD, statistic: "Sum", label: `${name} errors` }),
            ),
            8,
          ),
          graph(
            "Handler invocations and throttles",
            fnMetrics.flatMap(([name, fn]) => [
              fn.metricInvocations({ period: PERIOD, statistic: "Sum", label: `${name} invocations` }),
              fn.metricThrottles({ period: PERIOD, statistic: "Sum", label: `${name} throttles` }),
            ]),
            8,
          ),
          graph(
            "Handler duration (p99)",
            fnMetrics.map(([name, fn]) =>
              fn.metricDuration({ period: PERIOD, statistic: "p99", label: name }),
            ),
            8,
          ),
        ],
        [
          graph(
            "Dead-letter queue depth",
            [...props.deadLetterQueues].map(([name, q]) =>
              q.metricApproximateNumberOfMessagesVisible({
                period: PERIOD,
                statistic: "Maximum",
                label: name,
              }),
            ),
            8,
          ),
          graph(
            "Work queues: oldest message age (s)",
            [...props.queues].map(([name, q]) =>
              q.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: "Maximum", label: name }),
            ),
            8,
          ),
          graph(
            "Stuck beyond stage timeout",
            [cairn(MetricName.SessionsStuck, "Maximum", CENSUS_PERIOD).with({ label: "sessions" })],
            8,
          ),
        ],
        [...stateMachines].map(([name, stateMachine]) =>
          graph(
            `${name} executions`,
            [
              stateMachine.metricStarted({ period: PERIOD, statistic: "Sum", label: "started" }),
              stateMachine.metricSucceeded({ period: PERIOD, statistic: "Sum", label: "succeeded" }),
              stateMachine.metricFailed({ period: PERIOD, statistic: "Sum", label: "failed" }),
              stateMachine.metricTimedOut({ period: PERIOD, statistic: "Sum", label: "timed out" }),
              stateMachine.metricAborted({ period: PERIOD, statistic: "Sum", label: "aborted" }),
            ],
            Math.max(6, Math.floor(24 / stateMachines.size)),
          ),
        ),
      ],
    });
  }
}
