/**
 * Drafts end to end (HPC Pack's Configuring) through the real `cairn` binary
 * against the embedded runtime with two agents: a draft is created, edited, shown Configuring with
 * no sessions, submitted under its id and runs to completion (HPC Finished), after which it is no
 * draft any more; a stale edit, an edit of a submitted job and a delete of one are refused with the
 * field named; a submission refused without a job (an unknown queue) leaves the draft a draft; a
 * draft is deleted.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runCairn, stdoutJson, type Run } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

const TEST_TIMEOUT_MS = 90_000;

let rt: TestRuntime;

function cairn(...args: string[]): Promise<Run> {
  return runCairn(rt.dataDir, args);
}

function spec(name: string, text: string): string {
  const path = join(rt.dataDir, `${name}.yaml`);
  writeFileSync(path, text);
  return path;
}

const SPEC = (word: string) =>
  [
    "name: staged",
    "replicas: 2",
    "coscheduled: false",
    "resources: { cpu: 0.25, memoryMiB: 64 }",
    "command:",
    "  - /bin/sh",
    "  - -c",
    `  - echo "${word} from task $CAIRN_TASK_INDEX"`,
  ].join("\n");

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 2 });
});

afterAll(async () => {
  await rt?.stop();
});

describe("drafts through the CLI", { timeout: TEST_TIMEOUT_MS }, () => {
  test("a draft created, edited, shown Configuring, submitted and run to Finished", async () => {
    const created = await cairn("job", "create", "-f", spec("first", SPEC("first")), "--id", "dr-one");
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout.trim()).toBe("dr-one");
    expect(created.stderr).toContain("draft dr-one stored (Configuring)");

    // Not queued: no sessions, no executions.
    expect(await rt.store.getJob("dr-one")).toBeUndefined();
    expect(await rt.store.getSessions(["dr-one-t0", "dr-one-t1"])).toEqual([]);

    const edited = await cairn("job", "edit", "dr-one", "-f", spec("second", SPEC("second")));
    expect(edited.code, edited.stderr).toBe(0);
    expect(edited.stderr).toContain("draft dr-one is now version 2");

    const shown = await cairn("job", "get", "dr-one", "-o", "json");
    expect(shown.code, shown.stderr).toBe(0);
    expect(stdoutJson(shown)).toMatchObject({
      jobId: "dr-one",
      draft: true,
      hpcState: "Configuring",
      version: 2,
      spec: { command: ["/bin/sh", "-c", 'echo "second from task $CAIRN_TASK_INDEX"'] },
    });
    const text = await cairn("job", "get", "dr-one");
    expect(text.stdout).toContain("  hpc       Configuring (HPC Pack's state)\n");

    const submitted = await cairn("job", "submit", "dr-one", "--wait", "--stream-logs");
    expect(submitted.code, submitted.stderr).toBe(0);
    // The edited spec ran, under the draft's id.
    for (const i of [0, 1]) expect(submitted.stdout).toContain(`[task ${i}] second from task ${i}\n`);
    expect(submitted.stdout).not.toContain("first from task");
    expect(submitted.stdout).toContain("job dr-one (staged)\n");

    const job = stdoutJson(await cairn("job", "get", "dr-one", "-o", "json"));
    expect(job).toMatchObject({ jobId: "dr-one", state: "SUCCEEDED", hpcState: "Finished", final: true });
    expect(job["draft"]).toBeUndefined();
    // Once its job exists the draft is gone: it cannot be edited, submitted again or deleted.
    expect(await rt.store.getDraft("dr-one")).toBeUndefined();
    const late = await cairn("job", "edit", "dr-one", "-f", spec("third", SPEC("third")));
    expect(late.code).toBe(2);
    expect(late.stderr).toContain("cairn: job dr-one is not a draft: it was submitted");
    const deleteJob = await cairn("job", "delete", "dr-one");
    expect(deleteJob.code).toBe(2);
    expect(deleteJob.stderr).toContain("cairn: job dr-one is not a draft: it was submitted");
  });

  test("a draft naming a job template is validated against it when submitted: its defaults fill what the draft left unset", async () => {
    const template = spec(
      "tpl",
      [
        "name: draft-tpl",
        "defaults:",
        "  env: { FROM_TEMPLATE: filled }",
        "  resources: { cpu: 0.25 }",
        "constraints: {}",
      ].join("\n"),
    );
    const made = await cairn("template", "create", template);
    expect(made.code, made.stderr).toBe(0);
    const file = spec(
      "templated",
      [
        "name: templated",
        "template: draft-tpl",
        "resources: { memoryMiB: 64 }",
        "command: [/bin/sh, -c, 'echo \"env says $FROM_TEMPLATE\"']",
      ].join("\n"),
    );
    expect((await cairn("job", "create", file, "--id", "dr-tpl")).code).toBe(0);
    const run = await cairn("job", "submit", "dr-tpl", "--wait", "--stream-logs");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("env says filled\n");
    const job = await rt.store.getJob("dr-tpl");
    expect(job?.spec.env).toEqual({ FROM_TEMPLATE: "filled" });
    // The draft left cpu unset (its spec default is 1): the template's default filled it.
    expect(job?.spec.resources).toEqual({ cpu: 0.25, memoryMiB: 64 });
  });

  test("the control plane refuses a stale edit and a create under a taken id, naming the field; a draft is deleted", async () => {
    const file = spec("other", SPEC("other"));
    expect((await cairn("job", "create", file, "--id", "dr-two")).code).toBe(0);
    // A second create under the id: the control plane's verdict on that very event.
    const again = await cairn("job", "create", spec("again", SPEC("again")), "--id", "dr-two");
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(
      "cairn: creation of draft dr-two was refused: detail.jobId: draft dr-two exists already (version 1); change it with `cairn job edit dr-two`",
    );
    // An edit made from version 1 after another edit moved the draft on: only one edit wins.
    const stale = await rt.store.getDraft("dr-two");
    expect(stale?.version).toBe(1);
    expect((await cairn("job", "edit", "dr-two", file)).code).toBe(0);
    await rt.put({
      Source: "cairn.client",
      DetailType: "Job Draft Saved",
      Detail: JSON.stringify({
        jobId: "dr-two",
        spec: { name: "staged", command: ["/bin/true"] },
        expectedVersion: 1,
      }),
    });
    const rejected = await waitFor(async () =>
      (await rt.store.listRejections("dr-two")).find((r) => r.reason.startsWith("detail.expectedVersion")),
    );
    expect(rejected.reason).toBe(
      "detail.expectedVersion: draft dr-two is at version 2, not 1: it was changed meanwhile (read it again with `cairn job get dr-two`)",
    );
    expect((await rt.store.getDraft("dr-two"))?.spec.command).toEqual([
      "/bin/sh",
      "-c",
      'echo "other from task $CAIRN_TASK_INDEX"',
    ]);

    // A submission refused without a job (an unknown queue) leaves it a draft, to be fixed.
    const noQueue = spec("noqueue", `${SPEC("other")}\nqueue: no-such-queue`);
    expect((await cairn("job", "edit", "dr-two", noQueue)).code).toBe(0);
    const rejections: { detailType?: string; reason?: string }[] = [];
    rt.runtime.bus.onEvent((e) => {
      if (e["detail-type"] === "Event Rejected") rejections.push(e.detail as { detailType?: string });
    });
    const refused = await cairn("job", "submit", "dr-two");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('detail.spec.queue: no queue named "no-such-queue"');
    // Refused as the event the client sent (a draft's submission), not the one it became.
    const sent = await waitFor(async () =>
      Promise.resolve(rejections.find((r) => r.reason?.includes("no-such-queue"))),
    );
    expect(sent.detailType).toBe("Job Draft Submitted");
    expect(await rt.store.getJob("dr-two")).toBeUndefined();
    const kept = await waitFor(async () => {
      const d = await rt.store.getDraft("dr-two");
      return d?.submitting === undefined ? d : undefined;
    });
    expect(kept).toMatchObject({ version: 5, spec: { queue: "no-such-queue" } });

    const deleted = await cairn("job", "delete", "dr-two");
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout.trim()).toBe("deleted draft dr-two");
    expect(await rt.store.getDraft("dr-two")).toBeUndefined();
    expect((await cairn("job", "get", "dr-two")).code).toBe(3);
  });
});

async function waitFor<T>(read: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
