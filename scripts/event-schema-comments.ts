/**
 * The doc comments of an event's zod schema, read from the TypeScript source so the published
 * schemas carry the same words as the code: the comment on the exported schema describes the
 * event, the comment on a property (or, failing that, on the shared field schema it refers to,
 * followed across imports) describes the field. zod never sees these comments, so this reads them
 * with the TypeScript parser (no type checking, no program: a few files parse in milliseconds).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import ts from "typescript";

export interface CommentTree {
  readonly description: string | undefined;
  readonly fields: ReadonlyMap<string, CommentTree>;
}

const EMPTY: CommentTree = { description: undefined, fields: new Map() };
/** Calls that build an object schema from a shape (zod's, and spec.ts's strictObject). */
const OBJECT_BUILDERS = new Set(["object", "strictObject", "looseObject"]);
/** Deep enough for any real schema; stops a cycle of aliases. */
const MAX_DEPTH = 32;

/** Comments of the schema exported as `exportName` from `file`. */
export function schemaComments(file: string, exportName: string): CommentTree {
  const sources = new SourceFiles();
  const declared = sources.declaration(file, exportName);
  if (declared === undefined) throw new Error(`${file} declares no ${exportName}`);
  return treeOf(sources, declared, 0);
}

interface Declared {
  readonly file: string;
  readonly description: string | undefined;
  readonly initializer: ts.Expression | undefined;
}

function treeOf(sources: SourceFiles, declared: Declared, depth: number): CommentTree {
  const inner =
    declared.initializer === undefined
      ? EMPTY
      : expressionTree(sources, declared.file, declared.initializer, depth);
  return { description: declared.description ?? inner.description, fields: inner.fields };
}

/** Follows a schema expression down to the shape it is built from, if any. */
function expressionTree(sources: SourceFiles, file: string, node: ts.Expression, depth: number): CommentTree {
  if (depth > MAX_DEPTH) return EMPTY;
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node)) {
    return expressionTree(sources, file, node.expression, depth + 1);
  }
  if (ts.isIdentifier(node)) {
    const declared = sources.resolve(file, node.text);
    return declared === undefined ? EMPTY : treeOf(sources, declared, depth + 1);
  }
  if (ts.isObjectLiteralExpression(node))
    return { description: undefined, fields: shapeFields(sources, file, node, depth) };
  if (!ts.isCallExpression(node)) return EMPTY;
  const callee = node.expression;
  const builder =
    (ts.isIdentifier(callee) && OBJECT_BUILDERS.has(callee.text)) ||
    (ts.isPropertyAccessExpression(callee) &&
      ts.isIdentifier(callee.expression) &&
      callee.expression.text === "z" &&
      OBJECT_BUILDERS.has(callee.name.text));
  if (builder) {
    const shape = node.arguments[0];
    return shape === undefined ? EMPTY : expressionTree(sources, file, shape, depth + 1);
  }
  // A list (`z.array(item)`): its item's fields, under the list's own field (the item's comment
  // describes one item, not the list, so it is not the list's description).
  if (
    ts.isPropertyAccessExpression(callee) &&
    ts.isIdentifier(callee.expression) &&
    callee.expression.text === "z" &&
    callee.name.text === "array"
  ) {
    const item = node.arguments[0];
    const fields = item === undefined ? EMPTY.fields : expressionTree(sources, file, item, depth + 1).fields;
    return { description: undefined, fields };
  }
  // A method chain (`.optional()`, `.readonly()`, `.superRefine(…)`): the schema is its receiver.
  if (
    ts.isPropertyAccessExpression(callee) &&
    !(ts.isIdentifier(callee.expression) && callee.expression.text === "z")
  ) {
    return expressionTree(sources, file, callee.expression, depth + 1);
  }
  return EMPTY;
}

function shapeFields(
  sources: SourceFiles,
  file: string,
  shape: ts.ObjectLiteralExpression,
  depth: number,
): Map<string, CommentTree> {
  const fields = new Map<string, CommentTree>();
  for (const property of shape.properties) {
    if (ts.isSpreadAssignment(property)) {
      for (const [name, tree] of expressionTree(sources, file, property.expression, depth + 1).fields) {
        fields.set(name, tree);
      }
      continue;
    }
    const name = property.name === undefined ? undefined : propertyName(property.name);
    if (name === undefined) continue;
    const own = docComment(property);
    const value = ts.isPropertyAssignment(property)
      ? expressionTree(sources, file, property.initializer, depth + 1)
      : ts.isShorthandPropertyAssignment(property)
        ? expressionTree(sources, file, property.name, depth + 1)
        : EMPTY;
    fields.set(name, { description: own ?? value.description, fields: value.fields });
  }
  return fields;
}

function propertyName(name: ts.PropertyName): string | undefined {
  if (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name)) return name.text;
  return undefined;
}

/** The text of the JSDoc block right before a node, on one line. */
function docComment(node: ts.Node): string | undefined {
  const blocks = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const last = blocks.at(-1);
  const text = last === undefined ? undefined : ts.getTextOfJSDocComment(last.comment);
  const flat = text?.replace(/\s+/g, " ").trim();
  return flat === undefined || flat === "" ? undefined : flat;
}

/** Parsed files and their top-level declarations and imports, each parsed once. */
class SourceFiles {
  private readonly parsed = new Map<string, ts.SourceFile>();

  declaration(file: string, name: string): Declared | undefined {
    for (const statement of this.source(file).statements) {
      if (!ts.isVariableStatement(statement)) continue;
      for (const declaration of statement.declarationList.declarations) {
        if (ts.isIdentifier(declaration.name) && declaration.name.text === name) {
          // The JSDoc attaches to the statement (`/** … */ export const x = …`).
          return { file, description: docComment(declaration), initializer: declaration.initializer };
        }
      }
    }
    return undefined;
  }

  /** A name as seen from `file`: declared there, or imported / re-exported from a relative module. */
  resolve(file: string, name: string): Declared | undefined {
    const local = this.declaration(file, name);
    if (local !== undefined) return local;
    for (const statement of this.source(file).statements) {
      const from =
        (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) &&
        statement.moduleSpecifier !== undefined &&
        ts.isStringLiteral(statement.moduleSpecifier)
          ? statement.moduleSpecifier.text
          : undefined;
      if (from === undefined || !from.startsWith(".")) continue;
      const imported = importedName(statement, name);
      if (imported === undefined) continue;
      const target = join(dirname(file), from);
      return existsSync(target) ? this.resolve(target, imported) : undefined;
    }
    return undefined;
  }

  private source(file: string): ts.SourceFile {
    let source = this.parsed.get(file);
    if (source === undefined) {
      source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
      this.parsed.set(file, source);
    }
    return source;
  }
}

/** The name `local` has in the module a statement imports from (`import { a as local }`). */
function importedName(statement: ts.Statement, local: string): string | undefined {
  if (ts.isImportDeclaration(statement)) {
    const bindings = statement.importClause?.namedBindings;
    if (bindings === undefined || !ts.isNamedImports(bindings)) return undefined;
    const element = bindings.elements.find((e) => e.name.text === local);
    return element === undefined ? undefined : (element.propertyName?.text ?? element.name.text);
  }
  if (ts.isExportDeclaration(statement) && statement.exportClause !== undefined) {
    if (!ts.isNamedExports(statement.exportClause)) return undefined;
    const element = statement.exportClause.elements.find((e) => e.name.text === local);
    return element === undefined ? undefined : (element.propertyName?.text ?? element.name.text);
  }
  return undefined;
}
