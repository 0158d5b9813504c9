/**
 * Counts what the store sends, so a benchmark can print "DynamoDB requests per session" and
 * where they come from. Every request sent is counted (a cancelled transaction is billed too);
 * write and read capacity units are summed from `ConsumedCapacity` when the counter asks for it
 * (`new RequestCounter({ capacity: true })`; DynamoDB returns it for successful requests). Each
 * request is also counted under its purpose: the store method that sent it ("getSession",
 * "applyWrite", …), which is what docs/performance.md accounts by.
 */

export type WriteOperation =
  "PutItem" | "UpdateItem" | "DeleteItem" | "TransactWriteItems" | "BatchWriteItem";
export type ReadOperation = "GetItem" | "BatchGetItem" | "Query";

export interface WriteEvent {
  readonly operation: WriteOperation;
  /** The store method that sent it. */
  readonly purpose?: string;
  /** Items the request writes (1 for single-item writes, the action count for transactions). */
  readonly items: number;
  readonly succeeded: boolean;
  /** Write capacity units consumed, table and indexes together, when reported. */
  readonly capacityUnits?: number;
}

export interface ReadEvent {
  readonly operation: ReadOperation;
  /** The store method that sent it. */
  readonly purpose?: string;
  /** Items returned. */
  readonly items: number;
  /** Read capacity units consumed, when reported. */
  readonly capacityUnits?: number;
}

export interface StoreMetricsSink {
  /**
   * Ask DynamoDB for each request's consumed capacity (`ReturnConsumedCapacity`), so
   * `WriteEvent.capacityUnits` and `ReadEvent.capacityUnits` are set. Off unless a sink wants it: working it out costs DynamoDB
   * Local about a sixth of a write's CPU (docs/performance.md).
   */
  readonly capacity?: boolean;
  recordWrite(event: WriteEvent): void;
  recordRead(event: ReadEvent): void;
}

export interface RequestTally {
  requests: number;
  items: number;
}

export class RequestCounter implements StoreMetricsSink {
  /** Ask for consumed capacity; may be switched on before requests are sent (a benchmark does). */
  capacity: boolean;
  /** Write requests. */
  operations = 0;
  /** Items written. */
  items = 0;
  failedOperations = 0;
  /** Failed write requests (conditions, conflicts, throttling) by the store method that sent them. */
  readonly failedByPurpose = new Map<string, number>();
  capacityUnits = 0;
  /**
   * The part of `capacityUnits` that transactions reported. DynamoDB Local reports a
   * transaction's items at one unit per KB, where AWS bills two (docs/data-model.md), so a
   * benchmark adds this once more to price writes as AWS would.
   */
  transactionCapacityUnits = 0;
  /** Read capacity units, summed like `capacityUnits`. */
  readCapacityUnits = 0;
  readonly byOperation = new Map<WriteOperation, { operations: number; items: number }>();
  readonly reads: RequestTally = { requests: 0, items: 0 };
  readonly readsByOperation = new Map<ReadOperation, RequestTally>();
  /** Reads and writes by the store method that sent them: `read:getSession`, `write:applyWrite`. */
  readonly byPurpose = new Map<string, RequestTally>();

  /** `capacity`: sum the write capacity units DynamoDB reports (`capacityUnits`), asked for only then. */
  constructor(options: { capacity?: boolean } = {}) {
    this.capacity = options.capacity === true;
  }

  recordWrite(event: WriteEvent): void {
    this.operations += 1;
    this.items += event.items;
    if (!event.succeeded) {
      this.failedOperations += 1;
      const purpose = event.purpose ?? event.operation;
      this.failedByPurpose.set(purpose, (this.failedByPurpose.get(purpose) ?? 0) + 1);
    }
    this.capacityUnits += event.capacityUnits ?? 0;
    if (event.operation === "TransactWriteItems") this.transactionCapacityUnits += event.capacityUnits ?? 0;
    const entry = this.byOperation.get(event.operation) ?? { operations: 0, items: 0 };
    entry.operations += 1;
    entry.items += event.items;
    this.byOperation.set(event.operation, entry);
    tally(this.byPurpose, `write:${event.purpose ?? event.operation}`, event.items);
  }

  recordRead(event: ReadEvent): void {
    this.reads.requests += 1;
    this.reads.items += event.items;
    this.readCapacityUnits += event.capacityUnits ?? 0;
    tally(this.readsByOperation, event.operation, event.items);
    tally(this.byPurpose, `read:${event.purpose ?? event.operation}`, event.items);
  }

  reset(): void {
    this.operations = 0;
    this.items = 0;
    this.failedOperations = 0;
    this.failedByPurpose.clear();
    this.capacityUnits = 0;
    this.transactionCapacityUnits = 0;
    this.readCapacityUnits = 0;
    this.byOperation.clear();
    this.reads.requests = 0;
    this.reads.items = 0;
    this.readsByOperation.clear();
    this.byPurpose.clear();
  }
}

function tally<K>(map: Map<K, RequestTally>, key: K, items: number): void {
  const entry = map.get(key) ?? { requests: 0, items: 0 };
  entry.requests += 1;
  entry.items += items;
  map.set(key, entry);
}
