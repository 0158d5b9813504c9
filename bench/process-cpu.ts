/** CPU time of another process, from /proc (the benches' figures of DynamoDB Local and the agents). */
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux architecture Node runs on). */
const USER_HZ = 100;

/** User + system CPU seconds in a /proc `stat` file's text (a process's or one of its threads'). */
function statCpuSeconds(stat: string): number {
  // Fields after the command name (which may hold spaces): state is the first, utime the 12th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
}

/** User + system CPU seconds of a process so far, from /proc (0 where /proc cannot tell). */
export function processCpuSeconds(pid: number): number {
  try {
    return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return 0;
  }
}

/**
 * User + system CPU seconds so far of a process's live threads whose name matches `name` (0 where
 * /proc cannot tell). HotSpot names its JIT threads `C1 CompilerThre…` and `C2 CompilerThre…`.
 * Compiler threads are long-lived, so none of their time is lost with an exited thread.
 */
export function threadCpuSeconds(pid: number, name: RegExp): number {
  let seconds = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        if (!name.test(readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8"))) continue;
        seconds += statCpuSeconds(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8"));
      } catch {
        // The thread ended between the listing and the read.
      }
    }
  } catch {
    return 0;
  }
  return seconds;
}

/** HotSpot's JIT compiler threads (C1 and C2). */
export const JIT_THREADS = /^C\d CompilerThre/;
