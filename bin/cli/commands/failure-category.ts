/**
 * `cairn failure-category create|update|get|delete|list`: the failure categories operators define,
 * written directly to the store like retry policies. Files are validated before Cairn is
 * contacted (main.ts reads them first), so an invalid category stores nothing.
 */
import { stringify } from "yaml";
import {
  failureCategoryToDocument,
  type CategoryRule,
  type FailureCategoryDefinition,
  type FailureCategoryDocument,
} from "../../../functions/core/retry/category-definitions.ts";
import type { FailureCategoryRepository } from "../../../functions/core/ports/failure-categories.ts";
import type { OutputFormat } from "../args.ts";
import { ResourceNotFoundError, UsageError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { matcherText } from "../retry-views.ts";
import { renderTable } from "../table.ts";
import type { CommandContext } from "./context.ts";

function categories(ctx: CommandContext): FailureCategoryRepository {
  const admin = ctx.api.failureCategories;
  if (admin === undefined) throw new UsageError("this connection does not manage failure categories");
  return admin;
}

export async function runCategoryWrite(
  invocation: {
    readonly kind: "failure-category create" | "failure-category update";
    readonly output: OutputFormat;
  },
  category: FailureCategoryDefinition,
  ctx: CommandContext,
): Promise<ExitCode> {
  const creating = invocation.kind === "failure-category create";
  if (creating) await categories(ctx).createFailureCategory(category, ctx.io.nowMs());
  else await categories(ctx).updateFailureCategory(category, ctx.io.nowMs());
  if (invocation.output === "json") printJson(ctx.io, failureCategoryToDocument(category));
  else ctx.io.stdout(`${creating ? "created" : "updated"} failure category ${category.name}`);
  return ExitCode.Ok;
}

export async function runCategoryGet(
  invocation: { readonly name: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const category = await categories(ctx).getFailureCategory(invocation.name);
  if (category === undefined) {
    throw new ResourceNotFoundError(`failure category ${invocation.name} not found`);
  }
  const document = failureCategoryToDocument(category);
  if (invocation.output === "json") printJson(ctx.io, document);
  // stringify ends with a newline; stdout adds one.
  else if (invocation.output === "yaml") ctx.io.stdout(stringify(document).trimEnd());
  else ctx.io.stdout(renderCategory(category));
  return ExitCode.Ok;
}

export async function runCategoryDelete(
  invocation: { readonly name: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  await categories(ctx).deleteFailureCategory(invocation.name);
  if (invocation.output === "json") printJson(ctx.io, { name: invocation.name, deleted: true });
  else ctx.io.stdout(`deleted failure category ${invocation.name}`);
  return ExitCode.Ok;
}

export async function runCategoryList(
  invocation: { readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const list = await categories(ctx).listFailureCategories();
  if (invocation.output === "json") {
    const view: { categories: FailureCategoryDocument[] } = {
      categories: list.map(failureCategoryToDocument),
    };
    printJson(ctx.io, view);
  } else ctx.io.stdout(renderCategoryList(list));
  return ExitCode.Ok;
}

function ruleText(rule: CategoryRule): string {
  return rule.matchers.map(matcherText).join(" and ");
}

export function renderCategory(category: FailureCategoryDefinition): string {
  return [
    `failure category ${category.name}`,
    `  precedence  ${category.precedence} (lower is checked first, then by name)`,
    ...renderTable(
      ["RULE", "MATCH (any rule)"],
      category.rules.map((rule, i) => [String(i), ruleText(rule)]),
    )
      .split("\n")
      .map((line) => `  ${line}`),
  ].join("\n");
}

export function renderCategoryList(list: readonly FailureCategoryDefinition[]): string {
  if (list.length === 0) return "no failure categories: the agents' built-in categories apply";
  return renderTable(
    ["NAME", "PRECEDENCE", "RULES"],
    list.map((c) => [c.name, String(c.precedence), c.rules.map(ruleText).join(" | ")]),
  );
}
