/** CloudWatch Logs' documented limits, as the embedded endpoint enforces them. */
export const LOGS_LIMITS = {
  /** PutLogEvents: events per batch. */
  maxBatchEvents: 10_000,
  /** PutLogEvents: the batch's UTF-8 message bytes plus `eventOverheadBytes` per event. */
  maxBatchBytes: 1_048_576,
  eventOverheadBytes: 26,
  /** One event, overhead included (AWS documents 1 MB today; the agent ships at most 256 KiB). */
  maxEventBytes: 1_048_576,
  /** Accepted events of one batch may span at most this. */
  maxBatchSpanMs: 24 * 60 * 60 * 1000,
  /** Older events are rejected (rejectedLogEventsInfo.tooOldLogEventEndIndex). */
  maxEventAgeMs: 14 * 24 * 60 * 60 * 1000,
  /** Events further ahead are rejected (rejectedLogEventsInfo.tooNewLogEventStartIndex). */
  maxEventFutureMs: 2 * 60 * 60 * 1000,
  /** GetLogEvents / FilterLogEvents: one response's events, counted as PutLogEvents counts them. */
  maxResponseBytes: 1_048_576,
  /** GetLogEvents / FilterLogEvents `limit`: 1 to this, and the default. */
  maxEventsPerPage: 10_000,
  /** DescribeLogGroups / DescribeLogStreams `limit`: 1 to this, and the default. */
  maxDescribePage: 50,
  /** FilterLogEvents `logStreamNames`. */
  maxFilterStreams: 100,
  /** Log group and stream names. */
  maxNameLength: 512,
} as const;
