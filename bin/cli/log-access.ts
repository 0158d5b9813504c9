/**
 * Where the CLI reads kernel output: the kernel log group on CloudWatch Logs (the agents ship it
 * there, agent/log-shipper.ts). A deployed stack names the group in its `KernelLogGroupName`
 * output; the local runtime in its runtime file (with its CloudWatch Logs endpoint); `--endpoint`
 * alone in CAIRN_KERNEL_LOG_GROUP_NAME. Missing, `logs` says why and what to do, while every
 * other command still works.
 */
import { z } from "zod";

/** The stack output naming the kernel log group. */
export const KERNEL_LOG_GROUP_OUTPUT = "KernelLogGroupName";
/** For `--endpoint` without `--stack`, as the other names come from CAIRN_TABLE_NAME etc. */
export const KERNEL_LOG_GROUP_ENV = "CAIRN_KERNEL_LOG_GROUP_NAME";

export type LogAccess =
  | {
      readonly readable: true;
      readonly logGroupName: string;
      /** Undefined: the SDK's own resolution (AWS, or AWS_ENDPOINT_URL_CLOUDWATCH_LOGS). */
      readonly endpoint?: string;
    }
  | { readonly readable: false; readonly why: string };

export function stackLogAccess(
  outputs: Readonly<Record<string, string>>,
  where: string,
  endpoint: string | undefined,
): LogAccess {
  const logGroupName = nonEmpty(outputs[KERNEL_LOG_GROUP_OUTPUT]);
  if (logGroupName === undefined) {
    return {
      readable: false,
      why:
        `${where} lacks the output ${KERNEL_LOG_GROUP_OUTPUT}: it was deployed before kernel output went to ` +
        "CloudWatch Logs; deploy it again (`cdk deploy`) to read logs",
    };
  }
  return { readable: true, logGroupName, ...(endpoint === undefined ? {} : { endpoint }) };
}

export function endpointLogAccess(
  env: Readonly<Record<string, string | undefined>>,
  endpoint: string,
): LogAccess {
  const logGroupName = nonEmpty(env[KERNEL_LOG_GROUP_ENV]);
  return logGroupName === undefined
    ? {
        readable: false,
        why: `--endpoint alone does not say which log group holds the kernels' output: pass --stack NAME (or set ${KERNEL_LOG_GROUP_ENV})`,
      }
    : { readable: true, logGroupName, endpoint };
}

/** The runtime file's part about logs: `kernelLogGroupName` and `endpoints.logs`. */
const RuntimeLogsSchema = z.object({
  kernelLogGroupName: z.string().regex(/^[.\-_/#A-Za-z0-9]{1,512}$/),
  endpoints: z.object({ logs: z.url() }),
});

/** From the runtime file's parsed JSON (the rest of it is target.ts's). */
export function runtimeLogAccess(json: unknown, runtimeFile: string): LogAccess {
  const parsed = RuntimeLogsSchema.safeParse(json);
  if (!parsed.success) {
    return {
      readable: false,
      why:
        `the runtime file ${runtimeFile} names no kernel log group and CloudWatch Logs endpoint ` +
        "(kernelLogGroupName, endpoints.logs: an older runtime): restart it (`npm start`) to read logs",
    };
  }
  return {
    readable: true,
    logGroupName: parsed.data.kernelLogGroupName,
    endpoint: parsed.data.endpoints.logs,
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}
