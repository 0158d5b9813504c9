/**
 * The `awslogs` driver's side of the runtime's CloudWatch Logs: a container's stream is created
 * in its group (the group created first only with `awslogs-create-group`), and each line of
 * output becomes one event, as the driver ships them.
 */
import { ResourceAlreadyExistsError, type LogsStore } from "../logs/index.ts";
import type { TaskLogSink } from "./service.ts";

export function logsStoreSink(store: LogsStore): TaskLogSink {
  return {
    createStream(group, stream, createGroup) {
      if (createGroup) store.ensureLogGroup(group);
      try {
        store.createLogStream(group, stream);
      } catch (error) {
        if (!(error instanceof ResourceAlreadyExistsError)) throw error;
      }
    },
    put(group, stream, event) {
      store.putLogEvents(group, stream, [event]);
    },
  };
}
