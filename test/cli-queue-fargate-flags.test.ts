/**
 * `cairn queue create|update`'s Fargate flags (`--capacity-provider`, `--vcpu-quota`,
 * `--no-fargate`) from argv to the stored queue, and `cairn queue get|list` showing the settings.
 */
import { describe, expect, test } from "vitest";
import { parseCommandLine } from "../bin/cli/args.ts";
import type { CairnApi } from "../bin/cli/cairn-api.ts";
import { runCli } from "../bin/cli/main.ts";
import type { Queue } from "../functions/core/model.ts";
import { fakeCliIo, parseLine, usageErrorOf } from "./support/cli-helpers.ts";

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0); // 2026-11-21T12:00:00.000Z
const AT = "2026-11-21T12:00:00.000Z";

const RUNTIME_FILE = {
  region: "local",
  tableName: "cairn",
  eventBusName: "cairn",
  stateMachineArn: "arn:aws:states:local:000000000000:stateMachine:SessionLifecycle",
  endpoints: {
    dynamoDb: "http://127.0.0.1:8000",
    stepFunctions: "http://127.0.0.1:8001",
    eventBridge: "http://127.0.0.1:8002",
    logs: "http://127.0.0.1:8003",
  },
  kernelLogGroupName: "/cairn/kernels",
  pid: 1,
};

type QueueInput = Omit<Queue, "createdAtMs" | "updatedAtMs">;

/** Queues in memory (no retry policies): only the calls the queue commands make. */
function world() {
  const queues = new Map<string, Queue>();
  let opened = 0;
  const admin = {
    getRetryPolicy: () => Promise.resolve(undefined),
    getQueue: (name: string) => Promise.resolve(queues.get(name)),
    listQueues: () => Promise.resolve([...queues.values()].sort((a, b) => a.name.localeCompare(b.name))),
    createQueue: (input: QueueInput, nowMs: number) => {
      const queue = { ...input, createdAtMs: nowMs, updatedAtMs: nowMs };
      queues.set(input.name, queue);
      return Promise.resolve(queue);
    },
    updateQueue: (input: QueueInput, nowMs: number) => {
      const current = queues.get(input.name)!;
      const queue = { ...input, createdAtMs: current.createdAtMs, updatedAtMs: nowMs };
      queues.set(input.name, queue);
      return Promise.resolve(queue);
    },
  };
  const api = { admin, close: () => {} } as unknown as CairnApi;
  const { io, out, err } = fakeCliIo(
    { "/work/.cairn/runtime.json": JSON.stringify(RUNTIME_FILE) },
    {
      nowMs: () => T0,
      sleep: () => Promise.resolve(),
      openApi: () => {
        opened++;
        return Promise.resolve(api);
      },
      stackOutputs: () => Promise.reject(new Error("unexpected")),
    },
  );
  return { io, out, err, queues, opened: () => opened };
}

function helpOf(...argv: string[]): string {
  const invocation = parseCommandLine(argv);
  if (invocation.kind !== "help") throw new Error(`${argv.join(" ")} parsed as ${invocation.kind}`);
  return invocation.text;
}

