/**
 * Reads a sharded index as one ordered stream: one paged Query per (partition) cursor, all
 * started in parallel, merged by the index sort key. Because each partition is already sorted,
 * the merge yields the global order without reading more than the caller takes (plus one page
 * per partition).
 */
import type { Item } from "./item-codec.ts";

export interface IndexPage {
  readonly items: readonly Item[];
  readonly lastKey: Item | undefined;
}

export type PageFetcher = (exclusiveStartKey: Item | undefined) => Promise<IndexPage>;

class PartitionCursor {
  private buffer: Item[] = [];
  private lastKey: Item | undefined;
  private exhausted = false;
  private readonly fetch: PageFetcher;

  constructor(fetch: PageFetcher) {
    this.fetch = fetch;
  }

  async head(): Promise<Item | undefined> {
    while (this.buffer.length === 0 && !this.exhausted) {
      const page = await this.fetch(this.lastKey);
      this.buffer = [...page.items];
      this.lastKey = page.lastKey;
      this.exhausted = page.lastKey === undefined;
    }
    return this.buffer[0];
  }

  shift(): void {
    this.buffer.shift();
  }
}

export class MergedIndexStream {
  private readonly cursors: PartitionCursor[];
  private readonly sortKey: string;
  private readonly descending: boolean;

  constructor(fetchers: readonly PageFetcher[], sortKey: string, descending = false) {
    this.cursors = fetchers.map((f) => new PartitionCursor(f));
    this.sortKey = sortKey;
    this.descending = descending;
  }

  /** The next entry in index order, or undefined when every partition is exhausted. */
  async next(): Promise<Item | undefined> {
    const heads = await Promise.all(this.cursors.map((c) => c.head()));
    let best = -1;
    let bestKey = "";
    heads.forEach((head, i) => {
      if (head === undefined) return;
      const key = head[this.sortKey]?.S ?? "";
      if (best === -1 || (this.descending ? key > bestKey : key < bestKey)) {
        best = i;
        bestKey = key;
      }
    });
    if (best === -1) return undefined;
    const item = heads[best];
    this.cursors[best]?.shift();
    return item;
  }

  async take(n: number): Promise<Item[]> {
    const out: Item[] = [];
    while (out.length < n) {
      const item = await this.next();
      if (item === undefined) break;
      out.push(item);
    }
    return out;
  }
}
