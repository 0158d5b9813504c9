/**
 * `cairn agent --kernel-user` and `--credentials-fd`: checked before anything starts, each bad
 * value refused naming the option and the reason.
 */
import { mkdtempSync, openSync, rmSync, writeFileSync, chmodSync, fstatSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { checkKernelUser, lookUpKernelUser, asKernelUser } from "../agent/kernel-user.ts";
import { parseCommandLine } from "../bin/cli/args.ts";
import { readCredentialsFd } from "../bin/cli/commands/agent.ts";

const scratch = mkdtempSync(join(tmpdir(), "cairn-kernel-user-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function fdOf(text: string): number {
  const path = join(scratch, `c-${Math.random().toString(36).slice(2)}`);
  writeFileSync(path, text);
  return openSync(path, "r");
}

describe("--credentials-fd", () => {
  test("given a descriptor with the agent's credentials, when read, then they are returned and the descriptor is closed", () => {
    const fd = fdOf('{"accessKeyId":"AKIDAGENT","secretAccessKey":"s3cret"}');
    expect(readCredentialsFd(fd)).toEqual({ accessKeyId: "AKIDAGENT", secretAccessKey: "s3cret" });
    expect(() => fstatSync(fd)).toThrow(/EBADF/);
  });

  test.each([
    ["not JSON", "AKID s3cret", '--credentials-fd N: not JSON (expected {"accessKeyId","secretAccessKey"})'],
    [
      "a field missing",
      '{"accessKeyId":"AKID"}',
      "--credentials-fd N: secretAccessKey: Invalid input: expected string, received undefined",
    ],
    [
      "an unknown field",
      '{"accessKeyId":"A","secretAccessKey":"s","region":"x"}',
      '--credentials-fd N: (root): Unrecognized key: "region"',
    ],
  ])("given %s, when read, then it is refused naming the option", (_what, text, message) => {
    const fd = fdOf(text);
    expect(() => readCredentialsFd(fd)).toThrow(message.replace("N", String(fd)));
  });

  test("a descriptor below 3 is refused when parsed", () => {
    expect(() => parseCommandLine(["agent", "--credentials-fd", "1"])).toThrow(
      '--credentials-fd must be a file descriptor number of 3 or more, got "1"',
    );
  });
});

describe("--kernel-user", () => {
  test("an unknown user is refused naming the option", () => {
    expect(() => lookUpKernelUser("no-such-user-here")).toThrow(
      "--kernel-user: no user no-such-user-here on this host (getent passwd no-such-user-here)",
    );
  });

  test("nobody is found with its uid, gid and home", () => {
    const user = lookUpKernelUser("nobody");
    expect(user).toMatchObject({
      name: "nobody",
      uid: expect.any(Number) as number,
      gid: expect.any(Number) as number,
    });
    expect(user.uid).toBeGreaterThan(0);
  });

  test.skipIf(process.geteuid?.() !== 0)(
    "as root: root is refused, and so is a work root the user cannot reach",
    () => {
      const root = lookUpKernelUser("root");
      expect(() => checkKernelUser(root, scratch, "/usr/bin/setpriv")).toThrow(
        "--kernel-user: root is root; name an unprivileged user",
      );
      const nobody = lookUpKernelUser("nobody");
      chmodSync(scratch, 0o700);
      expect(() => checkKernelUser(nobody, join(scratch, "work"), "/usr/bin/setpriv")).toThrow(
        `--work-root: nobody cannot reach ${join(scratch, "work")}: ${scratch} is not searchable by it (mode 700)`,
      );
      chmodSync(scratch, 0o711);
      expect(() => checkKernelUser(nobody, join(scratch, "work"), "/usr/bin/setpriv")).not.toThrow();
      expect(() => checkKernelUser(nobody, join(scratch, "work"), undefined)).toThrow(
        "--kernel-user: needs setpriv (util-linux) on the PATH to switch each kernel to the user",
      );
    },
  );

  test.skipIf(process.geteuid?.() === 0)("not as root: refused, saying the agent must be root", () => {
    expect(() => checkKernelUser(lookUpKernelUser("nobody"), scratch, "/usr/bin/setpriv")).toThrow(
      /--kernel-user: the agent must run as root to start kernels as nobody/,
    );
  });

  test("the kernel's exec: setpriv switches to the user's uid, gid and groups, then runs the command", () => {
    const user = { name: "k", uid: 1234, gid: 2345, home: "/home/k" };
    expect(asKernelUser(user, "/usr/bin/setpriv", "/bin/echo", ["hi"])).toEqual({
      file: "/usr/bin/setpriv",
      args: ["--reuid=1234", "--regid=2345", "--init-groups", "--", "/bin/echo", "hi"],
    });
  });
});
