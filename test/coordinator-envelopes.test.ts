/**
 * The coordinator's entry point parses each envelope by its schema before the application layer
 * sees the batch: a bad one becomes an `invalid` event with its reason (rejected, never dropped),
 * a submission keeps its spec as its sender wrote it, and the sessions the batch names are listed
 * for reading together.
 */
import { describe, expect, test } from "vitest";
import { parseBatch } from "../functions/handlers/coordinator-envelopes.ts";

const submitted = (id: string, spec: Record<string, unknown>) => ({
  id,
  time: "2026-11-29T00:00:00Z",
  source: "cairn.client",
  "detail-type": "Session Submitted",
  detail: { sessionId: `s-${id}`, spec },
});

describe("coordinator envelopes, parsed at the edge", () => {
  test("a submission parses; its spec as written is kept beside the parsed one", () => {
    const batch = parseBatch([submitted("e1", { name: "n", command: ["true"] })]);
    expect(batch.events).toHaveLength(1);
    expect(batch.events[0]).toMatchObject({ kind: "inbound", event: { id: "e1" } });
    // The parsed spec has the schema's defaults; the written one has only what was sent.
    expect(batch.written.get("e1")).toEqual({ name: "n", command: ["true"] });
    expect(batch.sessionIds).toEqual([]);
  });

  test("an envelope that breaks its schema is an invalid event naming the field, in its place", () => {
    const batch = parseBatch([
      { id: "e2", source: "cairn.client", "detail-type": "Session Submitted", detail: { sessionId: "s-2" } },
      { id: "e3", "detail-type": undefined, detail: "message body is not JSON" },
    ]);
    expect(batch.events).toHaveLength(2);
    expect(batch.events[0]).toMatchObject({ kind: "invalid", eventId: "e2", submission: { id: "s-2" } });
    expect(batch.events[0]?.kind === "invalid" && batch.events[0].message).toMatch(/spec/);
    expect(batch.events[1]).toMatchObject({ kind: "invalid", eventId: "e3" });
  });

  test("cancels, reports and status changes name their sessions, read together before any is applied", () => {
    const batch = parseBatch([
      {
        id: "e4",
        source: "cairn.client",
        "detail-type": "Session Cancel Requested",
        detail: { sessionId: "s-4" },
      },
      {
        id: "e5",
        source: "cairn.control-plane",
        "detail-type": "Session Status Changed",
        detail: { sessionId: "s-5", from: "PENDING", to: "SCHEDULED" },
      },
    ]);
    expect(batch.sessionIds).toEqual(["s-4", "s-5"]);
  });
});
