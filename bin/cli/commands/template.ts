/**
 * `cairn template create|update|get|delete|list` (HPC Pack's job templates): job templates, written
 * directly to the store like retry policies. Files are validated before Cairn is contacted
 * (main.ts reads them first), so an invalid template stores nothing.
 */
import { stringify } from "yaml";
import type { JobTemplate } from "../../../functions/core/templates.ts";
import type { OutputFormat } from "../args.ts";
import { ResourceNotFoundError, UsageError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { renderTable } from "../table.ts";
import type { CommandContext } from "./context.ts";
import type { TemplateAdmin } from "../cairn-api.ts";

function templates(ctx: CommandContext): TemplateAdmin {
  const admin = ctx.api.templates;
  if (admin === undefined) throw new UsageError("this connection does not manage job templates");
  return admin;
}

/** The document `create -f` accepts back, fields in the order docs/jobs.md shows them. */
export function templateView(t: JobTemplate): JobTemplate {
  return {
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    defaults: t.defaults,
    constraints: t.constraints,
  };
}

export async function runTemplateWrite(
  invocation: { readonly kind: "template create" | "template update"; readonly output: OutputFormat },
  template: JobTemplate,
  ctx: CommandContext,
): Promise<ExitCode> {
  const creating = invocation.kind === "template create";
  if (creating) await templates(ctx).createTemplate(template, ctx.io.nowMs());
  else await templates(ctx).updateTemplate(template, ctx.io.nowMs());
  if (invocation.output === "json") printJson(ctx.io, templateView(template));
  else ctx.io.stdout(`${creating ? "created" : "updated"} job template ${template.name}`);
  return ExitCode.Ok;
}

export async function runTemplateGet(
  invocation: { readonly name: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const template = await templates(ctx).getTemplate(invocation.name);
  if (template === undefined) throw new ResourceNotFoundError(`job template ${invocation.name} not found`);
  if (invocation.output === "json") printJson(ctx.io, templateView(template));
  // The text form is the YAML document too: a template is its defaults and constraints.
  else ctx.io.stdout(stringify(templateView(template)).trimEnd());
  return ExitCode.Ok;
}

export async function runTemplateDelete(
  invocation: { readonly name: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  await templates(ctx).deleteTemplate(invocation.name);
  if (invocation.output === "json") printJson(ctx.io, { name: invocation.name, deleted: true });
  else ctx.io.stdout(`deleted job template ${invocation.name}`);
  return ExitCode.Ok;
}

export async function runTemplateList(
  invocation: { readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const list = await templates(ctx).listTemplates();
  if (invocation.output === "json") printJson(ctx.io, list.map(templateView));
  else
    ctx.io.stdout(
      renderTable(
        ["NAME", "DEFAULTS", "CONSTRAINTS"],
        list.map((t) => [
          t.name,
          leafPaths(t.defaults).join(", ") || "-",
          Object.entries(t.constraints)
            .map(([path, c]) => `${path} ${constraintText(c)}`)
            .join(", ") || "-",
        ]),
      ),
    );
  return ExitCode.Ok;
}

function constraintText(c: JobTemplate["constraints"][string]): string {
  const parts: string[] = [];
  if (c.required === true) parts.push("required");
  if (c.min !== undefined) parts.push(`>=${c.min}`);
  if (c.max !== undefined) parts.push(`<=${c.max}`);
  if (c.allowed !== undefined) parts.push(`in [${c.allowed.map((v) => String(v)).join(" ")}]`);
  return parts.join(" ");
}

/** `resources.cpu=1`, `timeouts.running=600`: each default as path=value. */
function leafPaths(value: unknown, prefix = ""): string[] {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return prefix === "" ? [] : [`${prefix}=${JSON.stringify(value)}`];
  }
  return Object.entries(value).flatMap(([key, child]) => leafPaths(child, prefix ? `${prefix}.${key}` : key));
}
