import { CoreError } from "../errors.ts";

/** Errors of the coordinator's judgment. Branch on `code`, never on `instanceof`. */
export class HandlerContractError extends CoreError {
  override readonly name = "HandlerContractError";
  readonly code = "HANDLER_CONTRACT";
  readonly sessionId: string;
  constructor(handler: string, sessionId: string, reason: string) {
    super(`${handler} returned session ${sessionId} ${reason}`);
    this.sessionId = sessionId;
  }
}
