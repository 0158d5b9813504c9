/**
 * The errors of the embedded ECS, with the `__type` codes the real service sends (all HTTP 400
 * but ServerException), so `@aws-sdk/client-ecs` raises the same typed exceptions
 * (`ClientException`, `InvalidParameterException`, `ClusterNotFoundException`) as on AWS.
 * Messages are AWS's where they are documented or widely quoted; the rest say what is wrong.
 */
import { AwsJsonError } from "../aws-json/errors.ts";

export const EcsErrorCode = {
  Client: "ClientException",
  InvalidParameter: "InvalidParameterException",
  ClusterNotFound: "ClusterNotFoundException",
  Conflict: "ConflictException",
  Server: "ServerException",
} as const;
export type EcsErrorCode = (typeof EcsErrorCode)[keyof typeof EcsErrorCode];

export class EcsError extends AwsJsonError {
  declare readonly code: EcsErrorCode;
  constructor(code: EcsErrorCode, message: string, members?: Readonly<Record<string, unknown>>) {
    super(code, message, {
      httpStatus: code === EcsErrorCode.Server ? 500 : 400,
      ...(members ? { members } : {}),
    });
  }
}

export const invalidParameter = (message: string) => new EcsError(EcsErrorCode.InvalidParameter, message);
export const clientError = (message: string) => new EcsError(EcsErrorCode.Client, message);
export const clusterNotFound = () => new EcsError(EcsErrorCode.ClusterNotFound, "Cluster not found.");
export const serverError = (message: string) => new EcsError(EcsErrorCode.Server, message);
/** RunTask's: the client token was used with other parameters; `resourceIds` are its tasks. */
export const clientTokenConflict = (taskArns: readonly string[]) =>
  new EcsError(EcsErrorCode.Conflict, "The clientToken is already in use with a different RunTask request.", {
    resourceIds: [...taskArns],
  });
