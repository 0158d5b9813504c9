/**
 * The deployment and route state machines against the core's tables: the
 * status graph derived from each ASL equals, edge by edge, the graph of the seed's handler rows
 * plus the separate triggers (destroy request, route removal); every waiting status has one
 * callback state, no expiry (the seed gives these families none: a callback state that waits a day
 * is entered again in the same status), and a renewal path that
 * continues the same entity in a new execution before the history limit. Then the deployment
 * machine is run on the embedded Step Functions engine through a renewal.
 */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import {
  DEPLOYMENT_HANDLERS,
  DESTROYABLE_STATUSES,
  ON_DESTROY,
  ON_REMOVE,
  RECORDED_DEPLOYMENT_STATUSES,
  REMOVABLE_ROUTE_STATUSES,
  ROUTE_HANDLERS,
  ROUTE_STATUSES,
  TERMINAL_DEPLOYMENT_STATUSES,
  TERMINAL_ROUTE_STATUSES,
} from "../functions/core/deployments/tables.ts";
import {
  DEPLOYMENT_FIRST_EDGE,
  ROUTE_FIRST_EDGE,
  WAIT_AGAIN_AFTER_SECONDS,
} from "../functions/core/deployments/pass.ts";
import { LocalStepFunctions, type JsonValue } from "../local/stepfunctions/index.ts";

interface AslState {
  Type: string;
  Resource?: string;
  Parameters?: Record<string, unknown> & { Payload?: Record<string, unknown> };
  Catch?: { ErrorEquals: string[]; Next: string; ResultPath?: string }[];
  Choices?: { Variable?: string; StringEquals?: string; Next: string }[];
  Default?: string;
  TimeoutSeconds?: number;
  TimeoutSecondsPath?: string;
  Next?: string;
  End?: boolean;
}
interface Asl {
  StartAt: string;
  States: Record<string, AslState>;
}

const CALLBACK = "arn:aws:states:::lambda:invoke.waitForTaskToken";

function load(file: string): Asl {
  return JSON.parse(readFileSync(`statemachines/${file}`, "utf8")) as Asl;
}

interface Family {
  readonly file: string;
  readonly statuses: readonly string[];
  readonly terminal: ReadonlySet<string>;
  /** Edges the core allows: each handler row's SUCCESS / FAILURE / STALE, and the separate trigger. */
  readonly coreEdges: () => Set<string>;
  /** The status the coordinator's SendTaskSuccess leads to, by status (core/deployments/pass.ts). */
  readonly firstEdge: Readonly<Partial<Record<string, string>>>;
}

function edgesOf(
  rows: readonly { targetStatuses: readonly string[]; to: readonly (string | undefined)[] }[],
) {
  const edges = new Set<string>();
  for (const row of rows)
    for (const from of row.targetStatuses)
      for (const to of row.to) if (to !== undefined && to !== from) edges.add(`${from}->${to}`);
  return edges;
}

const FAMILIES: Family[] = [
  {
    file: "deployment-lifecycle.asl.json",
    statuses: RECORDED_DEPLOYMENT_STATUSES,
    terminal: TERMINAL_DEPLOYMENT_STATUSES,
    coreEdges: () => {
      const recorded = (s: string) => RECORDED_DEPLOYMENT_STATUSES.includes(s as never);
      const edges = edgesOf(
        Object.values(DEPLOYMENT_HANDLERS).map((h) => ({
          // CREATED (deprecated) is never recorded: its row's edge cannot be taken.
          targetStatuses: h.targetStatuses.filter(recorded),
          to: [h.success, h.failure],
        })),
      );
      for (const from of DESTROYABLE_STATUSES) edges.add(`${from}->${ON_DESTROY}`);
      return edges;
    },
    firstEdge: DEPLOYMENT_FIRST_EDGE,
  },
  {
    file: "route-lifecycle.asl.json",
    statuses: ROUTE_STATUSES,
    terminal: TERMINAL_ROUTE_STATUSES,
    coreEdges: () => {
      const edges = edgesOf(
        Object.values(ROUTE_HANDLERS).map((h) => ({
          targetStatuses: h.targetStatuses,
          to: [h.success, h.failure, h.stale],
        })),
      );
      for (const from of REMOVABLE_ROUTE_STATUSES) edges.add(`${from}->${ON_REMOVE}`);
      return edges;
    },
    firstEdge: ROUTE_FIRST_EDGE,
  },
];

