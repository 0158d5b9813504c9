/**
 * `cairn template create|get|list|update|delete` against DynamoDB Local, and
 * `cairn submit` sending the spec as written so a template's defaults apply to what it leaves unset.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { CairnApi } from "../bin/cli/cairn-api.ts";
import { runCli } from "../bin/cli/main.ts";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { TemplateItems } from "../functions/adapters/dynamo/template-items.ts";
import type { PutEventsEntry } from "../functions/core/events.ts";
import { fakeCliIo } from "./support/cli-helpers.ts";
import { freshTable, T0, type TestTable } from "./store-fixtures.ts";

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
};

const SMALL_YAML = `name: small
defaults: { resources: { cpu: 1 }, timeouts: { running: 600 } }
constraints:
  resources.cpu: { max: 2 }
  timeouts.running: { max: 3600 }
  queue: { allowed: [default, batch] }
`;

let table: TestTable;
let templates: TemplateItems;

beforeAll(async () => {
  table = await freshTable("cairn-cli-templates");
  templates = new TemplateItems(new DynamoRequests(table.client, table.tableName, undefined));
});
afterAll(() => table.drop());

function world(files: Record<string, string> = {}) {
  const puts: PutEventsEntry[] = [];
  const api = {
    store: { getJob: () => Promise.resolve(undefined), getSession: () => Promise.resolve(undefined) },
    admin: {},
    templates,
    agents: {},
    census: {},
    eventBusName: "cairn",
    logs: { readable: false, why: "none here" },
    put: (entry: PutEventsEntry) => {
      puts.push(entry);
      return Promise.resolve(undefined);
    },
    close: () => {},
  } as unknown as CairnApi;
  const { io, out, err } = fakeCliIo(
    { "/work/.cairn/runtime.json": JSON.stringify(RUNTIME_FILE), ...files },
    {
      nowMs: () => T0,
      sleep: () => Promise.resolve(),
      openApi: () => Promise.resolve(api),
      stackOutputs: () => Promise.reject(new Error("unexpected")),
    },
  );
  return { io, out, err, puts };
}

describe("cairn template", () => {
  test("create -f stores the template; get shows it as the document create accepts", async () => {
    const w = world({ "/work/small.yaml": SMALL_YAML });
    expect(await runCli(["template", "create", "-f", "small.yaml"], w.io)).toBe(0);
    expect(w.out).toEqual(["created job template small"]);
    const g = world();
    expect(await runCli(["template", "get", "small"], g.io)).toBe(0);
    expect(g.out.join("\n")).toBe(
      [
        "name: small",
        "defaults:",
        "  resources:",
        "    cpu: 1",
        "  timeouts:",
        "    running: 600",
        "constraints:",
        "  queue:",
        "    allowed:",
        "      - default",
        "      - batch",
        "  resources.cpu:",
        "    max: 2",
        "  timeouts.running:",
        "    max: 3600",
      ].join("\n"),
    );
    const j = world();
    expect(await runCli(["template", "get", "small", "-o", "json"], j.io)).toBe(0);
    expect(JSON.parse(j.out.join("\n"))).toMatchObject({
      name: "small",
      defaults: { resources: { cpu: 1 } },
    });
  });

  test("create of a name taken: exit 2, pointing at update", async () => {
    const w = world({ "/work/small.yaml": SMALL_YAML });
    expect(await runCli(["template", "create", "small.yaml"], w.io)).toBe(2);
    expect(w.err).toEqual([
      "cairn: job template small already exists (change it with `cairn template update`)",
    ]);
  });

  test("an invalid file: every problem named, nothing stored, Cairn never contacted", async () => {
    const w = world({
      "/work/bad.yaml": "name: bad\nconstraints:\n  queue: { max: 1 }\n  resources.gpu: { min: 1 }\n",
    });
    expect(await runCli(["template", "create", "-f", "bad.yaml"], w.io)).toBe(2);
    expect(w.err[0]).toBe(
      "cairn: invalid job template bad.yaml (2 problems):\n" +
        "  constraints.queue.max: applies only to numeric fields (queue is a string)\n" +
        '  constraints["resources.gpu"]: unknown field path (expected one of name, queue, priority, replicas, coscheduled, perAgent, maxTaskFailures, maxPendingReturns, rerunnable, schedulingTimeout, parent, executor, image, resources.cpu, resources.memoryMiB, timeouts.pending, timeouts.scheduled, timeouts.preparing, timeouts.prepared, timeouts.creating, timeouts.running, timeouts.terminating, timeouts.job, maxTries.pending, maxTries.scheduled, maxTries.preparing, maxTries.prepared, maxTries.creating, maxTries.running, maxTries.terminating, retry.maxRetriesFailure, retry.maxRetriesPreemption, retry.maxRetriesStart)',
    );
    expect(await templates.getTemplate("bad")).toBeUndefined();
  });

  test("list shows every template, Default among them", async () => {
    const w = world();
    expect(await runCli(["template", "list"], w.io)).toBe(0);
    expect(w.out.join("\n")).toBe(
      [
        "NAME     DEFAULTS                               CONSTRAINTS",
        "Default  -                                      -",
        "small    resources.cpu=1, timeouts.running=600  queue in [default batch], resources.cpu <=2, timeouts.running <=3600",
      ].join("\n"),
    );
  });

  test("update replaces a template, Default included; an absent one is not found (exit 3)", async () => {
    const w = world({
      "/work/small.yaml": SMALL_YAML.replace("{ max: 2 }", "{ max: 4 }"),
      "/work/default.yaml": "name: Default\nconstraints:\n  replicas: { max: 8 }\n",
      "/work/gone.yaml": "name: gone\n",
    });
    expect(await runCli(["template", "update", "-f", "small.yaml"], w.io)).toBe(0);
    expect((await templates.getTemplate("small"))?.constraints["resources.cpu"]).toEqual({ max: 4 });
    expect(await runCli(["template", "update", "-f", "default.yaml"], w.io)).toBe(0);
    expect((await templates.getTemplate("Default"))?.constraints).toEqual({ replicas: { max: 8 } });
    expect(await runCli(["template", "update", "-f", "gone.yaml"], w.io)).toBe(3);
    expect(w.out).toEqual(["updated job template small", "updated job template Default"]);
    expect(w.err).toEqual(["cairn: job template gone not found"]);
  });

  test("delete removes a template; Default cannot be deleted (exit 2)", async () => {
    const w = world();
    expect(await runCli(["template", "delete", "small"], w.io)).toBe(0);
    expect(await runCli(["template", "delete", "Default"], w.io)).toBe(2);
    expect(w.out).toEqual(["deleted job template small"]);
    expect(w.err).toEqual([
      "cairn: job template Default cannot be deleted: it always exists (change it with `cairn template update`)",
    ]);
  });
});

describe("cairn submit with a template", () => {
  test("sends the spec as written, so the template's defaults apply to what it leaves unset", async () => {
    const w = world({ "/work/job.yaml": "name: train\ntemplate: small\ncommand: [/bin/true]\n" });
    expect(await runCli(["submit", "-f", "job.yaml", "--id", "train-1"], w.io)).toBe(0);
    expect(JSON.parse(w.puts[0]!.Detail)).toEqual({
      sessionId: "train-1",
      spec: { name: "train", template: "small", command: ["/bin/true"] },
    });
  });
});
