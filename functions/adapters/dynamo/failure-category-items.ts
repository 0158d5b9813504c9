/**
 * Failure categories operators define: one small item each, `FAILURE_CATEGORY#<name>` /
 * `FAILURE_CATEGORY`, listed in the listings index under `FAILURE_CATEGORIES`, like retry
 * policies (retry-resources.ts). The document is validated on the way in and on the way out, so
 * nothing the core would refuse is stored or returned.
 */
import { AlreadyExistsError, InvalidStoreRequestError } from "../../core/ports/errors.ts";
import {
  FailureCategoryNotFoundError,
  type FailureCategoryRepository,
} from "../../core/ports/failure-categories.ts";
import {
  failureCategoryToDocument,
  inPrecedenceOrder,
  parseFailureCategory,
  type FailureCategoryDefinition,
} from "../../core/retry/category-definitions.ts";
import { itemAbsent, itemExists } from "./conditions.ts";
import type { DynamoRequests } from "./dynamo-requests.ts";
import { Fields, fromItem, toItem, type Item } from "./item-codec.ts";
import { requireId, requireTime } from "./validation.ts";

export const FAILURE_CATEGORY_SK = "FAILURE_CATEGORY";
export const FAILURE_CATEGORIES_PK = "FAILURE_CATEGORIES";
export const failureCategoryPk = (name: string): string => `FAILURE_CATEGORY#${name}`;
const categoryKey = (name: string): Item => ({
  pk: { S: failureCategoryPk(name) },
  sk: { S: FAILURE_CATEGORY_SK },
});

const ENTITY = "failure category";

export class FailureCategoryItems implements FailureCategoryRepository {
  readonly #requests: DynamoRequests;

  constructor(requests: DynamoRequests) {
    this.#requests = requests;
  }

  async createFailureCategory(definition: FailureCategoryDefinition, nowMs: number): Promise<void> {
    requireTime("nowMs", nowMs);
    const created = await this.#requests.putItem(
      "createFailureCategory",
      { Item: categoryItem(definition, nowMs) },
      itemAbsent,
    );
    if (!created) throw new AlreadyExistsError(ENTITY, definition.name);
  }

  async updateFailureCategory(definition: FailureCategoryDefinition, nowMs: number): Promise<void> {
    requireTime("nowMs", nowMs);
    const document = categoryDocument(definition);
    const updated = await this.#requests.updateItem(
      "updateFailureCategory",
      categoryKey(definition.name),
      (u) => u.set("document", document).set("updatedAtMs", nowMs).increment("version", 1),
      itemExists,
    );
    if (!updated.ok) throw new FailureCategoryNotFoundError(definition.name);
  }

  async getFailureCategory(name: string): Promise<FailureCategoryDefinition | undefined> {
    requireId("name", name);
    const item = await this.#requests.getItem("getFailureCategory", categoryKey(name));
    return item === undefined ? undefined : categoryFromItem(item);
  }

  async listFailureCategories(): Promise<FailureCategoryDefinition[]> {
    const items = await this.#requests.readRoster("listFailureCategories", FAILURE_CATEGORIES_PK, {
      pkPrefix: failureCategoryPk(""),
      sk: FAILURE_CATEGORY_SK,
    });
    return inPrecedenceOrder(items.map(categoryFromItem));
  }

  async deleteFailureCategory(name: string): Promise<void> {
    requireId("name", name);
    const deleted = await this.#requests.deleteItem("deleteFailureCategory", categoryKey(name), itemExists);
    if (!deleted.ok) throw new FailureCategoryNotFoundError(name);
  }
}

/** The document as stored: validated again, so a definition built by hand cannot store garbage. */
function categoryDocument(definition: FailureCategoryDefinition): Record<string, unknown> {
  requireId("definition.name", definition.name);
  const document = failureCategoryToDocument(definition);
  try {
    parseFailureCategory(document);
  } catch (error) {
    const first = (error as { issues?: readonly { path: string; message: string }[] }).issues?.[0];
    if (first === undefined) throw error;
    throw new InvalidStoreRequestError(`definition.${first.path}`, first.message);
  }
  return document;
}

function categoryItem(definition: FailureCategoryDefinition, nowMs: number): Item {
  return toItem({
    pk: failureCategoryPk(definition.name),
    sk: FAILURE_CATEGORY_SK,
    type: "FAILURE_CATEGORY",
    name: definition.name,
    document: categoryDocument(definition),
    version: 1,
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    gsi3pk: FAILURE_CATEGORIES_PK,
    gsi3sk: definition.name,
  });
}

function categoryFromItem(item: Item): FailureCategoryDefinition {
  const r = new Fields(fromItem(item), ENTITY);
  try {
    return parseFailureCategory(r.object("document"));
  } catch (error) {
    throw new Error(
      `stored failure category ${r.string("name")} does not validate: ${(error as Error).message}`,
    );
  }
}