describe.each(FAMILIES)("$file against the core's tables", (family) => {
  const asl = load(family.file);
  const state = (name: string): AslState => {
    const s = asl.States[name];
    if (!s) throw new Error(`state ${name} is referenced but not defined`);
    return s;
  };
  const statusOf = (name: string) => state(name).Parameters?.Payload?.["status"] as string | undefined;
  const isRecorder = (name: string) => state(name).Parameters?.Payload?.["failure.$"] !== undefined;
  const homeOf = (status: string): string => {
    const found = Object.keys(asl.States).filter(
      (n) =>
        statusOf(n) === status &&
        !isRecorder(n) &&
        (family.terminal.has(status) || state(n).Resource === CALLBACK),
    );
    expect(found, `exactly one callback or terminal state records ${status}`).toHaveLength(1);
    return found[0]!;
  };
  const waiting = family.statuses.filter((s) => !family.terminal.has(s));

  test("each waiting state's Next is the core's first edge (what SendTaskSuccess means there)", () => {
    const fromAsl = Object.fromEntries(
      waiting.map((status) => [status, statusOf(state(homeOf(status)).Next!)]),
    );
    expect(fromAsl).toEqual(family.firstEdge);
  });

  test("every status Cairn records has exactly one state; terminal ones end the execution", () => {
    for (const status of family.statuses) homeOf(status);
    for (const status of family.terminal) expect(state(homeOf(status)).End).toBe(true);
  });

  test("the status edges of the ASL are exactly the core's", () => {
    const edges = new Set<string>();
    for (const status of waiting) {
      const home = state(homeOf(status));
      edges.add(`${status}->${statusOf(home.Next!)}`);
      for (const catcher of home.Catch ?? []) {
        const routed = catcher.ErrorEquals.find((e) => e.startsWith("Cairn.To."));
        if (routed === undefined) continue;
        expect(catcher.ErrorEquals).toHaveLength(1);
        const reader = state(catcher.Next);
        expect(reader.Type).toBe("Pass");
        expect(reader.Parameters).toMatchObject({
          "transition.$": `States.StringToJson(${catcher.ResultPath}.Cause)`,
        });
        const to = routed.slice("Cairn.To.".length);
        expect(statusOf(reader.Next!), `${catcher.Next} leads to a state that records ${to}`).toBe(to);
        edges.add(`${status}->${to}`);
      }
    }
    expect([...edges].sort()).toEqual([...family.coreEdges()].sort());
  });

  test("no expiry, as the seed says: a callback state that waits a day is entered again in the same status", () => {
    for (const status of waiting) {
      const home = homeOf(status);
      const s = state(home);
      expect(s.TimeoutSeconds, `${home} waits at most WAIT_AGAIN_AFTER_SECONDS`).toBe(
        WAIT_AGAIN_AFTER_SECONDS,
      );
      expect(s.TimeoutSecondsPath, home).toBeUndefined();
      // Caught first, ahead of the catch-all that would record a failure.
      const [first] = s.Catch ?? [];
      expect(first?.ErrorEquals, `${home} catches States.Timeout first`).toEqual(["States.Timeout"]);
      const again = state(first!.Next);
      expect(again.Type).toBe("Pass");
      expect(again.Parameters).toMatchObject({
        transition: { from: status, to: status, result: "SUCCESS", handler: "Lifecycle" },
      });
      expect(again.Next, `${first!.Next} leads back to ${home}`).toBe(home);
    }
    // No other state has a timer: the only timeouts are the waits above.
    const timed = Object.entries(asl.States).filter(
      ([, s]) => s.TimeoutSeconds !== undefined || s.TimeoutSecondsPath !== undefined,
    );
    expect(timed.map(([name]) => name).sort()).toEqual(waiting.map(homeOf).sort());
  });

  test("the failure recorder catches its own failure, and the execution fails either way", () => {
    const recorders = Object.keys(asl.States).filter(isRecorder);
    expect(recorders).toEqual(["RecordFailure"]);
    const recorder = state("RecordFailure");
    expect(state(recorder.Next!).Type).toBe("Fail");
    expect(recorder.Catch).toEqual([
      { ErrorEquals: ["States.ALL"], ResultPath: "$.recordError", Next: recorder.Next },
    ]);
  });

  test("every waiting state can be renewed, and a renewed execution resumes in each of them", () => {
    for (const status of waiting) {
      const renew = state(homeOf(status)).Catch?.find((c) => c.ErrorEquals.includes("Cairn.Renew"));
      expect(renew?.Next, `${status} catches Cairn.Renew`).toBe("RenewRead");
    }
    expect(state("RenewRead").Next).toBe("Renew");
    const start = state("Renew");
    expect(start.Resource).toBe("arn:aws:states:::states:startExecution");
    expect(start.Parameters).toMatchObject({
      "StateMachineArn.$": "$$.StateMachine.Id",
      Input: { "resume.$": "$.transition.to" },
    });
    const resume = state(asl.StartAt);
    expect(resume.Type).toBe("Choice");
    for (const status of waiting) {
      const choice = resume.Choices?.find((c) => c.StringEquals === status);
      expect(choice?.Next, `Resume goes to ${status}'s state`).toBe(homeOf(status));
    }
    expect(resume.Default).toBe("Created");
    expect(statusOf(state("Created").Next!)).toBe(waiting[0]);
  });

  test("every state is reachable from StartAt", () => {
    const seen = new Set<string>();
    const visit = (name: string) => {
      if (seen.has(name)) return;
      seen.add(name);
      const s = state(name);
      for (const next of [
        s.Next,
        s.Default,
        ...(s.Choices ?? []).map((c) => c.Next),
        ...(s.Catch ?? []).map((c) => c.Next),
      ])
        if (next !== undefined) visit(next);
    };
    visit(asl.StartAt);
    expect([...seen].sort()).toEqual(Object.keys(asl.States).sort());
  });
});

