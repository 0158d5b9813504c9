/**
 * Job templates: one small item each, `TEMPLATE#<name>` / `TEMPLATE`, listed
 * in the listings index under `TEMPLATES`, like retry policies (retry-resources.ts). The document
 * is validated on the way in and on the way out. `Default` is built in until it is stored: an
 * update of it is a put, and it is never deleted.
 */
import { AlreadyExistsError, InvalidStoreRequestError } from "../../core/ports/errors.ts";
import {
  DefaultTemplateError,
  TemplateNotFoundError,
  type TemplateRepository,
} from "../../core/ports/templates.ts";
import {
  BUILT_IN_DEFAULT_TEMPLATE,
  DEFAULT_TEMPLATE_NAME,
  parseJobTemplate,
  type JobTemplate,
} from "../../core/templates.ts";
import { itemAbsent, itemExists } from "./conditions.ts";
import type { DynamoRequests } from "./dynamo-requests.ts";
import { Fields, fromItem, toItem, type Item } from "./item-codec.ts";
import { requireId, requireTime } from "./validation.ts";

export const TEMPLATE_SK = "TEMPLATE";
export const TEMPLATES_PK = "TEMPLATES";
export const templatePk = (name: string): string => `TEMPLATE#${name}`;
const templateKey = (name: string): Item => ({ pk: { S: templatePk(name) }, sk: { S: TEMPLATE_SK } });

const ENTITY = "job template";

export class TemplateItems implements TemplateRepository {
  readonly #requests: DynamoRequests;

  constructor(requests: DynamoRequests) {
    this.#requests = requests;
  }

  async createTemplate(template: JobTemplate, nowMs: number): Promise<void> {
    requireTime("nowMs", nowMs);
    if (template.name === DEFAULT_TEMPLATE_NAME) throw new AlreadyExistsError(ENTITY, template.name);
    const created = await this.#requests.putItem(
      "createTemplate",
      { Item: templateItem(template, nowMs) },
      itemAbsent,
    );
    if (!created) throw new AlreadyExistsError(ENTITY, template.name);
  }

  async updateTemplate(template: JobTemplate, nowMs: number): Promise<void> {
    requireTime("nowMs", nowMs);
    const document = templateDocument(template);
    if (template.name === DEFAULT_TEMPLATE_NAME) {
      // Default always exists: its first update stores it.
      await this.#requests.putItem("updateTemplate", { Item: templateItem(template, nowMs) }, undefined);
      return;
    }
    const updated = await this.#requests.updateItem(
      "updateTemplate",
      templateKey(template.name),
      (u) => u.set("document", document).set("updatedAtMs", nowMs).increment("version", 1),
      itemExists,
    );
    if (!updated.ok) throw new TemplateNotFoundError(template.name);
  }

  async getTemplate(name: string): Promise<JobTemplate | undefined> {
    requireId("name", name);
    const item = await this.#requests.getItem("getTemplate", templateKey(name));
    if (item !== undefined) return templateFromItem(item);
    return name === DEFAULT_TEMPLATE_NAME ? BUILT_IN_DEFAULT_TEMPLATE : undefined;
  }

  async listTemplates(): Promise<JobTemplate[]> {
    const templates = (
      await this.#requests.readRoster("listTemplates", TEMPLATES_PK, {
        pkPrefix: templatePk(""),
        sk: TEMPLATE_SK,
      })
    ).map(templateFromItem);
    if (!templates.some((t) => t.name === DEFAULT_TEMPLATE_NAME)) templates.push(BUILT_IN_DEFAULT_TEMPLATE);
    return templates.sort((a, b) => a.name.localeCompare(b.name));
  }

  async deleteTemplate(name: string): Promise<void> {
    requireId("name", name);
    if (name === DEFAULT_TEMPLATE_NAME) throw new DefaultTemplateError();
    const deleted = await this.#requests.deleteItem("deleteTemplate", templateKey(name), itemExists);
    if (!deleted.ok) throw new TemplateNotFoundError(name);
  }
}

/** The document as stored: validated again, so nothing the core would refuse is written. */
function templateDocument(template: JobTemplate): Record<string, unknown> {
  const parsed = parseJobTemplate(template);
  if (!parsed.success) {
    const first = parsed.issues[0]!;
    throw new InvalidStoreRequestError(`template.${first.path}`, first.message);
  }
  return { ...parsed.data };
}

function templateItem(template: JobTemplate, nowMs: number): Item {
  return toItem({
    pk: templatePk(template.name),
    sk: TEMPLATE_SK,
    type: "TEMPLATE",
    name: template.name,
    document: templateDocument(template),
    version: 1,
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    gsi3pk: TEMPLATES_PK,
    gsi3sk: template.name,
  });
}

function templateFromItem(item: Item): JobTemplate {
  const r = new Fields(fromItem(item), ENTITY);
  const parsed = parseJobTemplate(r.object("document"));
  if (!parsed.success) {
    const why = parsed.issues.map((i) => `${i.path}: ${i.message}`).join("; ");
    throw new Error(`stored job template ${r.string("name")} does not validate: ${why}`);
  }
  return parsed.data;
}
