/**
 * What the deployment lifecycle needs from storage. Every write is planned from a
 * copy read before and guarded by that copy's version: a concurrent writer makes it fail with a
 * ConflictError (entity "deployment" or "route"), and the caller reads again. A deployment, its
 * routes and their history records change in one atomic write.
 */
import type { Deployment, DeploymentWithRoutes, FamilyHistoryRecord, Route } from "../deployments/model.ts";
import type { EntityState } from "./errors.ts";

/** An entity to store as `next`; "absent": it must not exist yet (a new deployment or route). */
export interface Saved<T> {
  readonly next: T;
  readonly expected: EntityState | "absent";
}

export interface DeploymentChange {
  readonly deployment?: Saved<Deployment>;
  readonly routes?: readonly Saved<Route>[];
  readonly history?: readonly FamilyHistoryRecord[];
}

/**
 * The most items one change may hold (entities and history records together): DynamoDB's
 * transaction limit. A change is atomic, so it is never split: a larger one is refused.
 */
export const MAX_CHANGE_ITEMS = 100;

export interface DeploymentRepository {
  /**
   * Writes the change atomically. Each entity is stored with version `expected.version + 1` (0
   * when new), whatever `next.version` says. Throws ConflictError naming the first entity whose
   * guard failed; nothing is written then.
   */
  saveDeployment(change: DeploymentChange): Promise<void>;
  getDeployment(id: string): Promise<DeploymentWithRoutes | undefined>;
  /** Every deployment, destroyed ones included, by id. */
  listDeployments(): Promise<Deployment[]>;
  /** The deployment's and its routes' history, oldest first. */
  deploymentHistory(id: string): Promise<FamilyHistoryRecord[]>;
}
