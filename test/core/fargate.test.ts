import { describe, expect, test } from "vitest";
import { SessionSubmittedDetailSchema } from "../../functions/core/session-events.ts";
import {
  FARGATE_CPUS,
  FARGATE_TASK_SIZES,
  executorOf,
  fargateMemoryMiBFor,
} from "../../functions/core/fargate.ts";
import {
  SpecValidationError,
  parseSessionSpec,
  safeParseWithIssues,
  type SessionSpecInput,
} from "../../functions/core/spec.ts";

const IMAGE = "public.ecr.aws/docker/library/python:3.12";
const FARGATE = {
  name: "train",
  command: ["python3", "train.py"],
  executor: "fargate",
  image: IMAGE,
  resources: { cpu: 1, memoryMiB: 2048 },
} as const satisfies SessionSpecInput;

function problems(input: unknown): string[] {
  try {
    parseSessionSpec(input);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecValidationError);
    return (error as SpecValidationError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
}

describe("Fargate's task sizes (the AWS table, Linux)", () => {
  // Written out from https://docs.aws.amazon.com/AmazonECS/latest/userguide/task-cpu-memory-error.html,
  // independently of how fargate.ts builds its rows.
  const documented: [cpu: number, first: number, last: number, count: number][] = [
    [0.25, 512, 2048, 3],
    [0.5, 1024, 4096, 4],
    [1, 2048, 8192, 7],
    [2, 4096, 16_384, 13],
    [4, 8192, 30_720, 23],
    [8, 16_384, 61_440, 12],
    [16, 32_768, 122_880, 12],
  ];
  test.each(documented)("%s vCPU: %s to %s MiB, %s sizes", (cpu, first, last, count) => {
    const memory = fargateMemoryMiBFor(cpu);
    expect([memory[0], memory.at(-1), memory.length]).toEqual([first, last, count]);
  });

  test("0.25 vCPU takes exactly 512, 1024 and 2048 MiB (1536 is not a Fargate size)", () => {
    expect(fargateMemoryMiBFor(0.25)).toEqual([512, 1024, 2048]);
  });

  test("the steps: 1 GiB up to 4 vCPU, 4 GiB at 8 vCPU, 8 GiB at 16 vCPU", () => {
    const stepsOf = (cpu: number) => {
      const memory = fargateMemoryMiBFor(cpu);
      return new Set(memory.slice(1).map((m, i) => m - memory[i]!));
    };
    expect([0.5, 1, 2, 4, 8, 16].map((cpu) => [...stepsOf(cpu)])).toEqual([
      [1024],
      [1024],
      [1024],
      [1024],
      [4096],
      [8192],
    ]);
  });

  test("a cpu that is not a Fargate size has no memory sizes", () => {
    expect(FARGATE_CPUS).toEqual([0.25, 0.5, 1, 2, 4, 8, 16]);
    expect(fargateMemoryMiBFor(3)).toEqual([]);
    expect(fargateMemoryMiBFor(0.1)).toEqual([]);
  });
});

describe("a Fargate spec", () => {
  const every = FARGATE_TASK_SIZES.flatMap(({ cpu, memoryMiB }) => memoryMiB.map((m) => [cpu, m] as const));

  test(`every one of the ${every.length} documented combinations is accepted, for a 4-kernel gang too`, () => {
    for (const [cpu, memoryMiB] of every) {
      const spec = parseSessionSpec({ ...FARGATE, replicas: 4, resources: { cpu, memoryMiB } });
      expect(spec.resources).toEqual({ cpu, memoryMiB });
      expect(executorOf(spec)).toBe("fargate");
      expect(spec.image).toBe(IMAGE);
    }
  });

  const rejected: [label: string, fields: Partial<SessionSpecInput>, expected: string[]][] = [
    ["no image", { image: undefined }, ["image: required with executor fargate: the image the task runs"]],
    [
      "the default resources (1 vCPU, 256 MiB)",
      { resources: undefined },
      [
        "resources.memoryMiB: 256 MiB is not a Fargate memory size for 1 vCPU: with executor fargate, must be one of 2048, 3072, 4096, 5120, 6144, 7168, 8192",
      ],
    ],
    [
      "0.25 vCPU with 1536 MiB",
      { resources: { cpu: 0.25, memoryMiB: 1536 } },
      [
        "resources.memoryMiB: 1536 MiB is not a Fargate memory size for 0.25 vCPU: with executor fargate, must be one of 512, 1024, 2048",
      ],
    ],
    [
      "8 vCPU with memory between its 4 GiB steps",
      { resources: { cpu: 8, memoryMiB: 17_408 } },
      [
        "resources.memoryMiB: 17408 MiB is not a Fargate memory size for 8 vCPU: with executor fargate, must be one of 16384, 20480, 24576, 28672, 32768, 36864, 40960, 45056, 49152, 53248, 57344, 61440",
      ],
    ],
    [
      "16 vCPU above its largest size",
      { resources: { cpu: 16, memoryMiB: 131_072 } },
      [
        "resources.memoryMiB: 131072 MiB is not a Fargate memory size for 16 vCPU: with executor fargate, must be one of 32768, 40960, 49152, 57344, 65536, 73728, 81920, 90112, 98304, 106496, 114688, 122880",
      ],
    ],
    [
      "a cpu Fargate does not offer",
      { resources: { cpu: 3, memoryMiB: 8192 } },
      [
        "resources.cpu: 3 vCPU is not a Fargate task size: with executor fargate, must be one of 0.25, 0.5, 1, 2, 4, 8, 16",
      ],
    ],
    [
      "more than Fargate's largest task",
      { resources: { cpu: 32, memoryMiB: 65_536 } },
      [
        "resources.cpu: 32 vCPU is not a Fargate task size: with executor fargate, must be one of 0.25, 0.5, 1, 2, 4, 8, 16",
      ],
    ],
    [
      "a nodeSelector (agent labels)",
      { nodeSelector: { gpu: "a100" } },
      ["nodeSelector: only applies to executor agent (Fargate tasks run on no agent)"],
    ],
    [
      "perAgent",
      { perAgent: 2 },
      ["perAgent: only applies to executor agent (Fargate tasks run on no agent)"],
    ],
    [
      "an image that is not a reference",
      { image: "python 3.12" },
      [
        "image: must be a container image reference: repository[:tag] or repository@sha256:<64 hex digits>, up to 255 of letters, digits, '-', '_', ':', '.', '/', '#'",
      ],
    ],
    [
      "a digest that is not sha256",
      { image: "python@md5:0123" },
      [
        "image: must be a container image reference: repository[:tag] or repository@sha256:<64 hex digits>, up to 255 of letters, digits, '-', '_', ':', '.', '/', '#'",
      ],
    ],
    [
      "an executor Cairn does not have",
      { executor: "ecs" as never },
      ["executor: must be one of agent, fargate"],
    ],
  ];
  test.each(rejected)("rejects %s", (_label, fields, expected) => {
    expect(problems({ ...FARGATE, ...fields })).toEqual(expected);
  });

  test("a missing image and a bad size are reported together", () => {
    expect(problems({ ...FARGATE, image: undefined, resources: { cpu: 2, memoryMiB: 2048 } })).toEqual([
      "image: required with executor fargate: the image the task runs",
      "resources.memoryMiB: 2048 MiB is not a Fargate memory size for 2 vCPU: with executor fargate, must be one of 4096, 5120, 6144, 7168, 8192, 9216, 10240, 11264, 12288, 13312, 14336, 15360, 16384",
    ]);
  });

  test.each([
    IMAGE,
    "python",
    "111122223333.dkr.ecr.us-west-2.amazonaws.com/hello-repository:latest",
    `registry.example.com:5000/team/app@sha256:${"ab".repeat(32)}`,
    "a".repeat(255),
  ])("accepts the image %s", (image) => {
    expect(parseSessionSpec({ ...FARGATE, image }).image).toBe(image);
  });

  test("an image longer than ECS's 255 characters is refused", () => {
    expect(problems({ ...FARGATE, image: "a".repeat(256) })).toHaveLength(1);
  });

  test("submitted on the bus, the problem names the field under spec", () => {
    const result = safeParseWithIssues(SessionSubmittedDetailSchema, {
      spec: { ...FARGATE, resources: { cpu: 0.5, memoryMiB: 512 } },
    });
    expect(result.success ? [] : result.issues).toEqual([
      {
        path: "spec.resources.memoryMiB",
        message:
          "512 MiB is not a Fargate memory size for 0.5 vCPU: with executor fargate, must be one of 1024, 2048, 3072, 4096",
      },
    ]);
  });
});

describe("a Fargate spec's architecture", () => {
  test("arm64 or x86_64 is kept; without one the spec says nothing (ECS runs it as x86_64)", () => {
    expect(parseSessionSpec({ ...FARGATE, architecture: "arm64" }).architecture).toBe("arm64");
    expect(parseSessionSpec({ ...FARGATE, architecture: "x86_64" }).architecture).toBe("x86_64");
    expect("architecture" in parseSessionSpec(FARGATE)).toBe(false);
  });

  test("another value is refused naming the field and the values", () => {
    expect(problems({ ...FARGATE, architecture: "aarch64" })).toEqual([
      "architecture: must be one of x86_64, arm64",
    ]);
  });

  test.each([{}, { executor: "agent" }] as const)(
    "an agent spec with an architecture is refused (%j)",
    (fields) => {
      expect(problems({ name: "a", command: ["x"], architecture: "arm64", ...fields })).toEqual([
        "architecture: only applies to executor fargate (an agent runs the command on its host's own architecture)",
      ]);
    },
  );
});

describe("an agent spec is unchanged", () => {
  test("without executor it runs on agents, and Fargate's sizes do not apply", () => {
    const spec = parseSessionSpec({ name: "a", command: ["x"], resources: { cpu: 3, memoryMiB: 100 } });
    expect(executorOf(spec)).toBe("agent");
    expect("executor" in spec).toBe(false);
    expect(spec.resources).toEqual({ cpu: 3, memoryMiB: 100 });
  });

  test("an explicit executor agent is kept and may use agent placement fields", () => {
    const spec = parseSessionSpec({
      name: "a",
      command: ["x"],
      executor: "agent",
      nodeSelector: { gpu: "a100" },
    });
    expect(spec.executor).toBe("agent");
  });

  test.each([{}, { executor: "agent" }] as const)("an image is refused with %j", (fields) => {
    expect(problems({ name: "a", command: ["x"], image: IMAGE, ...fields })).toEqual([
      "image: only applies to executor fargate (agents run the command on their host, with no image)",
    ]);
  });
});
