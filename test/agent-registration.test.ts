/**
 * An agent waiting for the answer to its registration (the control plane answers on the agent's
 * queue, which it may be unable to create for up to a minute: SQS holds a deleted queue's name
 * 60 s) asks again with backoff — 5 s, then twice as long each time, up to a minute — and says
 * why in its log, on simulated time. Its AWS is faked to record what it sends; no answer comes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, expect, test, vi } from "vitest";
import { DetailType } from "../functions/core/events.ts";
import { fakeHost } from "./support/agent-host.ts";

const workRoot = mkdtempSync(join(tmpdir(), "cairn-registration-"));
afterEach(() => vi.useRealTimers());
afterAll(() => rmSync(workRoot, { recursive: true, force: true }));

test("an unanswered registration is asked again after 5, 10, 20, 40, 60 and 60 s, each time saying so", async () => {
  vi.useFakeTimers();
  const h = fakeHost("backoff", workRoot);
  const requests = () => h.put.filter((e) => e.DetailType === DetailType.AgentRegistrationRequested).length;
  /** Simulated time until the `n`th request is put, in steps of 50 ms. */
  const untilRequest = async (n: number): Promise<number> => {
    let elapsedMs = 0;
    while (requests() < n) {
      if (elapsedMs > 120_000) throw new Error(`no request ${n} within 120 s`);
      await vi.advanceTimersByTimeAsync(50);
      elapsedMs += 50;
    }
    return elapsedMs;
  };
  const started = h.host.start();
  await untilRequest(1);
  const waitedSeconds: number[] = [];
  // Each request is put a moment after it is asked (the outbox's linger): whole seconds between.
  for (let n = 2; n <= 7; n++) waitedSeconds.push(Math.round((await untilRequest(n)) / 1000));
  expect(waitedSeconds).toEqual([5, 10, 20, 40, 60, 60]);
  const asked = h.logs.filter((line) => line.includes("no answer to the registration"));
  expect(asked[0]).toBe(
    "agent backoff: no answer to the registration within 5 s; asking again (next wait 10 s). " +
      "The answer comes on queue agent-queue; if it was deleted less than a minute ago, SQS lets no one create it again until then",
  );
  expect(
    asked.map((line) => /within (\d+) s; asking again \(next wait (\d+) s\)/.exec(line)?.slice(1)),
  ).toEqual([
    ["5", "10"],
    ["10", "20"],
    ["20", "40"],
    ["40", "60"],
    ["60", "60"],
    ["60", "60"],
  ]);
  const drained = h.host.drain("test over");
  await vi.runAllTimersAsync();
  await drained;
  await started;
});
