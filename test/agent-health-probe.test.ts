/**
 * The agent's health probes against real HTTP servers: passing, failing, refused, too slow,
 * and a prober reporting every interval until stopped; and the free port a replica gets.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { freePort, HealthProber, probe } from "../agent/health-probe.ts";
import type { ProbeReport } from "../functions/core/deployments/health.ts";
import { until } from "./support/until.ts";

let server: Server;
let port: number;
const hold: (() => void)[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/slow") {
      hold.push(() => res.end("late"));
      return;
    }
    res.statusCode = req.url === "/" ? 200 : req.url === "/moved" ? 302 : 500;
    res.end("x");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const release of hold) release();
  await new Promise((resolve) => server.close(resolve));
});

const target = (path: string, over: Partial<{ port: number; timeoutMs: number }> = {}) => ({
  host: "127.0.0.1",
  port,
  path,
  timeoutMs: 1_000,
  ...over,
});

describe("one probe", () => {
  test.each([
    ["/", { ok: true, httpStatus: 200 }],
    ["/moved", { ok: true, httpStatus: 302 }],
    ["/broken", { ok: false, httpStatus: 500, message: "HTTP 500" }],
  ])("GET %s", async (path, expected) => {
    const report = await probe(target(path), () => 42);
    expect(report).toEqual({ ...expected, atMs: 42 });
  });

  test("nothing listening: the connection's error", async () => {
    const closed = await freePort();
    expect(await probe(target("/", { port: closed }), () => 1)).toEqual({
      ok: false,
      message: "ECONNREFUSED",
      atMs: 1,
    });
  });

  test("no answer within the timeout", async () => {
    expect(await probe(target("/slow", { timeoutMs: 100 }), () => 1)).toEqual({
      ok: false,
      message: "no answer within 100 ms",
      atMs: 1,
    });
  });
});

test("a prober reports every interval until stopped", async () => {
  const reports: ProbeReport[] = [];
  const prober = new HealthProber({ target: target("/"), intervalMs: 20, onReport: (r) => reports.push(r) });
  prober.start();
  await until("three reports", () => (reports.length >= 3 ? true : undefined));
  prober.stop();
  const count = reports.length;
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(reports.length).toBe(count);
  expect(reports.every((r) => r.ok)).toBe(true);
  expect(reports.map((r) => r.atMs)).toEqual([...reports.map((r) => r.atMs)].sort((a, b) => a - b));
});

test("a free port is one a server can listen on", async () => {
  const free = await freePort();
  const probeServer = createServer();
  await new Promise<void>((resolve) => probeServer.listen(free, "127.0.0.1", resolve));
  expect((probeServer.address() as AddressInfo).port).toBe(free);
  await new Promise((resolve) => probeServer.close(resolve));
});
