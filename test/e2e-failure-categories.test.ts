/**
 * Failure categories that operators define, end to end: written with the real `cairn` binary
 * (as the runtime's operator), applied by the control plane where a real process's run ends, and
 * matched by a retry rule, as Armada's retry-policy proposal writes it:
 *   "- action: Retry
 *      onFailureCategory: [cuda_error, infiniband_error]"
 * The run's record shows the category (`cairn get`, `cairn history`); a client — the stack's
 * ClientPolicy, enforced by the runtime's DynamoDB endpoint — reads categories and cannot write one.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sessionResult } from "../functions/core/sessions.ts";
import { startDashboard } from "../dashboard/server.ts";
import { runtimeDashboardDeps } from "../local/dashboard.ts";
import { runCairn, stdoutJson, type Run } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
/** A copy of the runtime file without the operator's credentials: the CLI acts as a client. */
let clientDir: string;

const cairn = (...args: string[]): Promise<Run> => runCairn(rt.dataDir, args);
const asClient = (...args: string[]): Promise<Run> => runCairn(clientDir, args);

function file(name: string, text: string): string {
  const path = join(rt.dataDir, name);
  writeFileSync(path, text);
  return path;
}

const CUDA = `
apiVersion: cairn.dev/v1
kind: FailureCategory
metadata: { name: cuda_error }
spec:
  rules:
    - onTerminationMessage: { pattern: "(?i)cuda error" }
`;

const GPU_POLICY = `
apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata: { name: gpu }
spec:
  retryLimit: 2
  rules:
    - action: Retry
      onFailureCategory: [cuda_error, infiniband_error]
`;

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 1, retryCacheMs: 200 });
  clientDir = join(rt.dataDir, "as-client");
  mkdirSync(clientDir);
  const info = JSON.parse(readFileSync(join(rt.dataDir, "runtime.json"), "utf8")) as {
    credentials: Record<string, unknown>;
  };
  const { operator: _operator, ...client } = info.credentials;
  writeFileSync(join(clientDir, "runtime.json"), JSON.stringify({ ...info, credentials: client }));
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

describe("failure categories operators define", { timeout: 120_000 }, () => {
  test("an invalid category is refused naming the field; nothing is stored", async () => {
    const bad = file("bad.yaml", CUDA.replace("(?i)cuda error", "(cuda"));
    const run = await cairn("failure-category", "create", "-f", bad);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      "spec.rules[0].onTerminationMessage.pattern: is not a valid RE2 regular expression: missing closing ): `(cuda`",
    );
    expect((await cairn("failure-category", "list")).stdout).toContain("no failure categories");
  });

  test("a client may read categories but not write or delete one", async () => {
    const created = await cairn("failure-category", "create", "-f", file("cuda.yaml", CUDA));
    expect(created, created.stderr).toMatchObject({
      code: 0,
      stdout: "created failure category cuda_error\n",
    });

    const write = await asClient(
      "failure-category",
      "create",
      "-f",
      file("sneaky.yaml", CUDA.replace("cuda_error", "sneaky")),
    );
    expect(write.code).not.toBe(0);
    expect(write.stderr).toMatch(/AccessDenied|not authorized|access denied/i);
    const update = await asClient(
      "failure-category",
      "update",
      "-f",
      file("cuda-any.yaml", CUDA.replace("(?i)cuda error", ".")),
    );
    expect(update.code).not.toBe(0);
    const deleted = await asClient("failure-category", "delete", "cuda_error");
    expect(deleted.code).not.toBe(0);

    const read = await asClient("failure-category", "get", "cuda_error", "-o", "json");
    expect(read.code, read.stderr).toBe(0);
    expect(stdoutJson(read)).toMatchObject({ metadata: { name: "cuda_error" } });
    const list = stdoutJson(await cairn("failure-category", "list", "-o", "json"));
    expect((list["categories"] as { metadata: { name: string } }[]).map((c) => c.metadata.name)).toEqual([
      "cuda_error",
    ]);
    const yaml = await cairn("failure-category", "get", "cuda_error", "-o", "yaml");
    expect(yaml.stdout).toContain("pattern: (?i)cuda error");
  });

  test("a run that fails with a CUDA error is classified cuda_error where it ends, and the rule on it retries it", async () => {
    const policy = await cairn("retry-policy", "create", "-f", file("gpu.yaml", GPU_POLICY));
    expect(policy.code, policy.stderr).toBe(0);
    const id = `cat-cuda-${Date.now().toString(36)}`;
    await rt.submit({
      sessionId: id,
      spec: {
        name: "cuda",
        command: [
          "/bin/sh",
          "-c",
          'if [ "$CAIRN_RUN_INDEX" = "0" ]; then echo "RuntimeError: CUDA error: an illegal memory access" > "$CAIRN_TERMINATION_LOG"; exit 1; fi; echo ok',
        ],
        retry: { policies: ["gpu"] },
      },
    });
    const ended = await rt.waitForEnd(id, 90_000);
    expect(sessionResult(ended)).toBe("succeeded");

    const got = stdoutJson(await cairn("get", id, "-o", "json"));
    const runs = got["runs"] as {
      decision: string;
      reason: string;
      kernels: { failureCategory: string | null }[];
    }[];
    expect(runs[0]).toMatchObject({ decision: "retry", kernels: [{ failureCategory: "cuda_error" }] });
    expect(runs[0]?.reason).toMatch(/^gpu rule 0 \(Retry\) matched kernel 0 \(failure category cuda_error\)/);
    const history = await cairn("history", id);
    expect(history.stdout).toContain("[cuda_error]");

    // npm start's dashboard, reading with the client's credentials: the category on the queues
    // page, and on the job's attempts table and the session's runs table.
    const dashboard = runtimeDashboardDeps(rt.runtime.info, "the test's runtime");
    const server = await startDashboard(dashboard.deps);
    try {
      const page = async (path: string) => (await fetch(new URL(path, server.url))).text();
      expect(await page("/queues")).toContain('<tr data-category="cuda_error">');
      expect(await page(`/jobs/${id}`)).toMatch(/<tr data-attempt="0\/0">[\s\S]*?<td>cuda_error<\/td>/);
      expect(await page(`/sessions/${id}`)).toContain("[cuda_error]");
    } finally {
      await server.close();
      dashboard.close();
    }
  });

  test("a failure no category matches keeps the agent's built-in category, and is not retried", async () => {
    const id = `cat-plain-${Date.now().toString(36)}`;
    await rt.submit({
      sessionId: id,
      spec: {
        name: "plain",
        command: ["/bin/sh", "-c", 'echo "ValueError: bad input" > "$CAIRN_TERMINATION_LOG"; exit 1'],
        retry: { policies: ["gpu"] },
      },
    });
    const ended = await rt.waitForEnd(id, 90_000);
    expect(sessionResult(ended)).toBe("failed");
    const got = stdoutJson(await cairn("get", id, "-o", "json"));
    expect(got["runs"]).toMatchObject([
      { decision: "finished", kernels: [{ failureCategory: "user_error" }] },
    ]);
  });
});
