/**
 * `cairn deployment create|get|list|scale|destroy|routes` (Backend.AI's BEP-1030). Writes are requests: an
 * inbound event the control plane applies (`Deployment Created`, `Deployment Scaled`,
 * `Deployment Destroy Requested`), checked here first against what is stored, so a request the
 * control plane would refuse is an error here rather than silence. Reads come from the store.
 */
import type { DeploymentWithRoutes } from "../../../functions/core/deployments/model.ts";
import type { DeploymentSpec } from "../../../functions/core/deployments/spec.ts";
import { DeploymentStatus } from "../../../functions/core/deployments/tables.ts";
import { DetailType, toPutEventsEntry, type PutEventsEntry } from "../../../functions/core/events.ts";
import type { OutputFormat } from "../args.ts";
import type { CairnApi, DeploymentReader } from "../cairn-api.ts";
import { renderDeployment, renderDeploymentList, renderRoutes } from "../deployment-render.ts";
import { deploymentSummaryView, deploymentView, routesView } from "../deployment-views.ts";
import { ConflictError, InvalidSpecError, ResourceNotFoundError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { rejectionOf } from "../follow.ts";
import { followDeployment, goalText, type DeploymentGoal } from "../follow-deployment.ts";
import { printJson } from "../io.ts";
import type { CommandContext } from "./context.ts";

interface Waiting {
  readonly wait: boolean;
  readonly timeoutSeconds?: number;
  readonly output: OutputFormat;
}

export interface DeploymentCreateRequest extends Waiting {
  readonly spec: DeploymentSpec;
}

/** A CairnApi without deployments (a test's fake) has none. */
const NO_DEPLOYMENTS: DeploymentReader = {
  getDeployment: () => Promise.resolve(undefined),
  listDeployments: () => Promise.resolve([]),
  deploymentHistory: () => Promise.resolve([]),
};

function deployments(api: CairnApi): DeploymentReader {
  return api.deployments ?? NO_DEPLOYMENTS;
}

/**
 * The Deployment Created entry, so a spec the event cannot carry fails before anything is sent
 * (main.ts builds it once before connecting; the bus name does not count towards the size).
 */
export function createdEntry(busName: string, spec: DeploymentSpec): PutEventsEntry {
  try {
    return toPutEventsEntry(busName, DetailType.DeploymentCreated, { deploymentId: spec.name, spec });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "EVENT_TOO_LARGE" || code === "INVALID_EVENT") {
      throw new InvalidSpecError(`the deployment spec cannot be sent: ${(error as Error).message}`);
    }
    throw error;
  }
}

export async function runDeploymentCreate(
  request: DeploymentCreateRequest,
  ctx: CommandContext,
): Promise<ExitCode> {
  const { spec } = request;
  const id = spec.name;
  const entry = createdEntry(ctx.api.eventBusName, spec);
  const stored = await deployments(ctx.api).getDeployment(id);
  let eventId: string | undefined;
  const live = stored !== undefined && stored.deployment.status !== DeploymentStatus.DESTROYED;
  // As the control plane judges it: the same creation again changes nothing; another spec under
  // a live deployment's name is refused (a DESTROYED one's name may be used again).
  if (live && JSON.stringify(stored.deployment.spec) !== JSON.stringify(spec)) {
    throw new ConflictError(
      `deployment ${id} exists (${stored.deployment.status}) with another spec: change its replicas with ` +
        `\`cairn deployment scale ${id} N\`, or destroy it first (\`cairn deployment destroy ${id}\`)`,
    );
  }
  if (live) {
    ctx.io.stderr(
      `deployment ${id} already exists with this spec (${stored.deployment.status}); not sent again`,
    );
  } else {
    eventId = (await ctx.api.put(entry)) ?? undefined;
  }
  if (!request.wait) {
    if (request.output === "json") printJson(ctx.io, { deploymentId: id, created: !live });
    else if (!live) {
      ctx.io.stdout(
        `create requested for deployment ${id} (${spec.replicas} ${spec.replicas === 1 ? "replica" : "replicas"}); ` +
          `follow it with \`cairn deployment get ${id}\``,
      );
    }
    return ExitCode.Ok;
  }
  return waitFor(
    id,
    { kind: "ready", replicas: spec.replicas },
    request,
    ctx,
    live ? undefined : stored?.deployment.version,
    eventId,
  );
}

export async function runDeploymentScale(
  invocation: Waiting & { readonly name: string; readonly replicas: number },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { name, replicas } = invocation;
  const { deployment } = await existing(name, ctx);
  if (deployment.status === DeploymentStatus.DESTROYED || deployment.destroyRequest !== undefined) {
    const state = deployment.status === DeploymentStatus.DESTROYED ? "DESTROYED" : "being destroyed";
    throw new ConflictError(`deployment ${name} is ${state}: it cannot be scaled`);
  }
  const from = deployment.spec.replicas;
  const changed = from !== replicas;
  let eventId: string | undefined;
  if (changed) {
    eventId =
      (await ctx.api.put(
        toPutEventsEntry(ctx.api.eventBusName, DetailType.DeploymentScaled, { deploymentId: name, replicas }),
      )) ?? undefined;
  }
  if (!invocation.wait) {
    if (invocation.output === "json") {
      printJson(ctx.io, {
        deploymentId: name,
        replicas,
        from,
        scaleRequested: changed,
        status: deployment.status,
      });
    } else if (changed) {
      ctx.io.stdout(
        `scale requested for deployment ${name}: ${from} → ${replicas} ${replicas === 1 ? "replica" : "replicas"} ` +
          `(it was ${deployment.status}); follow it with \`cairn deployment get ${name}\``,
      );
    } else {
      ctx.io.stdout(`deployment ${name} already asks for ${replicas} (${deployment.status}); nothing sent`);
    }
    return ExitCode.Ok;
  }
  if (!changed) ctx.io.stderr(`deployment ${name} already asks for ${replicas}; nothing sent`);
  return waitFor(name, { kind: "ready", replicas }, invocation, ctx, undefined, eventId);
}

