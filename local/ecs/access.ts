/**
 * Who may call the embedded ECS: only the control plane (the functions), as in the stack only
 * the functions' roles are granted `ecs:RunTask`/`ecs:StopTask`; the CLI's and the agents'
 * credentials are refused with AccessDeniedException. Signatures are checked with the runtime's
 * credentials like every other endpoint's.
 */
import { compilePolicy, type AwsAuthOptions } from "../aws-json/index.ts";

export function ecsAuth(
  base: AwsAuthOptions,
  principals: readonly string[] = ["control-plane"],
): AwsAuthOptions {
  return {
    ...base,
    authorize: compilePolicy([{ sid: "EcsCallers", principals, actions: ["ecs:*"], resources: ["*"] }]),
  };
}