describe("parsing the Fargate flags", () => {
  test.each([
    [
      "queue create batch --capacity-provider FARGATE_SPOT --vcpu-quota 16",
      { kind: "queue create", fargate: { capacityProvider: "FARGATE_SPOT", vcpuQuota: 16 } },
    ],
    ["queue create batch --vcpu-quota 0.5", { kind: "queue create", fargate: { vcpuQuota: 0.5 } }],
    [
      "queue create batch --capacity-provider fargate_spot --vcpu-quota=4",
      { fargate: { capacityProvider: "FARGATE_SPOT", vcpuQuota: 4 } },
    ],
    ["queue update batch --vcpu-quota 32", { kind: "queue update", fargate: { vcpuQuota: 32 } }],
    ["queue update batch --capacity-provider FARGATE", { fargate: { capacityProvider: "FARGATE" } }],
    ["queue update batch --no-fargate", { kind: "queue update", fargate: null }],
  ])("%s", (line, expected) => {
    expect(parseLine(line)).toMatchObject(expected);
  });

  test("without the flags there are no Fargate changes", () => {
    expect(parseLine("queue create batch")).not.toHaveProperty("fargate");
    expect(parseLine("queue update batch --priority 3")).not.toHaveProperty("fargate");
  });

  test.each([
    [
      "queue create batch --capacity-provider SPOT --vcpu-quota 4",
      '--capacity-provider must be FARGATE or FARGATE_SPOT, got "SPOT"',
    ],
    ["queue create batch --vcpu-quota 0", '--vcpu-quota must be a number of vCPUs greater than 0, got "0"'],
    ["queue update batch --vcpu-quota=-2", '--vcpu-quota must be a number of vCPUs greater than 0, got "-2"'],
    [
      "queue update batch --vcpu-quota lots",
      '--vcpu-quota must be a number of vCPUs greater than 0, got "lots"',
    ],
    [
      "queue update batch --no-fargate --vcpu-quota 4",
      "--no-fargate removes the Fargate settings: it cannot be combined with --capacity-provider or --vcpu-quota",
    ],
    ["queue create batch --no-fargate", "unknown option --no-fargate"],
    ["queue update batch --no-fargate=yes", "option --no-fargate takes no value"],
  ])("%s: refused, naming the flag", (line, message) => {
    const error = usageErrorOf(line);
    expect(error.message).toBe(message);
    expect(error.command).toBe(line.split(" ").slice(0, 2).join(" "));
  });

  test("help lists the flags; --no-fargate only for update", () => {
    const create = helpOf("queue", "create", "--help");
    expect(create).toContain("--capacity-provider <PROVIDER>");
    expect(create).toContain("--vcpu-quota <N>");
    expect(create).toContain("cairn queue create batch --capacity-provider FARGATE_SPOT --vcpu-quota 16");
    expect(create).not.toContain("--no-fargate");
    const update = helpOf("queue", "update", "--help");
    expect(update).toContain("--capacity-provider <PROVIDER>");
    expect(update).toContain("--vcpu-quota <N>");
    expect(update).toContain("--no-fargate");
  });
});

