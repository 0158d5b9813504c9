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
  Server: "ServerException",
} as const;
export type EcsErrorCode = (typeof EcsErrorCode)[keyof typeof EcsErrorCode];

export class EcsError extends AwsJsonError {
  declare readonly code: EcsErrorCode;
  constructor(code: EcsErrorCode, message: string) {
    super(code, message, { httpStatus: code === EcsErrorCode.Server ? 500 : 400 });
  }
}

export const invalidParameter = (message: string) => new EcsError(EcsErrorCode.InvalidParameter, message);
export const clientError = (message: string) => new EcsError(EcsErrorCode.Client, message);
export const clusterNotFound = () => new EcsError(EcsErrorCode.ClusterNotFound, "Cluster not found.");
