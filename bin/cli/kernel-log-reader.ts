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
} from "@aws-sdk/client-cloudwatch-logs";
import { LogsUnavailableError } from "./errors.ts";
import type { KernelLogReader } from "./task-logs.ts";

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