describe("runCli: queues with Fargate settings", () => {
  test("create with both flags, update only the quota, get and list show them, --no-fargate removes them", async () => {
    const w = world();
    expect(
      await runCli(
        ["queue", "create", "batch", "--capacity-provider", "FARGATE_SPOT", "--vcpu-quota", "16"],
        w.io,
      ),
    ).toBe(0);
    expect(w.err).toEqual([]);
    expect(w.queues.get("batch")).toMatchObject({
      priority: 0,
      retryPolicies: [],
      fargate: { capacityProvider: "FARGATE_SPOT", vcpuQuota: 16 },
    });
    expect(w.out.at(-1)).toBe(
      [
        "created queue batch",
        "queue batch",
        "  priority        0",
        "  retry policies  -",
        "  fargate         FARGATE_SPOT, 16 vCPU",
        `  created         ${AT}`,
        `  updated         ${AT}`,
      ].join("\n"),
    );

    // Only the quota: the capacity provider is kept.
    expect(await runCli(["queue", "update", "batch", "--vcpu-quota", "32"], w.io)).toBe(0);
    expect(w.queues.get("batch")?.fargate).toEqual({ capacityProvider: "FARGATE_SPOT", vcpuQuota: 32 });

    expect(await runCli(["queue", "get", "batch"], w.io)).toBe(0);
    expect(w.out.at(-1)).toContain("\n  fargate         FARGATE_SPOT, 32 vCPU\n");
    expect(await runCli(["queue", "get", "batch", "-o", "json"], w.io)).toBe(0);
    expect(JSON.parse(w.out.at(-1)!)).toEqual({
      name: "batch",
      priority: 0,
      retryPolicies: [],
      fargate: { capacityProvider: "FARGATE_SPOT", vcpuQuota: 32 },
      createdAt: AT,
      updatedAt: AT,
    });

    expect(await runCli(["queue", "create", "cpu", "--priority", "2"], w.io)).toBe(0);
    expect(await runCli(["queue", "list"], w.io)).toBe(0);
    expect(w.out.at(-1)).toBe(
      [
        "NAME   PRIORITY  RETRY-POLICIES  FARGATE                UPDATED",
        `batch  0         -               FARGATE_SPOT, 32 vCPU  ${AT}`,
        `cpu    2         -               -                      ${AT}`,
      ].join("\n"),
    );
    expect(await runCli(["queue", "list", "-o", "json"], w.io)).toBe(0);
    const list = JSON.parse(w.out.at(-1)!) as { queues: Record<string, unknown>[] };
    expect(list.queues.map((q) => q["fargate"])).toEqual([
      { capacityProvider: "FARGATE_SPOT", vcpuQuota: 32 },
      undefined,
    ]);

    expect(await runCli(["queue", "update", "batch", "--no-fargate"], w.io)).toBe(0);
    // No queue has Fargate settings any more: the list has no FARGATE column.
    expect(await runCli(["queue", "list"], w.io)).toBe(0);
    expect(w.out.at(-1)).toBe(
      [
        "NAME   PRIORITY  RETRY-POLICIES  UPDATED",
        `batch  0         -               ${AT}`,
        `cpu    2         -               ${AT}`,
      ].join("\n"),
    );
    expect(w.queues.get("batch")).not.toHaveProperty("fargate");
    expect(w.queues.get("batch")).toMatchObject({ priority: 0, retryPolicies: [] });
    expect(await runCli(["queue", "get", "batch", "-o", "json"], w.io)).toBe(0);
    expect(JSON.parse(w.out.at(-1)!)).not.toHaveProperty("fargate");
    expect(await runCli(["queue", "get", "batch"], w.io)).toBe(0);
    expect(w.out.at(-1)).toContain("\n  fargate         -\n");
    expect(w.err).toEqual([]);
  });

  test("update of the provider alone keeps the quota", async () => {
    const w = world();
    expect(await runCli(["queue", "create", "batch", "--vcpu-quota", "8"], w.io)).toBe(0);
    expect(w.queues.get("batch")?.fargate).toEqual({ capacityProvider: "FARGATE", vcpuQuota: 8 });
    expect(await runCli(["queue", "update", "batch", "--capacity-provider", "FARGATE_SPOT"], w.io)).toBe(0);
    expect(w.queues.get("batch")?.fargate).toEqual({ capacityProvider: "FARGATE_SPOT", vcpuQuota: 8 });
  });

  test("a bad flag: exit 2 naming it, Cairn never contacted", async () => {
    const w = world();
    expect(
      await runCli(["queue", "create", "batch", "--capacity-provider", "EC2", "--vcpu-quota", "4"], w.io),
    ).toBe(2);
    expect(await runCli(["queue", "update", "batch", "--vcpu-quota", "0"], w.io)).toBe(2);
    expect(w.err).toEqual([
      'cairn: --capacity-provider must be FARGATE or FARGATE_SPOT, got "EC2"',
      "see `cairn queue create --help`",
      'cairn: --vcpu-quota must be a number of vCPUs greater than 0, got "0"',
      "see `cairn queue update --help`",
    ]);
    expect(w.opened()).toBe(0);
    expect(w.queues.size).toBe(0);
  });

  test("a queue without Fargate settings given only a provider: exit 2 asking for --vcpu-quota, nothing stored", async () => {
    const w = world();
    expect(await runCli(["queue", "create", "batch", "--capacity-provider", "FARGATE"], w.io)).toBe(2);
    expect(w.err).toEqual([
      "cairn: queue batch has no Fargate settings yet: give --vcpu-quota N (the vCPUs its Fargate kernels may hold at once)",
    ]);
    expect(w.queues.size).toBe(0);
    expect(await runCli(["queue", "create", "batch"], w.io)).toBe(0);
    expect(await runCli(["queue", "update", "batch", "--capacity-provider", "FARGATE_SPOT"], w.io)).toBe(2);
    expect(w.queues.get("batch")).not.toHaveProperty("fargate");
  });
});
