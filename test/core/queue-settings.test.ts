import { describe, expect, test } from "vitest";
import {
  changeQueueFargateSettings,
  parseQueueFargateSettings,
} from "../../functions/core/queue-settings.ts";

describe("a queue's Fargate settings", () => {
  test.each([
    [{ capacityProvider: "FARGATE", vcpuQuota: 6 }],
    [{ capacityProvider: "FARGATE_SPOT", vcpuQuota: 0.25 }],
    [{ capacityProvider: "FARGATE_SPOT", vcpuQuota: 4096 }],
  ])("accepts %j", (input) => {
    expect(parseQueueFargateSettings(input)).toEqual({ ok: true, settings: input });
  });

  test.each([
    ["no settings object", null, ["fargate: expected an object, got null"]],
    [
      "a capacity provider Fargate does not have",
      { capacityProvider: "EC2", vcpuQuota: 4 },
      ["fargate.capacityProvider: must be one of FARGATE, FARGATE_SPOT"],
    ],
    [
      "a lower-case provider",
      { capacityProvider: "fargate_spot", vcpuQuota: 4 },
      ["fargate.capacityProvider: must be one of FARGATE, FARGATE_SPOT"],
    ],
    [
      "a quota of 0",
      { capacityProvider: "FARGATE", vcpuQuota: 0 },
      ["fargate.vcpuQuota: must be greater than 0"],
    ],
    [
      "a negative quota",
      { capacityProvider: "FARGATE", vcpuQuota: -2 },
      ["fargate.vcpuQuota: must be greater than 0"],
    ],
    [
      "an infinite quota",
      { capacityProvider: "FARGATE", vcpuQuota: Infinity },
      ["fargate.vcpuQuota: must be a finite number"],
    ],
    [
      "a quota as text",
      { capacityProvider: "FARGATE", vcpuQuota: "6" },
      ["fargate.vcpuQuota: expected a number, got a string"],
    ],
    [
      "both missing",
      {},
      ["fargate.capacityProvider: must be one of FARGATE, FARGATE_SPOT", "fargate.vcpuQuota: required"],
    ],
    [
      "an unknown field",
      { capacityProvider: "FARGATE", vcpuQuota: 4, subnets: ["subnet-1"] },
      ["fargate.subnets: unknown field (expected one of capacityProvider, vcpuQuota)"],
    ],
  ])("refuses %s, naming the field", (_label, input, expected) => {
    const result = parseQueueFargateSettings(input);
    expect(result.ok ? [] : result.issues.map((i) => `${i.path}: ${i.message}`)).toEqual(expected);
  });
});

describe("changing a queue's Fargate settings (cairn queue create|update)", () => {
  const SPOT = { capacityProvider: "FARGATE_SPOT", vcpuQuota: 8 } as const;
  test.each([
    ["nothing given keeps them", SPOT, undefined, SPOT],
    ["nothing given on a queue without them", undefined, undefined, undefined],
    ["null removes them", SPOT, null, undefined],
    [
      "a quota alone, on a queue without them: on-demand FARGATE",
      undefined,
      { vcpuQuota: 4 },
      { capacityProvider: "FARGATE", vcpuQuota: 4 },
    ],
    [
      "a quota alone keeps the provider",
      SPOT,
      { vcpuQuota: 2 },
      { capacityProvider: "FARGATE_SPOT", vcpuQuota: 2 },
    ],
    [
      "a provider alone keeps the quota",
      SPOT,
      { capacityProvider: "FARGATE" },
      { capacityProvider: "FARGATE", vcpuQuota: 8 },
    ],
  ] as const)("%s", (_label, current, changes, expected) => {
    expect(changeQueueFargateSettings(current, changes)).toEqual({ ok: true, settings: expected });
  });

  test("a provider alone on a queue without settings still needs a quota", () => {
    const result = changeQueueFargateSettings(undefined, { capacityProvider: "FARGATE_SPOT" });
    expect(result.ok ? [] : result.issues).toEqual([{ path: "fargate.vcpuQuota", message: "required" }]);
  });

  test("a bad change is named, whatever was there before", () => {
    const result = changeQueueFargateSettings(SPOT, { capacityProvider: "SPOT" });
    expect(result.ok ? [] : result.issues).toEqual([
      { path: "fargate.capacityProvider", message: "must be one of FARGATE, FARGATE_SPOT" },
    ]);
  });
});
