/**
 * Builds condition and update expressions from small named parts, with every attribute name
 * and value passed as a placeholder (no reserved-word surprises, no string-built values).
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { marshall, type NativeAttributeValue } from "@aws-sdk/util-dynamodb";

/** A part of a condition expression; it registers the names and values it uses. */
export type Clause = (e: Expressions) => string;

export class Expressions {
  private readonly names = new Map<string, string>();
  private readonly values = new Map<string, NativeAttributeValue>();

  /**
   * `stage.taskToken` → `#n0.#n1`. Short placeholders: DynamoDB limits an expression to 4 KB, and
   * a session item's kernels are written by long paths (`kernels.3.failureCategory`).
   */
  path(path: string): string {
    return path
      .split(".")
      .map((part) => {
        let placeholder = this.names.get(part);
        if (placeholder === undefined) {
          placeholder = `#n${this.names.size.toString(36)}`;
          this.names.set(part, placeholder);
        }
        return placeholder;
      })
      .join(".");
  }

  value(value: NativeAttributeValue): string {
    const placeholder = `:v${this.values.size.toString(36)}`;
    this.values.set(placeholder, value);
    return placeholder;
  }

  /** The placeholders in the form a request takes (omitted when empty, as DynamoDB requires). */
  attributes(): {
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, AttributeValue>;
  } {
    return {
      ...(this.names.size > 0
        ? { ExpressionAttributeNames: Object.fromEntries([...this.names].map(([name, ph]) => [ph, name])) }
        : {}),
      ...(this.values.size > 0
        ? {
            ExpressionAttributeValues: marshall(Object.fromEntries(this.values), {
              removeUndefinedValues: true,
              convertEmptyValues: false,
            }),
          }
        : {}),
    };
  }
}

// One clause is itself: DynamoDB refuses a condition with redundant parentheses, `((a))`.
export const all = (...clauses: readonly Clause[]): Clause =>
  clauses.length === 1 ? clauses[0]! : (e) => clauses.map((clause) => `(${clause(e)})`).join(" AND ");

export const any = (...clauses: readonly Clause[]): Clause =>
  clauses.length === 1 ? clauses[0]! : (e) => clauses.map((clause) => `(${clause(e)})`).join(" OR ");

/** Collects SET, REMOVE, ADD and DELETE actions for one UpdateItem. */
export class UpdateBuilder {
  private readonly sets: string[] = [];
  private readonly removes: string[] = [];
  private readonly adds: string[] = [];
  private readonly deletes: string[] = [];
  private readonly e: Expressions;

  constructor(e: Expressions) {
    this.e = e;
  }

  set(path: string, value: NativeAttributeValue): this {
    this.sets.push(`${this.e.path(path)} = ${this.e.value(value)}`);
    return this;
  }

  /** `path = <expression>`, for arithmetic on the stored value. */
  setTo(path: string, expression: (e: Expressions) => string): this {
    this.sets.push(`${this.e.path(path)} = ${expression(this.e)}`);
    return this;
  }

  /** `path = path + delta`. */
  increment(path: string, delta: number): this {
    return this.setTo(path, (e) => `${e.path(path)} + ${e.value(delta)}`);
  }

  remove(path: string): this {
    this.removes.push(this.e.path(path));
    return this;
  }

  /** Adds the elements to a string set (creating it). */
  addToSet(path: string, elements: ReadonlySet<string>): this {
    this.adds.push(`${this.e.path(path)} ${this.e.value(new Set(elements))}`);
    return this;
  }

  /** Removes the elements from a string set; DynamoDB drops the attribute when it empties. */
  deleteFromSet(path: string, elements: ReadonlySet<string>): this {
    this.deletes.push(`${this.e.path(path)} ${this.e.value(new Set(elements))}`);
    return this;
  }

  expression(): string {
    const parts: string[] = [];
    if (this.sets.length > 0) parts.push(`SET ${this.sets.join(", ")}`);
    if (this.removes.length > 0) parts.push(`REMOVE ${this.removes.join(", ")}`);
    if (this.adds.length > 0) parts.push(`ADD ${this.adds.join(", ")}`);
    if (this.deletes.length > 0) parts.push(`DELETE ${this.deletes.join(", ")}`);
    if (parts.length === 0) throw new Error("update has no actions");
    return parts.join(" ");
  }
}
