/**
 * CDK `definitionSubstitutions` semantics for the embedded runtime: every `${Key}` in the
 * definition text is replaced by the literal value (no escaping, as CloudFormation does), and a
 * placeholder left without a value is an error, not a silently broken ARN at run time.
 */
import { UnresolvedSubstitutionError } from "./errors.ts";

const PLACEHOLDER = /\$\{([^}]*)\}/g;

export function substituteDefinition(text: string, substitutions: Readonly<Record<string, string>>): string {
  const missing = new Set<string>();
  const result = text.replace(PLACEHOLDER, (whole, key: string) => {
    const value = Object.hasOwn(substitutions, key) ? substitutions[key] : undefined;
    if (typeof value !== "string") {
      missing.add(key);
      return whole;
    }
    return value;
  });
  if (missing.size > 0) throw new UnresolvedSubstitutionError([...missing].sort());
  return result;
}
