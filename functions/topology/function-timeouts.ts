/**
 * Each function's timeout, in seconds, apart from the rest of the topology (index.ts declares
 * the functions with these): a function reads its own to bound the leases it holds
 * (functions/app/serialized.ts) without carrying the whole topology in its bundle.
 */
export const FUNCTION_TIMEOUT_SECONDS = {
  Coordinator: 60,
  EnterStage: 30,
  Deployments: 60,
  EnterFamilyStage: 30,
} as const;
