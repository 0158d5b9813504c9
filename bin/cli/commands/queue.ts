/** `cairn queue create|update|get|delete|list`. */
import {
  changeQueueFargateSettings,
  type QueueFargateChanges,
} from "../../../functions/core/queue-settings.ts";
import { DEFAULT_QUEUE } from "../../../functions/core/coordinator/inbound.ts";
import type { OutputFormat } from "../args.ts";
import { ConflictError, InvalidInputError, ResourceNotFoundError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { queueListView, queueView, renderQueue, renderQueueList } from "../retry-views.ts";
import type { CommandContext } from "./context.ts";

export interface QueueWriteInvocation {
  readonly kind: "queue create" | "queue update";
  readonly name: string;
  readonly priority?: number;
  readonly retryPolicies?: readonly string[];
  /** Fargate settings to change (`--capacity-provider`, `--vcpu-quota`); `null` removes them. */
  readonly fargate?: QueueFargateChanges | null;
  readonly output: OutputFormat;
}

export async function runQueueWrite(
  invocation: QueueWriteInvocation,
  ctx: CommandContext,
): Promise<ExitCode> {
  const { admin } = ctx.api;
  const current = invocation.kind === "queue create" ? undefined : await admin.getQueue(invocation.name);
  // The default queue exists without being created (priority 0, no retry policies): updating it
  // the first time stores it, so the advice the product prints for it works as printed.
  const implicit = current === undefined && invocation.name === DEFAULT_QUEUE;
  const creating = invocation.kind === "queue create" || implicit;
  if (!creating && current === undefined)
    throw new ResourceNotFoundError(`queue ${invocation.name} not found`);
  const retryPolicies = invocation.retryPolicies ?? current?.retryPolicies ?? [];
  // Policies must exist first; every unknown one is named at once. The store checks again in the
  // write itself, for a policy deleted in between.
  const known = await Promise.all(retryPolicies.map((name) => admin.getRetryPolicy(name)));
  const unknown = retryPolicies.filter((_, i) => known[i] === undefined);
  if (unknown.length > 0) throw unknownPolicies(unknown);
  // The quota has no default: a queue that gets Fargate settings must be given one.
  const changes = invocation.fargate;
  if (
    changes !== undefined &&
    changes !== null &&
    changes.vcpuQuota === undefined &&
    current?.fargate === undefined
  ) {
    throw new InvalidInputError(
      `queue ${invocation.name} has no Fargate settings yet: give --vcpu-quota N (the vCPUs its Fargate kernels may hold at once)`,
      [{ path: "fargate.vcpuQuota", message: "required" }],
    );
  }
  // Checked here too, so a bad setting is named before anything is sent (the store checks again).
  const fargate = changeQueueFargateSettings(current?.fargate, changes);
  if (!fargate.ok) {
    throw new InvalidInputError(
      `invalid Fargate settings for queue ${invocation.name}:\n${fargate.issues.map((i) => `  ${i.path}: ${i.message}`).join("\n")}`,
      fargate.issues,
    );
  }
  const input = {
    name: invocation.name,
    priority: invocation.priority ?? current?.priority ?? 0,
    retryPolicies,
    ...(fargate.settings !== undefined ? { fargate: fargate.settings } : {}),
  };
  let queue;
  try {
    queue = creating
      ? await admin.createQueue(input, ctx.io.nowMs())
      : await admin.updateQueue(input, ctx.io.nowMs());
  } catch (error) {
    const { code, entity, id } = error as { code?: unknown; entity?: unknown; id?: unknown };
    if (code === "NOT_FOUND" && entity === "retry policy" && typeof id === "string")
      throw unknownPolicies([id]);
    throw error;
  }
  if (invocation.output === "json") printJson(ctx.io, queueView(queue));
  else
    ctx.io.stdout(
      `${invocation.kind === "queue create" ? "created" : "updated"} queue ${queue.name}\n${renderQueue(queueView(queue))}`,
    );
  return ExitCode.Ok;
}

function unknownPolicies(names: readonly string[]): ConflictError {
  const what = names.length === 1 ? `retry policy ${names[0]}` : `retry policies ${names.join(", ")}`;
  return new ConflictError(
    `unknown ${what}: create ${names.length === 1 ? "it" : "them"} first with \`cairn retry-policy create -f FILE\``,
  );
}

export async function runQueueGet(
  invocation: { readonly name: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const queue = await ctx.api.admin.getQueue(invocation.name);
  if (queue === undefined) throw new ResourceNotFoundError(`queue ${invocation.name} not found`);
  if (invocation.output === "json") printJson(ctx.io, queueView(queue));
  else ctx.io.stdout(renderQueue(queueView(queue)));
  return ExitCode.Ok;
}

export async function runQueueDelete(
  invocation: { readonly name: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  await ctx.api.admin.deleteQueue(invocation.name);
  if (invocation.output === "json") printJson(ctx.io, { name: invocation.name, deleted: true });
  else ctx.io.stdout(`deleted queue ${invocation.name}`);
  return ExitCode.Ok;
}

export async function runQueueList(
  invocation: { readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const view = queueListView(await ctx.api.admin.listQueues());
  if (invocation.output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(renderQueueList(view.queues));
  return ExitCode.Ok;
}
