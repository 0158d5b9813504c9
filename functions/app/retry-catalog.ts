/**
 * What retry decisions read besides the session: the retry policies, the failure categories, the
 * queues and the retry configuration operators manage with the CLI. Read through a short cache, so
 * a change applies within seconds without a restart, and a burst of finished runs costs one read
 * of each.
 */
import type { Queue, Session } from "../core/model.ts";
import type { FailureCategoryRepository } from "../core/ports/failure-categories.ts";
import type { FailureCategoryDefinition } from "../core/retry/category-definitions.ts";
import type { RetryCatalogRepository } from "../core/ports/retry-catalog.ts";
import { RETRY_CONFIG_DEFAULTS, type RetryConfig } from "../core/retry/config.ts";
import type { RetryPolicy } from "../core/retry/policy.ts";
import { resolvePolicies, type PolicyResolution } from "../core/retry/resolve.ts";
import type { Clock } from "../core/ports/clock.ts";

interface Cached<T> {
  readonly value: Promise<T>;
  readonly atMs: number;
  failed: boolean;
}

export class RetryCatalog {
  readonly #store: RetryCatalogRepository;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #categoryStore: Pick<FailureCategoryRepository, "listFailureCategories"> | undefined;
  #config: Cached<RetryConfig> | undefined;
  #categories: Cached<readonly FailureCategoryDefinition[]> | undefined;
  #policies: Cached<ReadonlyMap<string, RetryPolicy>> | undefined;
  readonly #queues = new Map<string, Cached<Queue | undefined>>();
  #queueNames: Cached<readonly string[]> | undefined;

  /** `categories` absent: no operator defines any, and the agents' built-in categories stand. */
  constructor(
    store: RetryCatalogRepository,
    clock: Clock,
    ttlMs = 5_000,
    categories?: Pick<FailureCategoryRepository, "listFailureCategories">,
  ) {
    this.#store = store;
    this.#clock = clock;
    this.#ttlMs = ttlMs;
    this.#categoryStore = categories;
  }

  /** The failure categories operators define, in the order they are checked. */
  categories(): Promise<readonly FailureCategoryDefinition[]> {
    const store = this.#categoryStore;
    if (store === undefined) return Promise.resolve([]);
    this.#categories = this.#fresh(this.#categories, () => store.listFailureCategories());
    return this.#categories.value;
  }

  config(): Promise<RetryConfig> {
    this.#config = this.#fresh(
      this.#config,
      async () => (await this.#store.getRetryConfig()) ?? RETRY_CONFIG_DEFAULTS,
    );
    return this.#config.value;
  }

  /**
   * The policies that apply to the session: its queue's, then its own, or the default. A policy
   * the session names that the cached list lacks is looked for again when that list was read
   * before the session was submitted: a policy created just before the submission that names it
   * applies to it, cache or not.
   */
  async policiesFor(session: Session): Promise<PolicyResolution> {
    const resolution = await this.#resolve(session);
    const listedAtMs = this.#policies?.atMs;
    if (resolution.missing.length === 0 || listedAtMs === undefined || listedAtMs > session.createdAtMs) {
      return resolution;
    }
    this.#policies = undefined;
    return this.#resolve(session);
  }

  async #resolve(session: Session): Promise<PolicyResolution> {
    const [config, known, queuePolicies] = await Promise.all([
      this.config(),
      this.#knownPolicies(),
      this.#queuePolicies(session.spec.queue),
    ]);
    return resolvePolicies(
      {
        queuePolicies,
        ...(session.spec.retry?.policies ? { sessionPolicies: session.spec.retry.policies } : {}),
      },
      config,
      known,
    );
  }

  #knownPolicies(): Promise<ReadonlyMap<string, RetryPolicy>> {
    this.#policies = this.#fresh(
      this.#policies,
      async () => new Map((await this.#store.listRetryPolicies()).map((p) => [p.name, p])),
    );
    return this.#policies.value;
  }

  /** The queue by name; undefined when it was never created (the `default` queue may not be). */
  queue(name: string): Promise<Queue | undefined> {
    const cached = this.#fresh(this.#queues.get(name), () => this.#store.getQueue(name));
    this.#queues.set(name, cached);
    return cached.value;
  }

  /** The names of the queues operators created (the `default` queue may not be among them). */
  queueNames(): Promise<readonly string[]> {
    this.#queueNames = this.#fresh(this.#queueNames, async () =>
      (await this.#store.listQueues()).map((q) => q.name),
    );
    return this.#queueNames.value;
  }

  async #queuePolicies(name: string): Promise<readonly string[]> {
    return (await this.queue(name))?.retryPolicies ?? [];
  }

  #fresh<T>(cached: Cached<T> | undefined, load: () => Promise<T>): Cached<T> {
    const nowMs = this.#clock.nowMs();
    if (cached && !cached.failed && nowMs - cached.atMs < this.#ttlMs) return cached;
    const entry: Cached<T> = { value: load(), atMs: nowMs, failed: false };
    // A failed read is not kept: the next decision reads again (the caller sees the error).
    entry.value.catch(() => {
      entry.failed = true;
    });
    return entry;
  }
}
