/**
 * What `bench:local` counts for the AWS price besides what it always counted: the bytes the
 * functions log (their JSON lines and metrics documents, as CloudWatch Logs would ingest them),
 * the custom metrics those documents name, and the Step Functions calls the functions make.
 */
import type { LocalStepFunctions } from "../local/stepfunctions/index.ts";
import { LOG_EVENT_OVERHEAD_BYTES } from "./aws-prices.ts";

/**
 * Takes the functions' log lines (one JSON object each) off stdout and stderr and counts them;
 * everything else passes. `echo` prints them as well (the bench's --verbose).
 */
export class FunctionLogCapture {
  /** Bytes CloudWatch Logs would bill: each line's message and its per-event overhead. */
  bytes = 0;
  lines = 0;
  /** Custom metrics the metrics documents name: namespace, metric and dimension values. */
  readonly metrics = new Set<string>();
  readonly #restore: (() => void)[] = [];

  constructor(echo: boolean) {
    for (const stream of [process.stdout, process.stderr]) {
      const previous = stream.write.bind(stream);
      const pass = (...args: unknown[]): boolean => Reflect.apply(previous, stream, args) as boolean;
      const write = (chunk: unknown, ...rest: unknown[]): boolean => {
        const text = typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString("utf8") : "";
        if (!text.startsWith("{")) return pass(chunk, ...rest);
        for (const line of text.split("\n")) {
          if (line === "") continue;
          this.lines++;
          this.bytes += Buffer.byteLength(line) + LOG_EVENT_OVERHEAD_BYTES;
          this.#noteMetrics(line);
        }
        if (echo) return pass(chunk, ...rest);
        const callback = rest.find((r) => typeof r === "function") as (() => void) | undefined;
        callback?.();
        return true;
      };
      stream.write = write;
      this.#restore.push(() => {
        stream.write = previous;
      });
    }
  }

  reset(): void {
    this.bytes = 0;
    this.lines = 0;
  }

  stop(): void {
    for (const restore of this.#restore) restore();
  }

  /** An embedded-metric-format document: every metric under every dimension set it declares. */
  #noteMetrics(line: string): void {
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const aws = doc["_aws"] as
      | {
          CloudWatchMetrics?: {
            Namespace: string;
            Dimensions: string[][];
            Metrics: { Name: string }[];
          }[];
        }
      | undefined;
    for (const directive of aws?.CloudWatchMetrics ?? []) {
      for (const dimensions of directive.Dimensions) {
        const values = dimensions.map((d) => `${d}=${String(doc[d])}`).join(",");
        for (const metric of directive.Metrics)
          this.metrics.add(`${directive.Namespace}|${metric.Name}|${values}`);
      }
    }
  }
}

/** Counts the Step Functions calls that a price and a quota apply to, as the functions make them. */
export class StepFunctionsCalls {
  executionsStarted = 0;
  taskCallbacks = 0;

  constructor(sfn: LocalStepFunctions) {
    const startExecution = sfn.startExecution.bind(sfn);
    const sendTaskSuccess = sfn.sendTaskSuccess.bind(sfn);
    const sendTaskFailure = sfn.sendTaskFailure.bind(sfn);
    sfn.startExecution = (input) => {
      this.executionsStarted++;
      return startExecution(input);
    };
    sfn.sendTaskSuccess = (input) => {
      this.taskCallbacks++;
      return sendTaskSuccess(input);
    };
    sfn.sendTaskFailure = (input) => {
      this.taskCallbacks++;
      return sendTaskFailure(input);
    };
  }

  reset(): void {
    this.executionsStarted = 0;
    this.taskCallbacks = 0;
  }
}
