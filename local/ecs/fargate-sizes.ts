/**
 * Fargate's task sizes (Amazon ECS Developer Guide, "Task CPU and memory", Linux): each task
 * CPU value in CPU units allows these memory values in MiB. RegisterTaskDefinition (and a
 * RunTask override) with any other pair fails with "No Fargate configuration exists for given
 * values."
 */
const range = (from: number, to: number, step: number): number[] =>
  Array.from({ length: (to - from) / step + 1 }, (_, i) => from + i * step);

export const FARGATE_MEMORY_BY_CPU: ReadonlyMap<number, readonly number[]> = new Map([
  [256, [512, 1024, 2048]],
  [512, range(1024, 4096, 1024)],
  [1024, range(2048, 8192, 1024)],
  [2048, range(4096, 16384, 1024)],
  [4096, range(8192, 30720, 1024)],
  [8192, range(16384, 61440, 4096)],
  [16384, range(32768, 122880, 8192)],
]);

export function isFargateSize(cpu: number, memoryMiB: number): boolean {
  return FARGATE_MEMORY_BY_CPU.get(cpu)?.includes(memoryMiB) ?? false;
}

/**
 * ECS accepts "1024", "1 vCPU" or "1 vcpu" for task cpu and "2048", "2 GB" or "2 gb" for
 * memory, and stores the integer form. Undefined when the text is neither.
 */
export function cpuUnits(text: string): number | undefined {
  const units = /^\s*(\d+)\s*$/.exec(text);
  if (units) return Number(units[1]);
  const vcpu = /^\s*(\d+(?:\.\d+)?)\s*vcpu\s*$/i.exec(text);
  return vcpu ? Math.round(Number(vcpu[1]) * 1024) : undefined;
}

export function memoryMiB(text: string): number | undefined {
  const mib = /^\s*(\d+)\s*$/.exec(text);
  if (mib) return Number(mib[1]);
  const gb = /^\s*(\d+(?:\.\d+)?)\s*gb\s*$/i.exec(text);
  return gb ? Math.round(Number(gb[1]) * 1024) : undefined;
}
