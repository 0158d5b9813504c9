/**
 * Counts what the store writes, so a benchmark can print "DynamoDB writes per session". Every
 * write request sent is counted (a cancelled transaction is billed too); capacity units are
 * summed from `ConsumedCapacity` when DynamoDB returns it (it does for successful writes).
 */

export type WriteOperation =
  "PutItem" | "UpdateItem" | "DeleteItem" | "TransactWriteItems" | "BatchWriteItem";

export interface WriteEvent {
  readonly operation: WriteOperation;
  /** Items the request writes (1 for single-item writes, the action count for transactions). */
  readonly items: number;
  readonly succeeded: boolean;
  /** Write capacity units consumed, table and indexes together, when reported. */
  readonly capacityUnits?: number;
}

export interface WriteMetricsSink {
  recordWrite(event: WriteEvent): void;
}

export class WriteCounter implements WriteMetricsSink {
  operations = 0;
  items = 0;
  failedOperations = 0;
  capacityUnits = 0;
  readonly byOperation = new Map<WriteOperation, { operations: number; items: number }>();

  recordWrite(event: WriteEvent): void {
    this.operations += 1;
    this.items += event.items;
    if (!event.succeeded) this.failedOperations += 1;
    this.capacityUnits += event.capacityUnits ?? 0;
    const entry = this.byOperation.get(event.operation) ?? { operations: 0, items: 0 };
    entry.operations += 1;
    entry.items += event.items;
    this.byOperation.set(event.operation, entry);
  }

  reset(): void {
    this.operations = 0;
    this.items = 0;
    this.failedOperations = 0;
    this.capacityUnits = 0;
    this.byOperation.clear();
  }
}
