/**
 * The CLI's reads of kernel output on CloudWatch Logs (task-logs.ts's KernelLogReader), over the
 * SDK: DescribeLogStreams to learn which runs' streams exist, GetLogEvents forward from the head
 * for one stream, FilterLogEvents for several at once. A missing log group (or stream, once
 * known to exist) is a LogsUnavailableError naming the group and where it was looked for.
 */
import {
  DescribeLogStreamsCommand,
  FilterLogEventsCommand,
  GetLogEventsCommand,
  type CloudWatchLogsClient,
  type GetLogEventsCommandOutput,
} from "@aws-sdk/client-cloudwatch-logs";
import { LogsUnavailableError } from "./errors.ts";

/** Pages a tail reads back at most for its lines (a stream whose newest events are far back). */
const MAX_TAIL_PAGES = 10;

export interface RawLogEvent {
  readonly timestamp: number;
  readonly message: string;
}

/** The CloudWatch Logs reads the CLI makes (kernel-log-reader.ts; tests use the same over HTTP). */
export interface KernelLogReader {
  readonly logGroupName: string;
  /** Names of the group's streams starting with `prefix` (every page). */
  listStreams(prefix: string): Promise<ReadonlySet<string>>;
  /** One page forward: from the head, or from a nextForwardToken (returned unchanged when nothing is new). */
  forward(
    streamName: string,
    nextToken?: string,
  ): Promise<{ events: RawLogEvent[]; nextForwardToken: string }>;
  /**
   * The last `limit` events of one stream and the token to read on from (the dashboard's tail);
   * undefined when the stream does not exist yet.
   */
  tail(
    streamName: string,
    limit: number,
  ): Promise<{ events: RawLogEvent[]; nextForwardToken: string } | undefined>;
  /** One page of several streams' events interleaved by time; `nextToken` while more remain. */
  filter(
    streamNames: readonly string[],
    nextToken?: string,
  ): Promise<{ events: (RawLogEvent & { logStreamName: string })[]; nextToken?: string }>;
}

export function cloudWatchLogReader(
  client: Pick<CloudWatchLogsClient, "send">,
  logGroupName: string,
  where: string,
): KernelLogReader {
  const missing = (error: unknown): never => {
    if ((error as { name?: unknown }).name === "ResourceNotFoundException") {
      throw new LogsUnavailableError(
        `${where}: log group ${logGroupName}: ${(error as Error).message} ` +
          "(the agents ship the kernels' output there; is the stack or runtime fully set up?)",
      );
    }
    throw error;
  };
  return {
    logGroupName,
    async listStreams(prefix) {
      const names = new Set<string>();
      let nextToken: string | undefined;
      do {
        const page = await client
          .send(
            new DescribeLogStreamsCommand({
              logGroupName,
              ...(prefix === "" ? {} : { logStreamNamePrefix: prefix }),
              nextToken,
            }),
          )
          .catch(missing);
        for (const s of page.logStreams ?? []) if (s.logStreamName !== undefined) names.add(s.logStreamName);
        nextToken = page.nextToken;
      } while (nextToken !== undefined);
      return names;
    },
    async forward(streamName, nextToken) {
      const page = await client
        .send(
          new GetLogEventsCommand({
            logGroupName,
            logStreamName: streamName,
            startFromHead: true,
            nextToken,
          }),
        )
        .catch(missing);
      return {
        events: (page.events ?? []).map((e) => ({ timestamp: e.timestamp ?? 0, message: e.message ?? "" })),
        nextForwardToken: page.nextForwardToken ?? nextToken ?? "",
      };
    },
    async tail(streamName, limit) {
      try {
        const raw = (page: GetLogEventsCommandOutput) =>
          (page.events ?? []).map((e) => ({ timestamp: e.timestamp ?? 0, message: e.message ?? "" }));
        const newest = await client.send(
          new GetLogEventsCommand({ logGroupName, logStreamName: streamName, startFromHead: false, limit }),
        );
        const events = raw(newest);
        // CloudWatch Logs splits pages by time: a page read backward may be short or empty while
        // older events remain, for as long as its backward token moves (the API reference).
        let token = newest.nextBackwardToken;
        for (let pages = 1; events.length < limit && token !== undefined && pages < MAX_TAIL_PAGES; pages++) {
          const older = await client.send(
            new GetLogEventsCommand({
              logGroupName,
              logStreamName: streamName,
              startFromHead: false,
              nextToken: token,
              limit: limit - events.length,
            }),
          );
          events.unshift(...raw(older));
          if (older.nextBackwardToken === token) break;
          token = older.nextBackwardToken;
        }
        return { events: events.slice(-limit), nextForwardToken: newest.nextForwardToken ?? "" };
      } catch (error) {
        // A stream that does not exist yet (its task has not written); a missing group is reported.
        if (
          (error as { name?: unknown }).name === "ResourceNotFoundException" &&
          /stream/i.test((error as Error).message)
        ) {
          return undefined;
        }
        return missing(error);
      }
    },
    async filter(streamNames, nextToken) {
      const page = await client
        .send(new FilterLogEventsCommand({ logGroupName, logStreamNames: [...streamNames], nextToken }))
        .catch(missing);
      return {
        events: (page.events ?? []).map((e) => ({
          logStreamName: e.logStreamName ?? "",
          timestamp: e.timestamp ?? 0,
          message: e.message ?? "",
        })),
        ...(page.nextToken === undefined ? {} : { nextToken: page.nextToken }),
      };
    },
  };
}
