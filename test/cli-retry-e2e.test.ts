/**
 * Retry policies, queues and the retry configuration through the real `cairn` binary against a
 * real embedded runtime: each call is a child process that finds Cairn through the runtime file
 * alone. Checks what was stored through the CLI itself (list, get), so the round trip is the
 * user's.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runCairn, stdoutJson, type Run } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

/** Each call starts a Node process (about a second on a busy machine). */
const TEST_TIMEOUT_MS = 60_000;

let rt: TestRuntime;

function cairn(...args: string[]): Promise<Run> {
  return runCairn(rt.dataDir, args);
}

const json = stdoutJson;

function file(name: string, text: string): string {
  const path = join(rt.dataDir, name);
  writeFileSync(path, text);
  return path;
}

async function policyNames(): Promise<string[]> {
  const list = json(await cairn("retry-policy", "list", "-o", "json"));
  return (list["policies"] as { metadata: { name: string } }[]).map((p) => p.metadata.name);
}

const INFRA_POLICY = `
apiVersion: cairn.dev/v1
kind: RetryPolicy
metadata:
  name: infra
spec:
  retryLimit: 3
  backoff: { initialDelay: 1.5s, maxDelay: 1h30m, multiplier: 2 }
  antiAffinity: { mode: node }
  rules:
    - action: Retry
      containerName: "*"
      onConditions: [OOMKilled, Evicted]
    - action: Retry
      onExitCodes: { operator: In, values: [137, 143] }
      retryLimit: 1
    - action: Fail
      onExitCodes: { operator: NotIn, values: [1] }
    - action: Retry
      onTerminationMessage: { pattern: "CUDA (error|out of memory)" }
    - action: Retry
      onFailureCategory: [network]
`;

beforeAll(async () => {
  rt = await startTestRuntime();
});

afterAll(async () => {
  await rt?.stop();
});

describe("retry resources through the CLI", { timeout: TEST_TIMEOUT_MS }, () => {
  test("an invalid policy file is refused naming the field, and nothing is stored", async () => {
    const bad = file(
      "bad-policy.yaml",
      INFRA_POLICY.replace("name: infra", "name: broken").replace("values: [137, 143]", "values: [0, 137]"),
    );
    const run = await cairn("retry-policy", "create", "-f", bad);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(
      "spec.rules[1].onExitCodes.values[0]: exit code 0 never matches (it means success)",
    );
    expect(await policyNames()).not.toContain("broken");
  });

  test("policy: create, get as YAML, update from that YAML, list, delete", async () => {
    const created = await cairn("retry-policy", "create", file("infra.yaml", INFRA_POLICY));
    expect(created, created.stderr).toMatchObject({ code: 0, stdout: "created retry policy infra\n" });
    // Independent calls run two at a time: each is a Node process start.
    const [again, yaml] = await Promise.all([
      cairn("retry-policy", "create", "-f", file("infra.yaml", INFRA_POLICY)),
      cairn("retry-policy", "get", "infra", "-o", "yaml"),
    ]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("retry policy infra already exists");

    expect(yaml.code, yaml.stderr).toBe(0);
    expect(yaml.stdout).toContain("maxDelay: 1h30m");
    // What get prints is a document update accepts back.
    const edited = file("infra-edited.yaml", yaml.stdout.replace("retryLimit: 3", "retryLimit: 4"));
    const updated = await cairn("retry-policy", "update", "-f", edited);
    expect(updated, updated.stderr).toMatchObject({ code: 0, stdout: "updated retry policy infra\n" });
    const [text, list] = await Promise.all([
      cairn("retry-policy", "get", "infra"),
      cairn("retry-policy", "list", "-o", "json"),
    ]);
    expect(text.stdout).toMatch(/^retry policy infra\n {2}retryLimit +4\n/);
    const policies = json(list)["policies"] as { metadata: { name: string }; spec: { rules: unknown[] } }[];
    expect(policies.map((p) => p.metadata.name)).toEqual(["infra"]);
    expect(policies[0]?.spec).toMatchObject({ retryLimit: 4 });
    expect(policies[0]?.spec.rules).toHaveLength(5);
  });

  test("queue: unknown policies refused, create, get, update, list; an attached policy cannot be deleted", async () => {
    const unknown = await cairn("queue", "create", "gpu", "--retry-policy", "infra,ghost");
    expect(unknown).toMatchObject({ code: 2, stdout: "" });
    expect(unknown.stderr).toContain("unknown retry policy ghost");

    const created = await cairn(
      "queue",
      "create",
      "gpu",
      "--priority",
      "10",
      "--retry-policy",
      "infra",
      "-o",
      "json",
    );
    // Exit 0, not "already exists": the refused create stored nothing.
    expect(created.code, created.stderr).toBe(0);
    expect(json(created)).toMatchObject({ name: "gpu", priority: 10, retryPolicies: ["infra"] });

    const [inUse, update] = await Promise.all([
      cairn("retry-policy", "delete", "infra"),
      cairn("queue", "update", "gpu", "--priority=-3"),
    ]);
    expect(inUse.code).toBe(2);
    expect(inUse.stderr).toContain("retry policy infra is in use by gpu");
    expect(update.code, update.stderr).toBe(0);

    const [got, list] = await Promise.all([
      cairn("queue", "get", "gpu", "-o", "json"),
      cairn("queue", "list"),
    ]);
    expect(json(got)).toMatchObject({ priority: -3, retryPolicies: ["infra"] });
    expect(list.stdout).toMatch(/^NAME +PRIORITY +RETRY-POLICIES +UPDATED\ngpu +-3 +infra +/);

    expect((await cairn("queue", "delete", "gpu")).code).toBe(0);
    const deleted = await cairn("retry-policy", "delete", "infra");
    expect(deleted, deleted.stderr).toMatchObject({ code: 0, stdout: "deleted retry policy infra\n" });
    const [gone, names] = await Promise.all([cairn("retry-policy", "get", "infra"), policyNames()]);
    expect(gone).toMatchObject({ code: 3, stderr: "cairn: retry policy infra not found\n" });
    expect(names).toEqual([]);
  });

  test("retry-config: defaults, set keeps what is not given, invalid values store nothing", async () => {
    expect(json(await cairn("retry-config", "get", "-o", "json"))).toMatchObject({
      stored: false,
      enabled: true,
    });
    const set = await cairn(
      "retry-config",
      "set",
      "--global-max-retries",
      "5",
      "--default-backoff-initial",
      "10s",
    );
    expect(set.code, set.stderr).toBe(0);
    const bad = await cairn("retry-config", "set", "--default-backoff-max", "1s");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      "defaultBackoff.maxDelay (--default-backoff-max): must be at least initialDelay (10s)",
    );
    expect(json(await cairn("retry-config", "get", "-o", "json"))).toEqual({
      enabled: true,
      globalMaxRetries: 5,
      defaultPolicyName: "default",
      defaultBackoff: { initialDelay: "10s", maxDelay: "10m", multiplier: 2 },
      stored: true,
    });
  });
});
