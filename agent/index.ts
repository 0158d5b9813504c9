/** The agent: runs kernels as real child processes on its host (cairn agent, and npm start's agents). */
export { LocalAgent, type LocalAgentOptions, type LogListener } from "./local-agent.ts";
export {
  ExecutableNotFoundError,
  ExecutableNotRunnableError,
  InvalidAgentInputError,
  LocalAgentError,
  LogsNotFoundError,
} from "./errors.ts";
export { formatLogLine } from "./log-reader.ts";
export { KernelReportStatus } from "./types.ts";
export type {
  AgentCapacity,
  AgentCondition,
  AgentUsage,
  KernelLaunch,
  KernelReport,
  LogLine,
  LogPaths,
  LogStream,
  MemoryPollStats,
  RunningKernel,
  StopOptions,
} from "./types.ts";
