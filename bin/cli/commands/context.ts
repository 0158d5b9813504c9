import type { CairnApi } from "../cairn-api.ts";
import type { CliIo } from "../io.ts";

/** What a command runs with: the outside world and a connection to Cairn. */
export interface CommandContext {
  readonly io: CliIo;
  readonly api: CairnApi;
}
