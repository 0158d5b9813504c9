/**
 * `cairn retry-config get|set`. `set` merges its flags into the stored configuration (the
 * defaults until one is stored) and validates the result with the core's parser before storing.
 */
import {
  parseRetryConfig,
  RETRY_CONFIG_DEFAULTS,
  type RetryConfig,
} from "../../../functions/core/retry/config.ts";
import type { ValidationIssue } from "../../../functions/core/spec.ts";
import type { OutputFormat, RetryConfigChanges } from "../args.ts";
import { InvalidInputError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { renderRetryConfig, retryConfigDocument, retryConfigView } from "../retry-views.ts";
import type { CommandContext } from "./context.ts";

/** The flag that sets each field, for error messages. */
const FLAG_OF: Readonly<Record<string, string>> = {
  enabled: "--enabled",
  globalMaxRetries: "--global-max-retries",
  defaultPolicyName: "--default-policy",
  "defaultBackoff.initialDelay": "--default-backoff-initial",
  "defaultBackoff.maxDelay": "--default-backoff-max",
  "defaultBackoff.multiplier": "--default-backoff-multiplier",
};

export async function runRetryConfigGet(
  invocation: { readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const stored = await ctx.api.admin.getRetryConfig();
  const view = retryConfigView(stored ?? RETRY_CONFIG_DEFAULTS, stored !== undefined);
  if (invocation.output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(renderRetryConfig(view));
  return ExitCode.Ok;
}

export async function runRetryConfigSet(
  invocation: { readonly changes: RetryConfigChanges; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const current = (await ctx.api.admin.getRetryConfig()) ?? RETRY_CONFIG_DEFAULTS;
  const config = mergeRetryConfig(current, invocation.changes);
  await ctx.api.admin.putRetryConfig(config, ctx.io.nowMs());
  const view = retryConfigView(config, true);
  if (invocation.output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(`updated the retry configuration\n${renderRetryConfig(view)}`);
  return ExitCode.Ok;
}

/** The current configuration with the flags applied, validated as a whole. */
export function mergeRetryConfig(current: RetryConfig, changes: RetryConfigChanges): RetryConfig {
  const document = retryConfigDocument(current);
  const merged = {
    enabled: changes.enabled ?? document.enabled,
    globalMaxRetries: changes.globalMaxRetries ?? document.globalMaxRetries,
    defaultPolicyName: changes.defaultPolicyName ?? document.defaultPolicyName,
    defaultBackoff: {
      initialDelay: changes.initialDelay ?? document.defaultBackoff.initialDelay,
      maxDelay: changes.maxDelay ?? document.defaultBackoff.maxDelay,
      multiplier: changes.multiplier ?? document.defaultBackoff.multiplier,
    },
  };
  try {
    return parseRetryConfig(merged);
  } catch (error) {
    if ((error as { code?: unknown }).code !== "INVALID_RETRY_CONFIG") throw error;
    const issues = (error as { issues: readonly ValidationIssue[] }).issues;
    throw new InvalidInputError(
      `invalid retry configuration (${issues.length} ${issues.length === 1 ? "problem" : "problems"}):\n` +
        issues
          .map((issue) => {
            const flag = FLAG_OF[issue.path];
            return `  ${issue.path}${flag === undefined ? "" : ` (${flag})`}: ${issue.message}`;
          })
          .join("\n"),
      issues,
    );
  }
}
