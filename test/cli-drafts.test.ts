/**
 * Drafts in the CLI without a runtime: parsing `job create / edit / submit /
 * delete`, the spec validated before anything is sent, the local refusals (not a draft, no
 * draft), the control plane's refusal of the very event sent, and `job get` of a draft
 * (Configuring), against in-memory fakes on a simulated clock.
 */
import { describe, expect, test } from "vitest";
import type { CairnApi, SessionReader } from "../bin/cli/cairn-api.ts";
import { runCli } from "../bin/cli/main.ts";
import type { JobDraft } from "../functions/core/drafts.ts";
import type { PutEventsEntry } from "../functions/core/events.ts";
import { newJob } from "../functions/core/jobs.ts";
import type { Job } from "../functions/core/model.ts";
import type { SubmissionRejection } from "../functions/core/ports/jobs.ts";
import { parseSpecText } from "../functions/core/spec-text.ts";
import { fakeCliIo, parseLine, simulatedClock, usageErrorOf } from "./support/cli-helpers.ts";

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0); // 2026-11-21T12:00:00.000Z
const SPEC_TEXT = "name: train\nreplicas: 2\ncoscheduled: false\ncommand: [/bin/true]\n";
const SPEC = parseSpecText(SPEC_TEXT);
/** What is sent: the spec as written, before defaults (a job template's apply to what it leaves unset). */
const WRITTEN = { name: "train", replicas: 2, coscheduled: false, command: ["/bin/true"] };
const DRAFT: JobDraft = {
  id: "d-1",
  spec: SPEC,
  version: 3,
  createdAtMs: T0 - 60_000,
  updatedAtMs: T0 - 30_000,
};
const RUNTIME_FILE = {
  region: "local",
  tableName: "cairn",
  eventBusName: "cairn",
  stateMachineArn: "arn:aws:states:local:000000000000:stateMachine:SessionLifecycle",
  endpoints: { dynamoDb: "http://127.0.0.1:8000", eventBridge: "http://127.0.0.1:8002" },
  pid: 1,
};

interface World {
  drafts: Record<string, JobDraft>;
  jobs: Record<string, Job>;
  /** What the control plane refuses, by the id the event names. */
  refuse?: Record<string, string>;
}

function cli(world: World, files: Record<string, string> = {}) {
  const puts: PutEventsEntry[] = [];
  const rejections: SubmissionRejection[] = [];
  const store = {
    getJob: (id: string) => Promise.resolve(world.jobs[id]),
    getSession: () => Promise.resolve(undefined),
    getSessions: () => Promise.resolve([]),
    getDraft: (id: string) => Promise.resolve(world.drafts[id]),
    listRejections: (id: string) => Promise.resolve(rejections.filter((r) => r.id === id)),
  } as unknown as SessionReader;
  const api: CairnApi = {
    store,
    admin: {} as CairnApi["admin"],
    agents: {} as CairnApi["agents"],
    census: {} as CairnApi["census"],
    eventBusName: "cairn",
    logs: { readable: false, why: "no logs here" },
    put: (entry) => {
      puts.push(entry);
      const eventId = `ev-${puts.length}`;
      const { jobId } = JSON.parse(entry.Detail) as { jobId: string };
      const reason = world.refuse?.[jobId];
      if (reason !== undefined) rejections.push({ id: jobId, eventId, reason, atMs: T0 });
      return Promise.resolve(eventId);
    },
    close: () => {},
  };
  const clock = simulatedClock(T0);
  const { io, out, err } = fakeCliIo(
    { "/work/.cairn/runtime.json": JSON.stringify(RUNTIME_FILE), ...files },
    {
      nowMs: clock.nowMs,
      sleep: clock.sleep,
      openApi: () => Promise.resolve(api),
      stackOutputs: () => Promise.resolve({ TableName: "t", EventBusName: "b", StateMachineArn: "arn:sm" }),
    },
  );
  return { io, out, err, puts };
}

