/**
 * The named conditions every write is built from (compose with `all` / `any`). Naming them
 * keeps each write's guard readable and lets the failure mapping say which guard failed.
 */
import type { ResourceRequest } from "../../core/model.ts";
import type { EntityState } from "../../core/ports/errors.ts";
import type { Clause } from "./expressions.ts";

export const itemExists: Clause = (e) => `attribute_exists(${e.path("pk")})`;

export const itemAbsent: Clause = (e) => `attribute_not_exists(${e.path("pk")})`;

/** The session (or deployment, or route) is still where the writer saw it. */
export const sessionAt =
  (expected: EntityState): Clause =>
  (e) =>
    `${e.path("status")} = ${e.value(expected.status)} AND ${e.path("version")} = ${e.value(expected.version)}`;

/** The kernel has no placement yet, so one reservation cannot overwrite another. */
export const kernelUnplaced =
  (at = ""): Clause =>
  (e) =>
    `attribute_not_exists(${e.path(`${at}agentId`)})`;

export const hasFreeCapacity =
  (requested: ResourceRequest): Clause =>
  (e) =>
    `${e.path("free.cpu")} >= ${e.value(requested.cpu)} AND ` +
    `${e.path("free.memoryMiB")} >= ${e.value(requested.memoryMiB)}`;

export const capacityIs =
  (capacity: ResourceRequest): Clause =>
  (e) =>
    `${e.path("capacity.cpu")} = ${e.value(capacity.cpu)} AND ` +
    `${e.path("capacity.memoryMiB")} = ${e.value(capacity.memoryMiB)}`;

/** An allocation holds exactly these resources for exactly these kernels. */
export const allocationIs =
  (resources: ResourceRequest, kernelIndexes: readonly number[]): Clause =>
  (e) =>
    `${e.path("resources.cpu")} = ${e.value(resources.cpu)} AND ` +
    `${e.path("resources.memoryMiB")} = ${e.value(resources.memoryMiB)} AND ` +
    `${e.path("kernelIndexes")} = ${e.value([...kernelIndexes])}`;

/**
 * The kernel is as the writer read it: its version (0: never written; the session item writes
 * every kernel with its version, so a missing kernel fails this too). `at` is where the kernel is
 * in the session item ("kernels.0.").
 */
export const kernelVersionIs = (version: number, at: string): Clause => versionIs(version, `${at}version`);

export const versionIs =
  (version: number, path = "version"): Clause =>
  (e) =>
    `${e.path(path)} = ${e.value(version)}`;

/** The attribute at `path` is there (a kernel in the session item: `kernels.0`). */
export const exists =
  (path: string): Clause =>
  (e) =>
    `attribute_exists(${e.path(path)})`;

/** An out-of-order heartbeat must not move the clock back. */
export const heartbeatBefore =
  (ms: number): Clause =>
  (e) =>
    `${e.path("lastHeartbeatAtMs")} < ${e.value(ms)}`;

export const incarnationIs =
  (incarnation: string): Clause =>
  (e) =>
    `${e.path("incarnation")} = ${e.value(incarnation)}`;

export const noIncarnation: Clause = (e) => `attribute_not_exists(${e.path("incarnation")})`;

export const notLost: Clause = (e) => `attribute_not_exists(${e.path("lostAtMs")})`;

export const heartbeatNotAfter =
  (nowMs: number): Clause =>
  (e) =>
    `${e.path("lastHeartbeatAtMs")} <= ${e.value(nowMs)}`;

/** TTL deletes lazily (within days), so an item past its expiry counts as absent. */
export const expiredBefore =
  (nowEpochSec: number): Clause =>
  (e) =>
    `${e.path("expiresAtEpochSec")} < ${e.value(nowEpochSec)}`;

/** No queue refers to the retry policy (its reverse references, `usedBy`, are empty). */
export const notReferenced: Clause = (e) => `attribute_not_exists(${e.path("usedBy")})`;
