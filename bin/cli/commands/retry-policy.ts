/**
 * `cairn retry-policy create|update|get|delete|list`. Files are validated before Cairn is
 * contacted (main.ts reads them first), so an invalid policy stores nothing.
 */
import { stringify } from "yaml";
import type { RetryPolicy } from "../../../functions/core/retry/policy.ts";
import type { OutputFormat } from "../args.ts";
import { ResourceNotFoundError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { policyListView, policyView, renderPolicy, renderPolicyList } from "../retry-views.ts";
import type { CommandContext } from "./context.ts";

export async function runPolicyWrite(
  invocation: { readonly kind: "retry-policy create" | "retry-policy update"; readonly output: OutputFormat },
  policy: RetryPolicy,
  ctx: CommandContext,
): Promise<ExitCode> {
  const creating = invocation.kind === "retry-policy create";
  if (creating) await ctx.api.admin.createRetryPolicy(policy, ctx.io.nowMs());
  else await ctx.api.admin.updateRetryPolicy(policy, ctx.io.nowMs());
  if (invocation.output === "json") printJson(ctx.io, policyView(policy));
  else ctx.io.stdout(`${creating ? "created" : "updated"} retry policy ${policy.name}`);
  return ExitCode.Ok;
}

export async function runPolicyGet(
  invocation: { readonly name: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const policy = await ctx.api.admin.getRetryPolicy(invocation.name);
  if (policy === undefined) throw new ResourceNotFoundError(`retry policy ${invocation.name} not found`);
  if (invocation.output === "json") printJson(ctx.io, policyView(policy));
  // stringify ends with a newline; stdout adds one.
  else if (invocation.output === "yaml") ctx.io.stdout(stringify(policyView(policy)).trimEnd());
  else ctx.io.stdout(renderPolicy(policy));
  return ExitCode.Ok;
}

export async function runPolicyDelete(
  invocation: { readonly name: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  await ctx.api.admin.deleteRetryPolicy(invocation.name);
  if (invocation.output === "json") printJson(ctx.io, { name: invocation.name, deleted: true });
  else ctx.io.stdout(`deleted retry policy ${invocation.name}`);
  return ExitCode.Ok;
}

export async function runPolicyList(
  invocation: { readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const policies = await ctx.api.admin.listRetryPolicies();
  if (invocation.output === "json") printJson(ctx.io, policyListView(policies));
  else ctx.io.stdout(renderPolicyList(policies));
  return ExitCode.Ok;
}
