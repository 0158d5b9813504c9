/**
 * Which runtime file the CLI reads with no --stack or --endpoint: --runtime-file, then
 * CAIRN_RUNTIME_FILE, then the nearest .cairn/runtime.json up the directory tree, then the record
 * `npm start` leaves for the user; a file or record whose runtime has died says so.
 */
import { describe, expect, test } from "vitest";
import { UnreachableError } from "../bin/cli/errors.ts";
import { locateRuntimeFile, userRuntimeRecordPath, type LocateDeps } from "../bin/cli/runtime-locate.ts";

const LIVE_PID = 100;
const DEAD_PID = 200;

function world(
  files: Readonly<Record<string, string>>,
  env: Readonly<Record<string, string>> = {},
  cwd = "/home/ada/project/src",
): LocateDeps & { read: string[] } {
  const read: string[] = [];
  return {
    cwd,
    env,
    read,
    readFile: (path) => {
      read.push(path);
      const text = files[path];
      if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
      return text;
    },
    processAlive: (pid) => pid === LIVE_PID,
  };
}

const runtimeFile = (name: string, pid = LIVE_PID) => JSON.stringify({ name, pid });

describe("the user's record", () => {
  test("XDG_STATE_HOME when absolute, else ~/.local/state", () => {
    expect(userRuntimeRecordPath({ XDG_STATE_HOME: "/s", HOME: "/home/ada" })).toBe("/s/cairn/runtime.json");
    expect(userRuntimeRecordPath({ XDG_STATE_HOME: "rel", HOME: "/home/ada" })).toBe(
      "/home/ada/.local/state/cairn/runtime.json",
    );
    expect(userRuntimeRecordPath({ HOME: "/home/ada" })).toBe("/home/ada/.local/state/cairn/runtime.json");
    expect(userRuntimeRecordPath({})).toBeUndefined();
  });
});

describe("locateRuntimeFile", () => {
  const HOME = { HOME: "/home/ada" };
  const RECORD = "/home/ada/.local/state/cairn/runtime.json";

  test("--runtime-file first, relative to the working directory", () => {
    const w = world({ "/home/ada/project/src/r.json": runtimeFile("given") }, { CAIRN_RUNTIME_FILE: "/x" });
    expect(locateRuntimeFile("r.json", w)).toEqual({ shown: "r.json", text: runtimeFile("given") });
  });

  test("then CAIRN_RUNTIME_FILE, before any directory", () => {
    const w = world(
      { "/tmp/rt.json": runtimeFile("env"), "/home/ada/project/src/.cairn/runtime.json": runtimeFile("dir") },
      { CAIRN_RUNTIME_FILE: "/tmp/rt.json" },
    );
    expect(locateRuntimeFile(undefined, w).text).toBe(runtimeFile("env"));
    expect(() => locateRuntimeFile(undefined, world({}, { CAIRN_RUNTIME_FILE: "/tmp/none.json" }))).toThrow(
      new UnreachableError(
        "no local runtime found at /tmp/none.json (CAIRN_RUNTIME_FILE) — start one with `npm start`, or pass --stack/--endpoint",
      ),
    );
  });

  test("then the nearest .cairn/runtime.json up the tree: relative when in the working directory", () => {
    const here = world({ "/home/ada/project/src/.cairn/runtime.json": runtimeFile("here") }, HOME);
    expect(locateRuntimeFile(undefined, here)).toEqual({
      shown: ".cairn/runtime.json",
      text: runtimeFile("here"),
    });
    const above = world(
      {
        "/home/ada/project/.cairn/runtime.json": runtimeFile("project"),
        "/home/ada/.cairn/runtime.json": runtimeFile("home"),
        [RECORD]: JSON.stringify({
          runtimeFile: "/elsewhere/runtime.json",
          dataDir: "/elsewhere",
          pid: LIVE_PID,
        }),
      },
      HOME,
    );
    expect(locateRuntimeFile(undefined, above)).toEqual({
      shown: "/home/ada/project/.cairn/runtime.json",
      text: runtimeFile("project"),
    });
    expect(above.read).toEqual([
      "/home/ada/project/src/.cairn/runtime.json",
      "/home/ada/project/.cairn/runtime.json",
    ]);
  });

  test("then the runtime npm start recorded for the user", () => {
    const w = world(
      {
        [RECORD]: JSON.stringify({ runtimeFile: "/data/runtime.json", dataDir: "/data", pid: LIVE_PID }),
        "/data/runtime.json": runtimeFile("recorded"),
      },
      HOME,
    );
    expect(locateRuntimeFile(undefined, w)).toEqual({
      shown: "/data/runtime.json",
      text: runtimeFile("recorded"),
    });
    expect(w.read).toEqual([
      "/home/ada/project/src/.cairn/runtime.json",
      "/home/ada/project/.cairn/runtime.json",
      "/home/ada/.cairn/runtime.json",
      "/home/.cairn/runtime.json",
      "/.cairn/runtime.json",
      RECORD,
      "/data/runtime.json",
    ]);
  });

  test("a runtime that died: its pid named, from the record or the file itself", () => {
    const record = { runtimeFile: "/data/runtime.json", dataDir: "/data", pid: DEAD_PID };
    expect(() => locateRuntimeFile(undefined, world({ [RECORD]: JSON.stringify(record) }, HOME))).toThrow(
      `the runtime recorded in ${RECORD} (pid ${DEAD_PID}, data directory /data) is no longer running: ` +
        "it did not stop cleanly — start it again with `npm start`",
    );
    expect(() =>
      locateRuntimeFile(
        undefined,
        world({ "/home/ada/project/src/.cairn/runtime.json": runtimeFile("left", DEAD_PID) }),
      ),
    ).toThrow(
      `the runtime file .cairn/runtime.json was written by runtime pid ${DEAD_PID}, which is no longer running ` +
        "(it did not stop cleanly) — start it again with `npm start`, or pass --stack/--endpoint",
    );
  });

  test("a record whose runtime file is gone, or that is not a record", () => {
    const record = { runtimeFile: "/data/runtime.json", dataDir: "/data", pid: LIVE_PID };
    expect(() => locateRuntimeFile(undefined, world({ [RECORD]: JSON.stringify(record) }, HOME))).toThrow(
      `the runtime recorded in ${RECORD} (pid ${LIVE_PID}) has no runtime file /data/runtime.json any more`,
    );
    expect(() =>
      locateRuntimeFile(undefined, world({ [RECORD]: JSON.stringify({ runtimeFile: "rel.json" }) }, HOME)),
    ).toThrow(`the runtime record ${RECORD} is not one \`npm start\` wrote`);
  });
});
