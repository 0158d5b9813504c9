/**
 * One attempt of a Task state (a retry is a new attempt, with a new task token): its history
 * events, its task token, and its timers. Whatever ends it first wins (result, SendTask*,
 * timeout, heartbeat timeout, execution stop); everything after finds it closed, which is what
 * makes a late or duplicate callback get TaskTimedOut, as on AWS.
 */
import type { HistoryEventType } from "@aws-sdk/client-sfn";
import { LOCAL_REGION } from "./arns.ts";
import { AslError, EXECUTION_CLOSED_ERROR, StatesErrorName } from "./errors.ts";
import { EMPTY_DATA_DETAILS, type HistoryDetails } from "./history.ts";
import { toJsonText, type JsonValue } from "./json.ts";
import { MAX_TIMER_SECONDS } from "./limits.ts";
import type { TaskResource } from "./resources.ts";

export interface AttemptHost {
  record(type: HistoryEventType, details: HistoryDetails): void;
  /** The attempt is over: its token, if any, is no longer accepted. */
  closed(attempt: TaskAttempt): void;
}

export interface AttemptSettings {
  readonly stateName: string;
  readonly resource: TaskResource;
  /** Effective input (after InputPath and Parameters): the task's parameters. */
  readonly parameters: JsonValue;
  readonly token: string | undefined;
  readonly timeoutSeconds: number | undefined;
  /** Only for callback tasks: nothing else can send heartbeats. */
  readonly heartbeatSeconds: number | undefined;
}

export class TaskAttempt {
  readonly settings: AttemptSettings;
  readonly promise: Promise<JsonValue>;
  readonly #host: AttemptHost;
  #open = true;
  #resolve!: (value: JsonValue) => void;
  #reject!: (error: Error) => void;
  #timeoutTimer: NodeJS.Timeout | undefined;
  #heartbeatTimer: NodeJS.Timeout | undefined;

  constructor(host: AttemptHost, settings: AttemptSettings) {
    this.#host = host;
    this.settings = settings;
    this.promise = new Promise<JsonValue>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#recordScheduled();
    if (settings.timeoutSeconds !== undefined) {
      // Same delay as the interpreter's own timer for this attempt, created just before it, so
      // this fires first: it closes the token and writes TaskTimedOut; the interpreter's timer
      // then raises the real States.Timeout (the one `States.TaskFailed` does not match).
      const ms = Math.min(settings.timeoutSeconds, MAX_TIMER_SECONDS) * 1000;
      this.#timeoutTimer = setTimeout(() => this.#timedOut(StatesErrorName.Timeout, false), ms);
    }
    this.#armHeartbeat();
  }

  get isOpen(): boolean {
    return this.#open;
  }

  get token(): string | undefined {
    return this.settings.token;
  }

  /** A callback task's invocation went through (TaskSubmitted); the task now waits for its token. */
  submitted(response: JsonValue): void {
    if (!this.#open || this.settings.resource.kind !== "integration") return;
    const { resourceType, resource } = this.settings.resource;
    this.#host.record("TaskSubmitted", {
      taskSubmittedEventDetails: {
        resourceType,
        resource,
        output: toJsonText(response),
        outputDetails: EMPTY_DATA_DETAILS,
      },
    });
  }

  succeed(output: JsonValue): void {
    if (!this.#close()) return;
    const outputText = toJsonText(output);
    const resource = this.settings.resource;
    if (resource.kind === "lambda-function") {
      this.#host.record("LambdaFunctionSucceeded", {
        lambdaFunctionSucceededEventDetails: { output: outputText, outputDetails: EMPTY_DATA_DETAILS },
      });
    } else {
      this.#host.record("TaskSucceeded", {
        taskSucceededEventDetails: {
          resourceType: resource.resourceType,
          resource: resource.resource,
          output: outputText,
          outputDetails: EMPTY_DATA_DETAILS,
        },
      });
    }
    this.#resolve(output);
  }

  fail(error: AslError): void {
    if (!this.#close()) return;
    const details = { error: error.name || undefined, cause: error.message || undefined };
    const resource = this.settings.resource;
    if (resource.kind === "lambda-function") {
      this.#host.record("LambdaFunctionFailed", { lambdaFunctionFailedEventDetails: details });
    } else {
      this.#host.record("TaskFailed", {
        taskFailedEventDetails: {
          resourceType: resource.resourceType,
          resource: resource.resource,
          ...details,
        },
      });
    }
    this.#reject(error);
  }

  /** SendTaskHeartbeat: restarts the heartbeat clock (the task timeout keeps running). */
  heartbeat(): void {
    if (this.#open) this.#armHeartbeat();
  }

  /**
   * The task's timeout fired now (an injected fault): the token closes and the attempt fails with
   * States.Timeout, as when TimeoutSeconds runs out.
   */
  timeOutNow(): void {
    this.#timedOut(StatesErrorName.Timeout, true);
  }

  /** The execution stopped or the service closed: end quietly, never caught or retried. */
  abandon(): void {
    if (!this.#close()) return;
    this.#reject(
      new AslError(EXECUTION_CLOSED_ERROR, "the execution is no longer running", { terminal: true }),
    );
  }

  #armHeartbeat(): void {
    const seconds = this.settings.heartbeatSeconds;
    if (seconds === undefined) return;
    clearTimeout(this.#heartbeatTimer);
    const ms = Math.min(seconds, MAX_TIMER_SECONDS) * 1000;
    this.#heartbeatTimer = setTimeout(() => this.#timedOut(StatesErrorName.HeartbeatTimeout, true), ms);
  }

  #timedOut(errorName: string, raise: boolean): void {
    if (!this.#close()) return;
    const resource = this.settings.resource;
    if (resource.kind === "lambda-function") {
      this.#host.record("LambdaFunctionTimedOut", {
        lambdaFunctionTimedOutEventDetails: { error: errorName },
      });
    } else {
      this.#host.record("TaskTimedOut", {
        taskTimedOutEventDetails: {
          resourceType: resource.resourceType,
          resource: resource.resource,
          error: errorName,
        },
      });
    }
    if (raise) this.#reject(new AslError(errorName, ""));
  }

  #close(): boolean {
    if (!this.#open) return false;
    this.#open = false;
    clearTimeout(this.#timeoutTimer);
    clearTimeout(this.#heartbeatTimer);
    this.#host.closed(this);
    return true;
  }

  #recordScheduled(): void {
    const { resource, parameters, timeoutSeconds, heartbeatSeconds } = this.settings;
    if (resource.kind === "lambda-function") {
      this.#host.record("LambdaFunctionScheduled", {
        lambdaFunctionScheduledEventDetails: {
          resource: resource.arn,
          input: toJsonText(parameters),
          inputDetails: EMPTY_DATA_DETAILS,
          timeoutInSeconds: timeoutSeconds,
        },
      });
      this.#host.record("LambdaFunctionStarted", {});
      return;
    }
    this.#host.record("TaskScheduled", {
      taskScheduledEventDetails: {
        resourceType: resource.resourceType,
        resource: resource.resource,
        region: LOCAL_REGION,
        parameters: toJsonText(parameters),
        timeoutInSeconds: timeoutSeconds,
        heartbeatInSeconds: heartbeatSeconds,
      },
    });
    this.#host.record("TaskStarted", {
      taskStartedEventDetails: { resourceType: resource.resourceType, resource: resource.resource },
    });
  }
}
