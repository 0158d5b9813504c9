/** `cairn agent`'s options: parsed and checked before anything starts. */
import { describe, expect, test } from "vitest";
import { parseCommandLine } from "../bin/cli/args.ts";
import { defaultAgentId } from "../bin/cli/commands/agent.ts";
import { DEFAULT_HEARTBEAT_MS } from "../agent/host.ts";

function agentOptions(argv: string[]) {
  const invocation = parseCommandLine(["agent", ...argv]);
  if (invocation.kind !== "agent") throw new Error(`parsed as ${invocation.kind}`);
  return invocation.agent;
}

describe("cairn agent options", () => {
  test("--help gives the heartbeat's default, 30 s, the one the agent uses when none is given", () => {
    const invocation = parseCommandLine(["agent", "--help"]);
    if (invocation.kind !== "help") throw new Error(`parsed as ${invocation.kind}`);
    const line = invocation.text.split("\n").find((l) => l.includes("--heartbeat-seconds"));
    expect(invocation.text.replace(/\s+/g, " ")).toContain(
      "how often it tells Cairn it is alive (default 30; the liveness window is 90 on AWS)",
    );
    expect(line).toBeDefined();
    expect(DEFAULT_HEARTBEAT_MS).toBe(30_000);
  });

  test("every option, with units converted", () => {
    expect(
      agentOptions([
        "--id",
        "gpu_7",
        "--cpu",
        "1.5",
        "--memory-mib",
        "2048",
        "--labels",
        "gpu=a100,zone=b",
        "--work-root",
        "/var/lib/cairn",
        "--heartbeat-seconds",
        "0.5",
        "--drain-grace-seconds",
        "30",
      ]),
    ).toEqual({
      id: "gpu_7",
      cpu: 1.5,
      memoryMiB: 2048,
      labels: { gpu: "a100", zone: "b" },
      workRoot: "/var/lib/cairn",
      heartbeatMs: 500,
      drainGraceMs: 30_000,
    });
    expect(agentOptions([])).toEqual({ labels: {} });
  });

  test.each([
    [
      ["--id", "host.example.com"],
      "--id must be 1 to 40 letters, digits, '-' or '_', starting with a letter or digit, got \"host.example.com\"",
    ],
    [["--cpu", "0"], '--cpu must be a number greater than 0, got "0"'],
    [["--memory-mib", "1.5"], '--memory-mib must be a whole number greater than 0, got "1.5"'],
    [["--labels", "gpu"], '--labels: "gpu" is not KEY=VALUE'],
    [["--labels", "a=1,a=2"], '--labels: "a" is given twice'],
    [
      ["--labels=-bad=1"],
      `--labels: ["-bad"]: label keys are 1 to 63 of letters, digits, '.', '_', '/', '-', starting with a letter or digit`,
    ],
  ])("%j is refused: %s", (argv, message) => {
    expect(() => agentOptions(argv)).toThrow(message);
  });

  test("the default id is the host name in the agent id alphabet", () => {
    expect(defaultAgentId("ip-10-0-1-23.eu-west-1.compute.internal")).toBe(
      "ip-10-0-1-23-eu-west-1-compute-internal",
    );
    expect(defaultAgentId("GPU-Box_2")).toBe("gpu-box_2");
    expect(defaultAgentId("a".repeat(60))).toBe("a".repeat(40));
    expect(defaultAgentId("...")).toBe("agent");
  });
});