describe("parsing the draft commands", () => {
  test("job create, edit, submit and delete", () => {
    expect(parseLine("job create -f job.yaml --id d-1")).toEqual({
      kind: "job create",
      file: "job.yaml",
      jobId: "d-1",
      output: "text",
      target: {},
    });
    expect(parseLine("job create job.yaml -o json")).toEqual({
      kind: "job create",
      file: "job.yaml",
      output: "json",
      target: {},
    });
    expect(parseLine("job edit d-1 -f job.yaml")).toEqual({
      kind: "job edit",
      jobId: "d-1",
      file: "job.yaml",
      output: "text",
      target: {},
    });
    expect(parseLine("job submit d-1 --wait --timeout 30")).toEqual({
      kind: "job submit",
      jobId: "d-1",
      wait: true,
      streamLogs: false,
      timeoutSeconds: 30,
      output: "text",
      target: {},
    });
    expect(parseLine("job delete d-1")).toEqual({
      kind: "job delete",
      jobId: "d-1",
      output: "text",
      target: {},
    });
  });

  test.each([
    ["job create", "missing the spec: -f FILE"],
    [
      "job create -f job.yaml --id Bad_Id",
      `--id "Bad_Id" is not a session id: 3 to 63 lowercase letters, digits or '-', starting with a letter or digit`,
    ],
    ["job edit", "missing JOB_ID FILE"],
    ["job edit d-1", "missing the spec: -f FILE"],
    ["job submit d-1 --timeout 5", "--timeout only applies with --wait"],
    ["job submit d-1 --stream-logs", "--stream-logs only applies with --wait"],
    ["job delete", "missing JOB_ID"],
  ])("%j is an error: %s", (line, message) => {
    expect(usageErrorOf(line).message).toBe(message);
  });
});

