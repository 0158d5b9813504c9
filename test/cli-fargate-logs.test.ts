/**
 * `cairn logs` finds a Fargate kernel's output: awslogs names the stream after the run's own
 * (the task definition's prefix) with `/kernel/<task id>` added; an agent's run is read as named.
 */
import { describe, expect, test } from "vitest";
import { runStreamIn, sharedStreamListing } from "../bin/cli/task-logs.ts";

describe("runStreamIn", () => {
  test.each([
    // [case, streams, the run's stream found]
    ["an agent's run", ["s-1/0/run-0"], "s-1/0/run-0"],
    ["a Fargate task's run", ["s-1/0/run-0/kernel/0eb4cd09"], "s-1/0/run-0/kernel/0eb4cd09"],
    ["not another run's (run-0 is no prefix of run-01's)", ["s-1/0/run-01/kernel/aa"], undefined],
    ["nothing yet", [], undefined],
  ] as const)("%s", (_, streams, found) => {
    expect(runStreamIn(new Set(streams), "s-1/0/run-0")).toBe(found);
  });

  test("a shared listing finds the task's stream once it appears", async () => {
    const streams = new Set<string>();
    const listing = sharedStreamListing({ listStreams: () => Promise.resolve(streams) }, "s-1/", () => 0, 0);
    expect(await listing.find("s-1/0/run-0")).toBeUndefined();
    streams.add("s-1/0/run-0/kernel/0eb4cd09");
    expect(await listing.find("s-1/0/run-0")).toBe("s-1/0/run-0/kernel/0eb4cd09");
    expect(await listing.exists("s-1/0/run-0")).toBe(true);
  });
});