describe("deployment-lifecycle.asl.json on the embedded Step Functions engine", () => {
  test("PENDING → SCALING → READY, renewed into <id>-g2 resuming in SCALING, then destroyed", async () => {
    const entries: { status: string; execution: string; token?: string }[] = [];
    const service: LocalStepFunctions = new LocalStepFunctions(
      {
        "enter-deployment": (payload) => {
          const p = payload as { status: string; executionName: string; taskToken?: string };
          entries.push({
            status: p.status,
            execution: p.executionName,
            ...(p.taskToken ? { token: p.taskToken } : {}),
          });
          return { status: p.status };
        },
      },
      {
        integrations: {
          // What AWS's request-response StartExecution integration does: start, answer at once.
          "states:startExecution": async (parameters: JsonValue) => {
            const p = parameters as { StateMachineArn: string; Name: string; Input: JsonValue };
            const started = await service.startExecution({
              stateMachineArn: p.StateMachineArn,
              name: p.Name,
              input: JSON.stringify(p.Input),
            });
            return { ExecutionArn: started.executionArn, StartDate: started.startDate?.toISOString() };
          },
        },
      },
    );
    const definition = readFileSync("statemachines/deployment-lifecycle.asl.json", "utf8").replaceAll(
      "${EnterDeploymentStageFunctionArn}",
      "arn:aws:lambda:local:000000000000:function:enter-deployment",
    );
    const { stateMachineArn } = await service.createStateMachine({ name: "deployments", definition });
    const waitFor = async (status: string, execution: string) => {
      for (let i = 0; i < 500; i++) {
        const found = entries.find((e) => e.status === status && e.execution === execution && e.token);
        if (found) return found.token!;
        await new Promise((r) => setTimeout(r, 5));
      }
      throw new Error(`no ${status} entry in ${execution}: ${JSON.stringify(entries)}`);
    };
    const transition = (from: string, to: string) =>
      JSON.stringify({ from, to, result: "SUCCESS", handler: "Test" });
    try {
      const first = await service.startExecution({
        stateMachineArn,
        name: "svc-1",
        input: JSON.stringify({ deploymentId: "svc-1", generation: 1 }),
      });
      await service.sendTaskSuccess({
        taskToken: await waitFor("PENDING", "svc-1"),
        output: transition("PENDING", "SCALING"),
      });
      await service.sendTaskSuccess({
        taskToken: await waitFor("SCALING", "svc-1"),
        output: transition("SCALING", "READY"),
      });
      // The coordinator renews: the deployment goes on in a new execution, in SCALING.
      await service.sendTaskFailure({
        taskToken: await waitFor("READY", "svc-1"),
        error: "Cairn.Renew",
        cause: transition("READY", "SCALING"),
      });
      const renewed = await waitFor("SCALING", "svc-1-g2");
      expect((await service.describeExecution({ executionArn: first.executionArn })).status).toBe(
        "SUCCEEDED",
      );
      await service.sendTaskSuccess({ taskToken: renewed, output: transition("SCALING", "READY") });
      await service.sendTaskFailure({
        taskToken: await waitFor("READY", "svc-1-g2"),
        error: "Cairn.To.DESTROYING",
        cause: transition("READY", "DESTROYING"),
      });
      await service.sendTaskSuccess({
        taskToken: await waitFor("DESTROYING", "svc-1-g2"),
        output: transition("DESTROYING", "DESTROYED"),
      });
      for (let i = 0; i < 500 && !entries.some((e) => e.status === "DESTROYED"); i++)
        await new Promise((r) => setTimeout(r, 5));
      expect(entries.map((e) => `${e.execution}:${e.status}`)).toEqual([
        "svc-1:PENDING",
        "svc-1:SCALING",
        "svc-1:READY",
        "svc-1-g2:SCALING",
        "svc-1-g2:READY",
        "svc-1-g2:DESTROYING",
        "svc-1-g2:DESTROYED",
      ]);
    } finally {
      await service.close();
    }
  });
});

