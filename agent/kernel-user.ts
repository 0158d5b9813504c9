/**
 * Kernels as an unprivileged user (`cairn agent --kernel-user NAME`), as Slurm runs each job as
 * its user: an agent running as root starts every kernel with that user's uid, gid and groups,
 * so the kernel cannot read the agent's credentials (its process, its files, root's home) nor
 * signal or trace the agent. Without it a kernel runs as the agent's user and can read whatever
 * that user can (docs/agents.md, "Kernel user").
 *
 * The switch is made by `setpriv` (util-linux) at the last exec, after the kernel joined its
 * container (a cgroup is joined by the root wrapper, which the kernel user could not do).
 *
 * A run's directory stays the agent's (its logs and markers, which the agent writes as root, in
 * a directory the kernel cannot add links to); the kernel works in `work/` inside it, owned by
 * the kernel user, and writes its termination message into a file made for it.
 */
import { execFileSync } from "node:child_process";
import {
  chownSync,
  closeSync,
  fchmodSync,
  fchownSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  constants,
} from "node:fs";
import { dirname, join } from "node:path";
import { InvalidAgentInputError } from "./errors.ts";

export interface KernelUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  /** The user's home directory: the kernel's HOME. */
  readonly home: string;
}

/** The kernel's working directory inside its run's directory, when it runs as a kernel user. */
export const KERNEL_USER_WORK_DIR = "work";

/**
 * The user's passwd entry, by name or uid (`getent passwd`, so NSS users count; /etc/passwd
 * where there is no getent). Throws naming `--kernel-user` when there is none.
 */
export function lookUpKernelUser(name: string): KernelUser {
  if (name === "" || /[\s:]/.test(name)) {
    throw new InvalidAgentInputError(
      "--kernel-user",
      `must be a user name or uid, got ${JSON.stringify(name)}`,
    );
  }
  let line: string | undefined;
  try {
    line = execFileSync("getent", ["passwd", name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
      .split("\n")
      .find((l) => l !== "");
  } catch (error) {
    // getent exits 2 for "no such user"; without getent, read the file.
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      line = readFileSync("/etc/passwd", "utf8")
        .split("\n")
        .find((l) => l.split(":")[0] === name || l.split(":")[2] === name);
    }
  }
  const fields = line?.split(":");
  if (fields === undefined || fields.length < 7) {
    throw new InvalidAgentInputError("--kernel-user", `no user ${name} on this host (getent passwd ${name})`);
  }
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  if (!Number.isSafeInteger(uid) || !Number.isSafeInteger(gid)) {
    throw new InvalidAgentInputError(
      "--kernel-user",
      `user ${name} has no numeric uid and gid in its passwd entry`,
    );
  }
  return { name: fields[0] ?? name, uid, gid, home: fields[5] || "/" };
}

/**
 * Whether this agent can run kernels as `user`: it must be root (only root can switch to another
 * user), the user must not be root, `setpriv` must be installed, and the user must be able to
 * reach the work root (every directory above it searchable by the user). Throws naming the option.
 */
export function checkKernelUser(user: KernelUser, workRoot: string, setprivPath: string | undefined): void {
  const euid = process.geteuid?.();
  if (euid !== 0) {
    throw new InvalidAgentInputError(
      "--kernel-user",
      `the agent must run as root to start kernels as ${user.name} (it runs as uid ${euid ?? "unknown"})`,
    );
  }
  if (user.uid === 0) {
    throw new InvalidAgentInputError("--kernel-user", `${user.name} is root; name an unprivileged user`);
  }
  if (setprivPath === undefined) {
    throw new InvalidAgentInputError(
      "--kernel-user",
      "needs setpriv (util-linux) on the PATH to switch each kernel to the user",
    );
  }
  for (let dir = workRoot; ; dir = dirname(dir)) {
    let stat;
    try {
      stat = statSync(dir);
    } catch {
      if (dir === dirname(dir)) break;
      continue; // not made yet: the agent makes it, searchable (0755)
    }
    const searchable =
      stat.uid === user.uid
        ? (stat.mode & 0o100) !== 0
        : stat.gid === user.gid
          ? (stat.mode & 0o010) !== 0
          : (stat.mode & 0o001) !== 0;
    if (!searchable) {
      throw new InvalidAgentInputError(
        "--work-root",
        `${user.name} cannot reach ${workRoot}: ${dir} is not searchable by it (mode ${(stat.mode & 0o777).toString(8)}); ` +
          "put the work root where the kernel user can reach it, e.g. /var/lib/cairn/work",
      );
    }
    if (dir === dirname(dir)) break;
  }
}

/**
 * The kernel user's places in a run's directory: `work/` (its working directory) and its
 * termination-log file, both owned by the user. The run directory itself stays the agent's, so
 * the kernel cannot put links where the agent (root) writes or reads. Returns the work directory.
 */
export function prepareKernelUserDirs(runDir: string, terminationLog: string, user: KernelUser): string {
  const work = join(runDir, KERNEL_USER_WORK_DIR);
  mkdirSync(work, { recursive: true, mode: 0o700 });
  chownSync(work, user.uid, user.gid);
  // O_NOFOLLOW: the run directory is the agent's, but a path is never trusted to be a file.
  const fd = openSync(terminationLog, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${terminationLog} is not a regular file`);
    fchownSync(fd, user.uid, user.gid);
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
  return work;
}

/**
 * The exec that becomes the kernel: `setpriv` switches to the user (its uid, gid and groups)
 * and execs the command, keeping the pid.
 */
export function asKernelUser(
  user: KernelUser,
  setprivPath: string,
  executable: string,
  args: readonly string[],
): { readonly file: string; readonly args: readonly string[] } {
  return {
    file: setprivPath,
    args: [`--reuid=${user.uid}`, `--regid=${user.gid}`, "--init-groups", "--", executable, ...args],
  };
}