describe("runCli: drafts", () => {
  test("given an invalid spec, job create and job edit print every problem and send nothing", async () => {
    const bad = "name: train\nreplicas: 0\n";
    for (const args of [
      ["job", "create", "-f", "job.yaml", "--id", "d-1"],
      ["job", "edit", "d-1", "-f", "job.yaml"],
    ]) {
      const c = cli({ drafts: { "d-1": DRAFT }, jobs: {} }, { "/work/job.yaml": bad });
      expect(await runCli(args, c.io)).toBe(2);
      expect(c.err.join("\n")).toContain("replicas");
      expect(c.err.join("\n")).toContain("command");
      expect(c.puts).toEqual([]);
    }
  });

  test("given a free id, job create sends Job Draft Saved with the spec as written and waits for the draft to be stored", async () => {
    const world: World = { drafts: {}, jobs: {} };
    const c = cli(world, { "/work/job.yaml": SPEC_TEXT });
    // The control plane stores the draft while the CLI polls.
    const open = c.io.openApi.bind(c.io);
    c.io.openApi = async (connection) => {
      const api = await open(connection);
      return {
        ...api,
        put: async (entry) => {
          const id = await api.put(entry);
          world.drafts["d-1"] = { ...DRAFT, version: 1 };
          return id;
        },
      };
    };
    expect(await runCli(["job", "create", "-f", "job.yaml", "--id", "d-1", "-o", "json"], c.io)).toBe(0);
    expect(c.puts.map((p) => [p.DetailType, JSON.parse(p.Detail) as unknown])).toEqual([
      ["Job Draft Saved", { jobId: "d-1", spec: WRITTEN }],
    ]);
    expect(JSON.parse(c.out.join(""))).toEqual({ jobId: "d-1", version: 1 });
    expect(c.err).toEqual(["draft d-1 stored (Configuring); `cairn job submit d-1` queues it"]);
  });

  test("given the control plane refuses the create, job create exits 2 with its reason", async () => {
    const reason = "detail.jobId: job d-1 exists already (it was submitted); a draft needs an id of its own";
    const c = cli({ drafts: {}, jobs: {}, refuse: { "d-1": reason } }, { "/work/job.yaml": SPEC_TEXT });
    expect(await runCli(["job", "create", "job.yaml", "--id", "d-1"], c.io)).toBe(2);
    expect(c.err).toEqual([`cairn: creation of draft d-1 was refused: ${reason}`]);
  });

  test("given a draft at version 3, job edit sends the spec with expectedVersion 3", async () => {
    const c = cli(
      { drafts: { "d-1": DRAFT }, jobs: {}, refuse: { "d-1": "detail.expectedVersion: stale" } },
      {
        "/work/job.yaml": SPEC_TEXT,
      },
    );
    expect(await runCli(["job", "edit", "d-1", "job.yaml"], c.io)).toBe(2);
    expect(c.puts.map((p) => JSON.parse(p.Detail) as unknown)).toEqual([
      { jobId: "d-1", spec: WRITTEN, expectedVersion: 3 },
    ]);
    expect(c.err).toEqual(["cairn: the edit of draft d-1 was refused: detail.expectedVersion: stale"]);
  });

  test("given a submitted job under the id, edit, submit and delete refuse it locally, sending nothing", async () => {
    const world: World = { drafts: {}, jobs: { "d-1": newJob("d-1", SPEC, T0) } };
    for (const [args, command] of [
      [["job", "edit", "d-1", "job.yaml"], "job edit"],
      [["job", "submit", "d-1"], "job submit"],
      [["job", "delete", "d-1"], "job delete"],
    ] as const) {
      const c = cli(world, { "/work/job.yaml": SPEC_TEXT });
      expect(await runCli([...args], c.io)).toBe(2);
      expect(c.err[0]).toBe(
        "cairn: job d-1 is not a draft: it was submitted (`cairn job get d-1` shows it; `cairn cancel d-1` cancels it)",
      );
      expect(c.err.join("\n")).toContain(`cairn ${command} --help`);
      expect(c.puts).toEqual([]);
    }
  });

  test("given nothing under the id, edit, submit and delete exit 3", async () => {
    for (const args of [
      ["job", "edit", "d-9", "job.yaml"],
      ["job", "submit", "d-9"],
      ["job", "delete", "d-9"],
    ]) {
      const c = cli({ drafts: {}, jobs: {} }, { "/work/job.yaml": SPEC_TEXT });
      expect(await runCli(args, c.io)).toBe(3);
      expect(c.err).toEqual(["cairn: job d-9 not found: there is no draft or job with this id"]);
    }
  });

  test("given a draft, job delete sends Job Draft Deleted at its version", async () => {
    const c = cli({
      drafts: { "d-1": DRAFT },
      jobs: {},
      refuse: { "d-1": "detail.jobId: draft d-1 is being submitted; it can no longer change" },
    });
    expect(await runCli(["job", "delete", "d-1"], c.io)).toBe(2);
    expect(c.puts.map((p) => [p.DetailType, JSON.parse(p.Detail) as unknown])).toEqual([
      ["Job Draft Deleted", { jobId: "d-1", expectedVersion: 3 }],
    ]);
    expect(c.err).toEqual([
      "cairn: deletion of draft d-1 was refused: detail.jobId: draft d-1 is being submitted; it can no longer change",
    ]);
  });

  test("given a draft whose command and refusal quote escape sequences, job get and the refusal print them as text", async () => {
    const hostile = "\u001b]52;c;b3duZWQ=\u0007\u001b[2J\u202e";
    const escaped = "\\u001b]52;c;b3duZWQ=\\u0007\\u001b[2J\\u202e";
    const draft = { ...DRAFT, spec: { ...SPEC, command: ["/bin/echo", hostile] } };
    const get = cli({ drafts: { "d-1": draft }, jobs: {} });
    expect(await runCli(["job", "get", "d-1"], get.io)).toBe(0);
    expect(get.out.join("\n")).toContain(`  command   /bin/echo ${escaped}`);
    const refused = cli({ drafts: { "d-1": draft }, jobs: {}, refuse: { "d-1": `detail.spec: ${hostile}` } });
    expect(await runCli(["job", "delete", "d-1"], refused.io)).toBe(2);
    expect(refused.err).toEqual([`cairn: deletion of draft d-1 was refused: detail.spec: ${escaped}`]);
  });

  test("given a draft, job get shows it Configuring, as text and as JSON", async () => {
    const text = cli({ drafts: { "d-1": DRAFT }, jobs: {} });
    expect(await runCli(["job", "get", "d-1"], text.io)).toBe(0);
    expect(text.out.join("\n")).toBe(
      [
        "draft d-1 (train)",
        "  state     DRAFT: not submitted (`cairn job submit d-1` queues it)",
        "  hpc       Configuring (HPC Pack's state)",
        "  version   3",
        "  replicas  2",
        "  queue     default, priority 0 (the queue's priority is added when it is submitted)",
        "  command   /bin/true",
        "  created   2026-11-21T11:59:00.000Z (1m00s ago)",
        "  updated   2026-11-21T11:59:30.000Z (30.0s ago)",
      ].join("\n"),
    );
    const json = cli({ drafts: { "d-1": DRAFT }, jobs: {} });
    expect(await runCli(["job", "get", "d-1", "-o", "json"], json.io)).toBe(0);
    expect(JSON.parse(json.out.join(""))).toMatchObject({
      jobId: "d-1",
      draft: true,
      hpcState: "Configuring",
      version: 3,
      submitting: false,
    });
  });
});