describe("route-lifecycle.asl.json's wait bound on the embedded Step Functions engine", () => {
  test("HEALTHY without a callback is entered again with a new token; the first token is closed", async () => {
    const entries: { status: string; token?: string; transition: unknown }[] = [];
    const service = new LocalStepFunctions(
      {
        "enter-route": (payload) => {
          const p = payload as { status: string; taskToken?: string; transition: unknown };
          entries.push({
            status: p.status,
            transition: p.transition,
            ...(p.taskToken ? { token: p.taskToken } : {}),
          });
          return { status: p.status };
        },
      },
      {
        integrations: {
          // Renew is not reached here.
          "states:startExecution": () => {
            throw new Error("not expected");
          },
        },
      },
    );
    // The day is a second here: the states, catchers and routes are the file's own.
    const text = readFileSync("statemachines/route-lifecycle.asl.json", "utf8");
    const definition = text
      .replaceAll("${EnterRouteStageFunctionArn}", "arn:aws:lambda:local:000000000000:function:enter-route")
      .replaceAll(`"TimeoutSeconds": ${WAIT_AGAIN_AFTER_SECONDS}`, `"TimeoutSeconds": 1`);
    expect(text).toContain(`"TimeoutSeconds": ${WAIT_AGAIN_AFTER_SECONDS}`);
    expect(definition).not.toContain(`"TimeoutSeconds": ${WAIT_AGAIN_AFTER_SECONDS}`);
    const { stateMachineArn } = await service.createStateMachine({ name: "routes", definition });
    const tokens = (status: string) =>
      entries.filter((e) => e.status === status && e.token).map((e) => e.token!);
    const until = async (ok: () => boolean, what: string) => {
      for (let i = 0; i < 800 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
      if (!ok()) throw new Error(`${what}: ${JSON.stringify(entries)}`);
    };
    const transition = (from: string, to: string) =>
      JSON.stringify({ from, to, result: "SUCCESS", handler: "Test" });
    try {
      const execution = await service.startExecution({
        stateMachineArn,
        name: "svc-1-r1",
        input: JSON.stringify({ routeId: "svc-1-r1", generation: 1 }),
      });
      await until(() => tokens("PROVISIONING").length === 1, "PROVISIONING entered");
      await service.sendTaskSuccess({
        taskToken: tokens("PROVISIONING")[0]!,
        output: transition("PROVISIONING", "DEGRADED"),
      });
      await until(() => tokens("DEGRADED").length === 1, "DEGRADED entered");
      await service.sendTaskSuccess({
        taskToken: tokens("DEGRADED")[0]!,
        output: transition("DEGRADED", "HEALTHY"),
      });
      // No callback: after its timeout HEALTHY is entered again, as HEALTHY, with a new token.
      await until(() => tokens("HEALTHY").length === 2, "HEALTHY entered again");
      const [first, second] = tokens("HEALTHY");
      expect(second).not.toBe(first);
      expect(entries.at(-1)!.transition).toMatchObject({
        from: "HEALTHY",
        to: "HEALTHY",
        handler: "Lifecycle",
      });
      await expect(
        service.sendTaskSuccess({ taskToken: first!, output: transition("HEALTHY", "UNHEALTHY") }),
      ).rejects.toMatchObject({ name: "TaskTimedOut" });
      expect((await service.describeExecution({ executionArn: execution.executionArn })).status).toBe(
        "RUNNING",
      );
      await service.stopExecution({ executionArn: execution.executionArn });
    } finally {
      await service.close();
    }
  });
});
