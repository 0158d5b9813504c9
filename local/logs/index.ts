/** The embedded CloudWatch Logs: the store, its operations and the AWS JSON 1.1 endpoint. */
export { startLogsServer, type LogsServer, type LogsServerOptions } from "./server.ts";
export { LogsStore, type LogsStoreOptions, type StoredEvent } from "./store.ts";
export { LOGS_LIMITS } from "./limits.ts";
export {
  InvalidParameterError,
  LocalLogsError,
  ResourceAlreadyExistsError,
  ResourceNotFoundError,
  ServiceUnavailableError,
  ThrottlingError,
} from "./errors.ts";
export { LogsFaultConfigError, logsFaultsFromEnv, parseLogsFaults, type LogsFaults } from "./faults.ts";
