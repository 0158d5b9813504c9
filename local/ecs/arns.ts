/** ECS resource names and ARNs in the long ARN format (`task/<cluster>/<id>`). */
import { randomBytes, randomUUID } from "node:crypto";

export interface Scope {
  readonly region: string;
  readonly account: string;
}

export const clusterArn = (s: Scope, name: string) => `arn:aws:ecs:${s.region}:${s.account}:cluster/${name}`;
export const taskArn = (s: Scope, cluster: string, id: string) =>
  `arn:aws:ecs:${s.region}:${s.account}:task/${cluster}/${id}`;
export const containerArn = (s: Scope, cluster: string, taskId: string) =>
  `arn:aws:ecs:${s.region}:${s.account}:container/${cluster}/${taskId}/${randomUUID()}`;
export const taskDefinitionArn = (s: Scope, family: string, revision: number) =>
  `arn:aws:ecs:${s.region}:${s.account}:task-definition/${family}:${revision}`;

/** A task id as ECS makes them: 32 lowercase hex digits. */
export const newTaskId = () => randomBytes(16).toString("hex");

/** `cairn` or `arn:aws:ecs:…:cluster/cairn` → `cairn`; the default cluster when none is given. */
export function clusterNameOf(reference: string | undefined): string {
  if (reference === undefined || reference === "") return "default";
  const arn = /^arn:aws[a-z-]*:ecs:[^:]*:[^:]*:cluster\/(.+)$/.exec(reference);
  return arn ? arn[1]! : reference;
}

/** A task's id from its id or ARN (long or short format). */
export function taskIdOf(reference: string): string {
  return reference.slice(reference.lastIndexOf("/") + 1);
}