export async function runDeploymentDestroy(
  invocation: Waiting & { readonly name: string; readonly reason?: string },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { name, reason } = invocation;
  const { deployment } = await existing(name, ctx);
  const destroyed = deployment.status === DeploymentStatus.DESTROYED;
  const requested = !destroyed && deployment.destroyRequest === undefined;
  let eventId: string | undefined;
  if (requested) {
    eventId =
      (await ctx.api.put(
        toPutEventsEntry(ctx.api.eventBusName, DetailType.DeploymentDestroyRequested, {
          deploymentId: name,
          ...(reason === undefined ? {} : { reason }),
        }),
      )) ?? undefined;
  }
  const note = destroyed
    ? `deployment ${name} is already DESTROYED; nothing to destroy`
    : requested
      ? undefined
      : `deployment ${name} is already being destroyed (${deployment.status}); not sent again`;
  if (!invocation.wait) {
    if (invocation.output === "json") {
      printJson(ctx.io, { deploymentId: name, destroyRequested: requested, status: deployment.status });
    } else {
      ctx.io.stdout(
        note ??
          `destroy requested for deployment ${name} (it was ${deployment.status}); ` +
            `follow it with \`cairn deployment get ${name}\``,
      );
    }
    return ExitCode.Ok;
  }
  if (note !== undefined) ctx.io.stderr(note);
  return waitFor(name, { kind: "destroyed" }, invocation, ctx, undefined, eventId);
}

export async function runDeploymentGet(
  invocation: { readonly name: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  await printDeployment(await existing(invocation.name, ctx), invocation.output, ctx);
  return ExitCode.Ok;
}

export async function runDeploymentList(
  invocation: { readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const reader = deployments(ctx.api);
  const all = await reader.listDeployments();
  // Routes are read only where they count: a DESTROYED deployment has no live route.
  const summaries = await Promise.all(
    all.map(async (d) =>
      d.status === DeploymentStatus.DESTROYED
        ? deploymentSummaryView(d, [], ctx.io.nowMs())
        : deploymentSummaryView(d, (await reader.getDeployment(d.id))?.routes ?? [], ctx.io.nowMs()),
    ),
  );
  if (invocation.output === "json") printJson(ctx.io, { deployments: summaries });
  else ctx.io.stdout(renderDeploymentList(summaries, ctx.io.nowMs()));
  return ExitCode.Ok;
}

export async function runDeploymentRoutes(
  invocation: { readonly name: string; readonly all: boolean; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const view = routesView(await existing(invocation.name, ctx), invocation.all);
  if (invocation.output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(renderRoutes(view, ctx.io.nowMs()));
  return ExitCode.Ok;
}

async function existing(name: string, ctx: CommandContext): Promise<DeploymentWithRoutes> {
  const found = await deployments(ctx.api).getDeployment(name);
  if (found === undefined) {
    throw new ResourceNotFoundError(`deployment ${name} not found (\`cairn deployment list\` lists them)`);
  }
  return found;
}

/** As `deployment get` prints it: shared with the waits, whose final summary it is. */
async function printDeployment(
  found: DeploymentWithRoutes,
  output: OutputFormat,
  ctx: CommandContext,
): Promise<void> {
  const history = await deployments(ctx.api).deploymentHistory(found.deployment.id);
  const view = deploymentView(found, history, ctx.io.nowMs());
  if (output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(renderDeployment(view, ctx.io.nowMs()));
}

/**
 * How long `create --wait` and `scale --wait` wait for every replica to be HEALTHY unless
 * `--timeout` says: Kubernetes' default progress deadline for a Deployment
 * (`progressDeadlineSeconds`, 600).
 */
export const READY_WAIT_DEFAULT_SECONDS = 600;

async function waitFor(
  id: string,
  goal: DeploymentGoal,
  request: Waiting,
  ctx: CommandContext,
  afterVersion?: number,
  /** The request's event, whose refusal (if the control plane records one) ends the wait. */
  eventId?: string,
): Promise<ExitCode> {
  const timeoutSeconds =
    request.timeoutSeconds ?? (goal.kind === "ready" ? READY_WAIT_DEFAULT_SECONDS : undefined);
  ctx.io.stderr(
    `waiting for deployment ${id} to be ${goalText(goal)}` +
      `${timeoutSeconds === undefined ? "" : ` for up to ${timeoutSeconds} s`} (Ctrl-C stops waiting, not the deployment)`,
  );
  const { outcome, found } = await followDeployment(id, goal, {
    store: deployments(ctx.api),
    nowMs: () => ctx.io.nowMs(),
    sleep: (ms) => ctx.io.sleep(ms),
    progress: (line) => ctx.io.stderr(line),
    ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
    ...(afterVersion === undefined ? {} : { afterVersion }),
    ...(eventId === undefined ? {} : { rejected: () => rejectionOf(ctx.api.store, id, eventId) }),
  });
  if (outcome === "destroyed") {
    ctx.io.stderr(`deployment ${id} is ${found.deployment.status} instead: it will not be READY`);
  }
  await printDeployment(found, request.output, ctx);
  return outcome === "reached" ? ExitCode.Ok : ExitCode.SessionDidNotSucceed;
}
