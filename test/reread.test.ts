import { describe, expect, test } from "vitest";
import { CONFLICT_ATTEMPTS, isConflict, rereadOnConflict, unlessConflict } from "../functions/app/reread.ts";
import { ConflictError, NotFoundError, StoreUnavailableError } from "../functions/core/ports/errors.ts";
import { SessionStatus } from "../functions/core/status.ts";

const conflict = (): ConflictError =>
  new ConflictError(
    "s-1",
    { status: SessionStatus.PENDING, version: 1 },
    { status: SessionStatus.PENDING, version: 2 },
  );

describe("the one re-read-and-retry loop", () => {
  test("a conflicting write is planned again from a fresh read until it lands", async () => {
    const calls: number[] = [];
    const out = await rereadOnConflict((n) => {
      calls.push(n);
      return n < 3 ? Promise.reject(conflict()) : Promise.resolve("written");
    });
    expect(out).toBe("written");
    expect(calls).toEqual([1, 2, 3]);
  });

  test("each attempt after a conflict is handed that conflict, and with it the session it carries", async () => {
    const carried = new ConflictError(
      "s-1",
      { status: SessionStatus.PENDING, version: 1 },
      { status: SessionStatus.PENDING, version: 2 },
      undefined,
      "session",
      { session: { id: "s-1" } as never, kernels: [] },
    );
    const seen: (ConflictError | undefined)[] = [];
    await rereadOnConflict((n, conflict) => {
      seen.push(conflict);
      return n === 1 ? Promise.reject(carried) : Promise.resolve("written");
    });
    expect(seen).toEqual([undefined, carried]);
    expect(seen[1]?.current?.session.id).toBe("s-1");
  });

  test(`after ${CONFLICT_ATTEMPTS} conflicts the conflict is passed on`, async () => {
    let calls = 0;
    await expect(
      rereadOnConflict(() => {
        calls++;
        return Promise.reject(conflict());
      }),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(calls).toBe(CONFLICT_ATTEMPTS);
  });

  test("a conflict rebuilt from its fields (as it crosses a Lambda boundary) is retried the same", async () => {
    const rebuilt = Object.assign(new Error("session s-1: expected PENDING v1"), {
      code: "CONFLICT",
      retryable: true,
    });
    let calls = 0;
    const out = await rereadOnConflict(() =>
      ++calls === 1 ? Promise.reject(rebuilt) : Promise.resolve("written"),
    );
    expect(out).toBe("written");
    expect(calls).toBe(2);
  });

  test("any other error is passed on at once, retryable or not", async () => {
    for (const error of [
      new NotFoundError("session", "s-1"),
      new StoreUnavailableError("applyWrite", 3, new Error("throttled")),
      new Error("CONFLICT"),
      Object.assign(new Error("a conflict by name only"), { name: "ConflictError" }),
    ]) {
      let calls = 0;
      await expect(
        rereadOnConflict(() => {
          calls++;
          return Promise.reject(error);
        }),
      ).rejects.toBe(error);
      expect(calls).toBe(1);
    }
  });

  test("a conflict is told by the error's code, not its class, name or message", () => {
    expect(isConflict(conflict())).toBe(true);
    expect(isConflict(Object.assign(new Error("x"), { code: "CONFLICT" }))).toBe(true);
    expect(isConflict(Object.assign(new Error("CONFLICT"), { name: "ConflictError" }))).toBe(false);
    expect(conflict().retryable).toBe(true);
    expect(new StoreUnavailableError("op", 1, "x").retryable).toBe(true);
    expect(new NotFoundError("session", "s").retryable).toBe(false);
  });

  test("unlessConflict answers a conflict with undefined and passes other errors on", async () => {
    await expect(unlessConflict(() => Promise.resolve(1))).resolves.toBe(1);
    await expect(unlessConflict(() => Promise.reject(conflict()))).resolves.toBeUndefined();
    const other = new NotFoundError("session", "s-1");
    await expect(unlessConflict(() => Promise.reject(other))).rejects.toBe(other);
  });
});
