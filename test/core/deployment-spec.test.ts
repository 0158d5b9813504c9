/**
 * A deployment's spec (refused with every field named) and a route's health from its probes
 * (HealthCheckRoute's SUCCESS / FAILURE / STALE), case by case.
 */
import { describe, expect, test } from "vitest";
import {
  applyProbes,
  healthVerdict,
  initialHealth,
  staleAfterMs,
  type ProbeReport,
} from "../../functions/core/deployments/health.ts";
import {
  HEALTH_CHECK_DEFAULTS,
  parseDeploymentSpec,
  serviceSessionSpec,
} from "../../functions/core/deployments/spec.ts";
import { parseSessionSpec, SpecValidationError } from "../../functions/core/spec.ts";

const T0 = 1_767_225_600_000;
const SERVICE = { command: ["python3", "-m", "http.server"] };

function issues(input: unknown): string[] {
  try {
    parseDeploymentSpec(input);
  } catch (error) {
    if (error instanceof SpecValidationError) return error.issues.map((i) => `${i.path}: ${i.message}`);
    throw error;
  }
  throw new Error("expected the spec to be refused");
}

describe("a deployment spec", () => {
  test("defaults: GET / every 5 s, 2 s timeout, 1 success or 3 failures in a row", () => {
    const spec = parseDeploymentSpec({ name: "web", replicas: 3, service: SERVICE });
    expect(spec.healthCheck).toEqual(HEALTH_CHECK_DEFAULTS);
    expect(spec.service).toMatchObject({ queue: "default", priority: 0, env: {} });
  });

  test.each([
    [{ replicas: -1 }, "replicas: must be at least 0"],
    [{ replicas: 1.5 }, "replicas: must be an integer"],
    [{ replicas: 65 }, "replicas: must be at most 64"],
    [{ service: { ...SERVICE, port: 0 } }, "service.port: must be at least 1"],
    [{ service: { ...SERVICE, port: 70_000 } }, "service.port: must be at most 65535"],
    [{ colour: "blue" }, "colour: unknown field"],
    [{ service: { ...SERVICE, replicas: 2 } }, "service.replicas: unknown field"],
    [
      { healthCheck: { path: "health" } },
      "healthCheck.path: must be a URL path starting with '/', without spaces",
    ],
    [
      { healthCheck: { intervalSeconds: 2, timeoutSeconds: 3 } },
      "healthCheck.timeoutSeconds: is 3 (2 when not given) and must be less than intervalSeconds (2)",
    ],
    // The timeout left out is its default, and the message says so.
    [
      { healthCheck: { intervalSeconds: 2 } },
      "healthCheck.timeoutSeconds: is 2 (2 when not given) and must be less than intervalSeconds (2): a probe ends before the next one starts",
    ],
    [{ healthCheck: { unhealthyThreshold: 0 } }, "healthCheck.unhealthyThreshold: must be at least 1"],
    [{ service: { command: [] } }, "service.command:"],
    [{ service: { ...SERVICE, env: { CAIRN_PORT: "80" } } }, "service.env.CAIRN_PORT:"],
  ])("%o is refused: %s", (over, expected) => {
    const found = issues({ name: "web", replicas: 3, service: SERVICE, ...over });
    expect(
      found.some((i) => i.startsWith(expected)),
      `${JSON.stringify(found)} has ${expected}`,
    ).toBe(true);
  });

  test("a missing service and replicas are named", () => {
    expect(issues({ name: "web" })).toEqual(
      expect.arrayContaining([expect.stringMatching(/^replicas: /), expect.stringMatching(/^service: /)]),
    );
  });

  test("a replica's session spec: one kernel of the service, running as long as an execution may", () => {
    const spec = parseDeploymentSpec({
      name: "web",
      replicas: 3,
      service: { ...SERVICE, resources: { cpu: 0.5 }, queue: "svc", nodeSelector: { zone: "a" } },
    });
    const session = serviceSessionSpec(spec);
    expect(session).toMatchObject({
      name: "web",
      replicas: 1,
      queue: "svc",
      command: SERVICE.command,
      resources: { cpu: 0.5, memoryMiB: 256 },
      nodeSelector: { zone: "a" },
      timeouts: { running: 31_536_000 },
    });
    // What the session lifecycle itself would accept.
    expect(parseSessionSpec(session)).toEqual(session);
  });
});

describe("a route's health from its probes", () => {
  const check = HEALTH_CHECK_DEFAULTS;
  const ok = (s: number): ProbeReport => ({ ok: true, atMs: T0 + s * 1000, httpStatus: 200 });
  const bad = (s: number, message = "HTTP 500"): ProbeReport => ({ ok: false, atMs: T0 + s * 1000, message });

  test.each([
    // [probes (seconds after the route was first checked), now (s), verdict or none]
    [[], 1, undefined],
    [[], 13, "STALE: no health report in 13 s (expected every 5 s)"],
    [[ok(5)], 6, "SUCCESS: GET / passed 1 time(s) in a row"],
    [[bad(5)], 6, undefined],
    [[bad(5), bad(10)], 11, undefined],
    [[bad(5), bad(10), bad(15)], 16, "FAILURE: GET / failed 3 time(s) in a row: HTTP 500"],
    [[bad(5), bad(10), ok(15)], 16, "SUCCESS: GET / passed 1 time(s) in a row"],
    [[ok(5), bad(10)], 11, undefined],
    [[ok(5)], 18, "STALE: last health report 13 s ago (expected every 5 s)"],
    [[bad(5), bad(10), bad(15)], 30, "STALE: last health report 15 s ago (expected every 5 s)"],
  ] as const)("probes %o at %d s: %s", (probes, now, expected) => {
    const health = applyProbes(initialHealth(T0), probes);
    const verdict = healthVerdict(health, check, T0 + now * 1000);
    expect(verdict ? `${verdict.result}: ${verdict.message}` : undefined).toBe(expected);
  });

  test("probes count in time order; a late or repeated one changes nothing", () => {
    const inOrder = applyProbes(initialHealth(T0), [bad(5), bad(10), bad(15)]);
    expect(applyProbes(initialHealth(T0), [bad(15), bad(5), bad(10)])).toEqual(inOrder);
    expect(applyProbes(inOrder, [ok(10), bad(15)])).toEqual(inOrder);
  });

  test("stale after two intervals and a timeout", () => {
    expect(staleAfterMs(check)).toBe(12_000);
    expect(staleAfterMs({ ...check, intervalSeconds: 30, timeoutSeconds: 5 })).toBe(65_000);
  });
});
