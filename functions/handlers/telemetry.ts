/**
 * Powertools for the Lambda entry points: a Powertools Logger behind the application's `Logger`
 * interface, a Tracer that captures the SDK clients, and Metrics flushed once per invocation.
 * The application never imports Powertools; only the handlers and the client wiring see it.
 *
 * Outside Lambda (the embedded runtime imports these same handlers in-process) there is no
 * Tracer: its module is not even loaded, because loading the X-Ray SDK installs async hooks that
 * make every promise in the process about 13 times slower (measured: 300,000 awaited promises,
 * 20 ms before the import, 270 ms after). Metrics go nowhere either: EMF lines are read by
 * Lambda's log pipeline only, so printing them elsewhere would be noise. Set
 * POWERTOOLS_METRICS_DISABLED=false to see them locally anyway.
 */
import { Logger as PowertoolsLogger } from "@aws-lambda-powertools/logger";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import type { Tracer } from "@aws-lambda-powertools/tracer";
import type { Instrumentation } from "./wiring.ts";
import type { Logger } from "../app/logger.ts";
import type { CairnConfig } from "../config.ts";
import { DEFAULT_METRICS_NAMESPACE, METRICS_SERVICE } from "../topology/metrics.ts";
import { NO_METRICS, type MetricSink } from "./metrics.ts";

export interface Telemetry extends Instrumentation {
  /** Absent outside Lambda, or where POWERTOOLS_TRACE_ENABLED=false (tracingEnabled). */
  readonly tracer?: Tracer;
  readonly metrics: MetricSink;
  /** Writes the invocation's stored metrics (one EMF document) and clears them. */
  flushMetrics(): void;
}

type Env = Readonly<Record<string, string | undefined>>;

export async function createTelemetry(config: CairnConfig, env: Env = process.env): Promise<Telemetry> {
  const logLevel = ({ info: "INFO", warn: "WARN", error: "ERROR" } as const)[config.logLevel];
  const root = new PowertoolsLogger({ serviceName: METRICS_SERVICE, logLevel });
  const tracer = tracingEnabled(env)
    ? new (await import("@aws-lambda-powertools/tracer")).Tracer({ serviceName: METRICS_SERVICE })
    : undefined;
  const metrics = metricsEnabled(env)
    ? new Metrics({
        namespace: env["POWERTOOLS_METRICS_NAMESPACE"] || DEFAULT_METRICS_NAMESPACE,
        serviceName: METRICS_SERVICE,
      })
    : undefined;
  return {
    ...(tracer ? { tracer } : {}),
    logger: (component) => asLogger(root.createChild({ persistentKeys: { component } })),
    captureClient: (client) => (tracer ? tracer.captureAWSv3Client(client) : client),
    metrics: metrics ? powertoolsSink(metrics) : NO_METRICS,
    flushMetrics: () => {
      if (metrics?.hasStoredMetrics()) metrics.publishStoredMetrics();
    },
  };
}

/**
 * Tracing runs in Lambda (AWS_EXECUTION_ENV, as Powertools checks) unless
 * POWERTOOLS_TRACE_ENABLED says otherwise.
 */
export function tracingEnabled(env: Env): boolean {
  const enabled = env["POWERTOOLS_TRACE_ENABLED"];
  if (enabled !== undefined && ["false", "0", "no", "off"].includes(enabled.toLowerCase())) return false;
  return env["AWS_EXECUTION_ENV"] !== undefined;
}

/** Lambda always sets AWS_LAMBDA_FUNCTION_NAME; POWERTOOLS_METRICS_DISABLED decides where it is set. */
export function metricsEnabled(env: Env): boolean {
  const disabled = env["POWERTOOLS_METRICS_DISABLED"];
  if (disabled !== undefined && disabled !== "")
    return !["true", "1", "yes", "on"].includes(disabled.toLowerCase());
  return env["AWS_LAMBDA_FUNCTION_NAME"] !== undefined;
}

/**
 * Runs one invocation: a `## name` subsegment annotated with cold start and service when tracing
 * is on, and the metrics flushed whatever the outcome.
 */
export async function instrumented<T>(telemetry: Telemetry, name: string, fn: () => Promise<T>): Promise<T> {
  const { tracer } = telemetry;
  const parent = tracer?.isTracingEnabled() ? tracer.getSegment() : undefined;
  const segment = parent?.addNewSubsegment(`## ${name}`);
  if (tracer && segment) {
    tracer.setSegment(segment);
    tracer.annotateColdStart();
    tracer.addServiceNameAnnotation();
  }
  try {
    return await fn();
  } catch (error) {
    if (segment && error instanceof Error) tracer?.addErrorAsMetadata(error);
    throw error;
  } finally {
    segment?.close();
    if (parent) tracer?.setSegment(parent);
    telemetry.flushMetrics();
  }
}

function asLogger(logger: PowertoolsLogger): Logger {
  return {
    info: (message, fields) => (fields ? logger.info(message, fields) : logger.info(message)),
    warn: (message, fields) => (fields ? logger.warn(message, fields) : logger.warn(message)),
    error: (message, fields) => (fields ? logger.error(message, fields) : logger.error(message)),
  };
}

function powertoolsSink(metrics: Metrics): MetricSink {
  return {
    count: (name, value) => {
      metrics.addMetric(name, MetricUnit.Count, value);
    },
    countBy: (name, dimension, dimensionValue, value) => {
      // A single-metric document carries its own dimension and is written at once.
      const single = metrics.singleMetric();
      single.addDimension(dimension, dimensionValue);
      single.addMetric(name, MetricUnit.Count, value);
    },
  };
}
