import { executorOf } from "../../functions/core/fargate.ts";
import { jobSettings } from "../../functions/core/jobs.ts";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { STAGE_KEYS } from "../../functions/core/model.ts";
import {
  SPEC_DEFAULTS,
  SPEC_LIMITS,
  SpecSyntaxError,
  SpecValidationError,
  parseSessionSpec,
  type SessionSpecInput,
} from "../../functions/core/spec.ts";
import { parseSpecText } from "../../functions/core/spec-text.ts";
import { parseDeploymentSpec } from "../../functions/core/deployments/spec.ts";
import { parse as parseYaml } from "yaml";

const MINIMAL = { name: "hello", command: ["/bin/true"] } as const;

/** The error a spec produces (fails the test if it parses). */
function specError(input: unknown): SpecValidationError {
  try {
    parseSessionSpec(input);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecValidationError);
    return error as SpecValidationError;
  }
  throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
}

function textError(text: string, format?: "yaml" | "json"): SpecSyntaxError {
  try {
    parseSpecText(text, format);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecSyntaxError);
    return error as SpecSyntaxError;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

describe("defaults", () => {
  test("given only name and command, every other field takes its documented default", () => {
    expect(parseSessionSpec(MINIMAL)).toEqual({
      name: "hello",
      queue: "default",
      priority: 0,
      replicas: 1,
      resources: { cpu: 1, memoryMiB: 256 },
      command: ["/bin/true"],
      env: {},
      timeouts: {
        pending: 3600,
        scheduled: 300,
        preparing: 600,
        prepared: 300,
        creating: 300,
        running: 86400,
        terminating: 300,
      },
      maxTries: {
        pending: 3,
        scheduled: 3,
        preparing: 3,
        prepared: 3,
        creating: 3,
        running: 3,
        terminating: 3,
      },
    });
  });

  test("SPEC_DEFAULTS is exactly what omitted fields become", () => {
    const parsed = parseSessionSpec(MINIMAL);
    const { name: _name, command: _command, ...rest } = parsed;
    // The job fields, maxPendingReturns and executor stay absent in the spec (older specs read
    // back unchanged); jobSettings, executorOf and the coordinator supply their defaults.
    const {
      coscheduled,
      perAgent,
      maxTaskFailures,
      maxPendingReturns: _,
      executor,
      ...sessionDefaults
    } = SPEC_DEFAULTS;
    expect(rest).toEqual(sessionDefaults);
    expect(jobSettings(parsed)).toEqual({ coscheduled, perAgent, maxTaskFailures });
    expect(executorOf(parsed)).toBe(executor);
    expect(Object.isFrozen(SPEC_DEFAULTS.timeouts)).toBe(true);
  });

  test("a partly written nested object keeps the defaults of the fields it omits", () => {
    const spec = parseSessionSpec({
      ...MINIMAL,
      resources: { memoryMiB: 64 },
      timeouts: { running: 60 },
      maxTries: { pending: 10 },
    });
    expect(spec.resources).toEqual({ cpu: 1, memoryMiB: 64 });
    expect(spec.timeouts).toEqual({ ...SPEC_DEFAULTS.timeouts, running: 60 });
    expect(spec.maxTries).toEqual({ ...SPEC_DEFAULTS.maxTries, pending: 10 });
  });

  test("parsing is idempotent: a parsed spec is a valid input that parses to itself", () => {
    const once = parseSessionSpec({ ...MINIMAL, replicas: 3, env: { A: "1" } });
    expect(parseSessionSpec(JSON.parse(JSON.stringify(once)))).toEqual(once);
  });

  test("the parsed spec is frozen, so defaults cannot be mutated through it", () => {
    const spec = parseSessionSpec(MINIMAL);
    expect(Object.isFrozen(spec)).toBe(true);
    expect(Object.isFrozen(spec.resources)).toBe(true);
    expect(Object.isFrozen(spec.command)).toBe(true);
  });
});

describe("bounds of each field", () => {
  const accepted: [string, Partial<SessionSpecInput>][] = [
    ["name of 128 characters", { name: "a".repeat(128) }],
    ["name with . _ -", { name: "Train_v1.2-final" }],
    ["name starting with a digit", { name: "9lives" }],
    ["queue", { queue: "gpu.large" }],
    ["priority -1000", { priority: -1000 }],
    ["priority 1000", { priority: 1000 }],
    ["replicas 1", { replicas: 1 }],
    ["replicas 64", { replicas: 64 }],
    ["cpu 0.001", { resources: { cpu: 0.001 } }],
    ["cpu 1024", { resources: { cpu: 1024 } }],
    ["memoryMiB 1", { resources: { memoryMiB: 1 } }],
    ["command with arguments", { command: ["/bin/sh", "-c", "exit 0"] }],
    ["env", { env: { PATH: "/usr/bin", _X: "", lower_case: "v", cairn_not_reserved: "x" } }],
    ["every timeout at 1 second", { timeouts: Object.fromEntries(STAGE_KEYS.map((k) => [k, 1])) }],
    ["every timeout at one year", { timeouts: Object.fromEntries(STAGE_KEYS.map((k) => [k, 31_536_000])) }],
    ["maxTries 1", { maxTries: Object.fromEntries(STAGE_KEYS.map((k) => [k, 1])) }],
    ["maxTries 100", { maxTries: Object.fromEntries(STAGE_KEYS.map((k) => [k, 100])) }],
  ];
  test.each(accepted)("accepts %s", (_label, fields) => {
    expect(() => parseSessionSpec({ ...MINIMAL, ...fields })).not.toThrow();
  });

  const rejected: [string, unknown][] = [
    ["name: required", { name: undefined }],
    ["name: must not be empty", { name: "" }],
    ["name: must be at most 128 characters", { name: "a".repeat(129) }],
    [
      "name: must start with a letter or digit and contain only letters, digits, '.', '_' and '-'",
      { name: "-leading-dash" },
    ],
    [
      "name: must start with a letter or digit and contain only letters, digits, '.', '_' and '-'",
      { name: "has space" },
    ],
    ["name: expected a string, got a number", { name: 7 }],
    ["queue: must not be empty", { queue: "" }],
    [
      "queue: must start with a letter or digit and contain only letters, digits, '.', '_' and '-'",
      { queue: "a/b" },
    ],
    ["priority: must be at least -1000", { priority: -1001 }],
    ["priority: must be at most 1000", { priority: 1001 }],
    ["priority: must be an integer", { priority: 0.5 }],
    ["priority: expected a number, got a string", { priority: "1" }],
    ["replicas: must be at least 1", { replicas: 0 }],
    ["replicas: must be at most 64", { replicas: 65 }],
    ["replicas: must be an integer", { replicas: 2.5 }],
    ["resources: expected an object, got null", { resources: null }],
    ["resources.cpu: must be greater than 0", { resources: { cpu: 0 } }],
    ["resources.cpu: must be greater than 0", { resources: { cpu: -1 } }],
    ["resources.cpu: must be at most 1024", { resources: { cpu: 1025 } }],
    ["resources.cpu: must be a finite number", { resources: { cpu: Number.POSITIVE_INFINITY } }],
    ["resources.cpu: must be a finite number", { resources: { cpu: Number.NaN } }],
    ["resources.memoryMiB: must be at least 1", { resources: { memoryMiB: 0 } }],
    ["resources.memoryMiB: must be an integer", { resources: { memoryMiB: 1.5 } }],
    ["command: required", { command: undefined }],
    ["command: must not be empty", { command: [] }],
    ["command: expected an array, got a string", { command: "echo hi" }],
    ["command[1]: must not be empty", { command: ["echo", ""] }],
    ["command[0]: expected a string, got a number", { command: [1] }],
    ["command[0]: must not contain NUL characters", { command: ["a\0b"] }],
    ["env: expected an object, got an array", { env: ["A=1"] }],
    ["env.A: expected a string, got a number", { env: { A: 1 } }],
    [
      `env["1BAD"]: must be a valid environment variable name (letters, digits and '_', not starting with a digit)`,
      { env: { "1BAD": "x" } },
    ],
    [
      `env.A-B: must be a valid environment variable name (letters, digits and '_', not starting with a digit)`,
      { env: { "A-B": "x" } },
    ],
    ["env.A: must not contain NUL characters", { env: { A: "x\0" } }],
    ["timeouts.pending: must be at least 1", { timeouts: { pending: 0 } }],
    ["timeouts.running: must be an integer", { timeouts: { running: 1.5 } }],
    [
      "timeouts.terminating: must be at most 31536000 (1 year, the Step Functions execution limit)",
      { timeouts: { terminating: 31_536_001 } },
    ],
    ["timeouts: expected an object, got a number", { timeouts: 60 }],
    ["maxTries.scheduled: must be at least 1", { maxTries: { scheduled: 0 } }],
    ["maxTries.creating: must be at most 100", { maxTries: { creating: 101 } }],
  ];
  test.each(rejected)("rejects with %s", (expected, fields) => {
    const error = specError({ ...MINIMAL, ...(fields as object) });
    expect(error.issues.map((i) => `${i.path}: ${i.message}`)).toEqual([expected]);
  });

  test("every stage key has its own bound check", () => {
    for (const stage of STAGE_KEYS) {
      expect(specError({ ...MINIMAL, timeouts: { [stage]: 0 } }).issues).toEqual([
        { path: `timeouts.${stage}`, message: "must be at least 1" },
      ]);
      expect(specError({ ...MINIMAL, maxTries: { [stage]: SPEC_LIMITS.maxTries.max + 1 } }).issues).toEqual([
        { path: `maxTries.${stage}`, message: "must be at most 100" },
      ]);
    }
  });
});

describe("the job's run-time limit, timeouts.job (HPC Pack: no task's run time greater than the job's)", () => {
  const accepted: [string, object, { running: number; job?: number }][] = [
    ["no limit: none by default, running keeps its default", {}, { running: 86_400 }],
    ["a limit alone: running's default is capped at it", { job: 60 }, { running: 60, job: 60 }],
    [
      "a limit above running's default leaves running's default",
      { job: 100_000 },
      { running: 86_400, job: 100_000 },
    ],
    ["running below the limit", { running: 30, job: 60 }, { running: 30, job: 60 }],
    ["running equal to the limit", { running: 60, job: 60 }, { running: 60, job: 60 }],
    ["the largest limit", { job: 31_536_000 }, { running: 86_400, job: 31_536_000 }],
  ];
  test.each(accepted)("%s", (_name, timeouts, expected) => {
    const spec = parseSessionSpec({ ...MINIMAL, timeouts });
    expect(spec.timeouts.running).toBe(expected.running);
    expect(spec.timeouts.job).toBe(expected.job);
    expect(parseSessionSpec(spec)).toEqual(spec);
  });

  const rejected: [string, object][] = [
    ["timeouts.job: must be at least 1", { job: 0 }],
    ["timeouts.job: must be at least 1", { job: -5 }],
    ["timeouts.job: must be an integer", { job: 1.5 }],
    ["timeouts.job: expected a number, got a string", { job: "60" }],
    [
      "timeouts.job: must be at most 31536000 (1 year, the Step Functions execution limit)",
      { job: 31_536_001 },
    ],
    [
      "timeouts.running: must be at most timeouts.job (60): no task may run longer than its job's run-time limit",
      { running: 61, job: 60 },
    ],
    [
      "timeouts.running: must be at most timeouts.job (600): no task may run longer than its job's run-time limit",
      { running: 86_400, job: 600 },
    ],
  ];
  test.each(rejected)("rejects with %s", (expected, timeouts) => {
    const error = specError({ ...MINIMAL, timeouts });
    expect(error.issues.map((i) => `${i.path}: ${i.message}`)).toEqual([expected]);
  });
});

describe("unknown fields are rejected at every level, naming the path", () => {
  test("top level", () => {
    expect(specError({ ...MINIMAL, replica: 2 }).message).toBe(
      "invalid session spec (1 problem):\n" +
        "  replica: unknown field (expected one of name, queue, priority, replicas, coscheduled, perAgent, maxTaskFailures, schedulingTimeout, parent, nodeSelector, executor, image, architecture, resources, command, env, timeouts, maxTries, maxPendingReturns, rerunnable, retry, template)",
    );
  });

  test("nested in resources", () => {
    expect(specError({ ...MINIMAL, resources: { cpu: 1, gpu: 1 } }).issues).toEqual([
      { path: "resources.gpu", message: "unknown field (expected one of cpu, memoryMiB)" },
    ]);
  });

  test("a misspelt stage in timeouts", () => {
    expect(specError({ ...MINIMAL, timeouts: { pendng: 60 } }).message).toBe(
      "invalid session spec (1 problem):\n" +
        "  timeouts.pendng: unknown field (expected one of pending, scheduled, preparing, prepared, creating, running, terminating, job)",
    );
  });

  test("an upper-case stage in maxTries, one issue per unknown key", () => {
    expect(specError({ ...MINIMAL, maxTries: { PENDING: 1, Running: 2 } }).issues.map((i) => i.path)).toEqual(
      ["maxTries.PENDING", "maxTries.Running"],
    );
  });
});

describe("reserved CAIRN_ environment names", () => {
  test("a user may not set a name Cairn sets itself", () => {
    expect(specError({ ...MINIMAL, env: { CAIRN_SESSION_ID: "mine", OK: "1" } }).message).toBe(
      "invalid session spec (1 problem):\n  env.CAIRN_SESSION_ID: names starting with CAIRN_ are reserved for Cairn",
    );
  });

  test("Iris's task identity names are Cairn's to set too (IRIS_TASK_ID, IRIS_TASK_INDEX, IRIS_NUM_TASKS)", () => {
    expect(specError({ ...MINIMAL, env: { IRIS_TASK_INDEX: "7", IRIS_OTHER: "1" } }).message).toBe(
      "invalid session spec (1 problem):\n  env.IRIS_TASK_INDEX: IRIS_TASK_ID, IRIS_TASK_INDEX, IRIS_NUM_TASKS are reserved: Cairn sets them to the task's identity",
    );
  });

  test("every reserved name is reported", () => {
    expect(specError({ ...MINIMAL, env: { CAIRN_A: "1", CAIRN_: "2" } }).issues.map((i) => i.path)).toEqual([
      "env.CAIRN_A",
      "env.CAIRN_",
    ]);
  });
});

describe("every problem is reported at once", () => {
  test("given several mistakes, the message lists each as <path>: <reason>, in field order", () => {
    const error = specError({
      name: "-x",
      replicas: 0,
      resources: { cpu: 0 },
      env: { CAIRN_X: "1" },
      timeouts: { pendng: 1 },
      extra: true,
    });
    expect(error.code).toBe("INVALID_SPEC");
    expect(error.name).toBe("SpecValidationError");
    expect(error.message).toBe(
      [
        "invalid session spec (7 problems):",
        "  name: must start with a letter or digit and contain only letters, digits, '.', '_' and '-'",
        "  replicas: must be at least 1",
        "  resources.cpu: must be greater than 0",
        "  command: required",
        "  env.CAIRN_X: names starting with CAIRN_ are reserved for Cairn",
        "  timeouts.pendng: unknown field (expected one of pending, scheduled, preparing, prepared, creating, running, terminating, job)",
        "  extra: unknown field (expected one of name, queue, priority, replicas, coscheduled, perAgent, maxTaskFailures, schedulingTimeout, parent, nodeSelector, executor, image, architecture, resources, command, env, timeouts, maxTries, maxPendingReturns, rerunnable, retry, template)",
      ].join("\n"),
    );
    expect(error.issues).toHaveLength(7);
    expect(error.issues[3]).toEqual({ path: "command", message: "required" });
  });

  test("a bad env name and a bad env value elsewhere are both reported", () => {
    expect(specError({ ...MINIMAL, env: { "1A": "x", B: 2 } }).issues.map((i) => i.path)).toEqual([
      'env["1A"]',
      "env.B",
    ]);
  });

  test("one field with several faults is reported once (the first reason)", () => {
    expect(specError({ ...MINIMAL, name: "" }).issues).toEqual([
      { path: "name", message: "must not be empty" },
    ]);
  });

  test("something that is not an object is rejected at the root", () => {
    for (const input of [null, undefined, "name: x", 3, []]) {
      const [issue] = specError(input).issues;
      expect(issue?.path).toBe("(root)");
    }
    expect(specError(null).message).toBe(
      "invalid session spec (1 problem):\n  (root): expected an object, got null",
    );
    expect(specError([]).issues).toEqual([{ path: "(root)", message: "expected an object, got an array" }]);
  });
});

describe("spec text", () => {
  const YAML = ["name: train", "replicas: 2", "command: [python, train.py]", "env:", '  SEED: "7"', ""].join(
    "\n",
  );

  test("YAML is parsed and defaulted", () => {
    const spec = parseSpecText(YAML);
    expect(spec).toMatchObject({
      name: "train",
      replicas: 2,
      command: ["python", "train.py"],
      env: { SEED: "7" },
    });
    expect(spec.queue).toBe("default");
  });

  test("JSON is detected by its leading brace, even after whitespace and a BOM", () => {
    const spec = parseSpecText('\uFEFF  \n{"name": "j", "command": ["x"]}');
    expect(spec.name).toBe("j");
  });

  test("an explicit format wins: JSON text is valid YAML", () => {
    expect(parseSpecText('{"name": "j", "command": ["x"]}', "yaml").name).toBe("j");
  });

  test("YAML 1.2: yes/on stay strings, so an unquoted value is a clear type error, not a silent boolean", () => {
    expect(parseSpecText("name: a\ncommand: [yes, on]\n").command).toEqual(["yes", "on"]);
    expect(() => parseSpecText("name: a\ncommand: [x]\nenv:\n  N: 1\n")).toThrow(
      "env.N: expected a string, got a number",
    );
  });

  test("a YAML syntax error names the line and column", () => {
    const error = textError("name: a\ncommand: [a, b\nreplicas: 1\n");
    expect([error.code, error.format, error.line, error.column]).toEqual(["SPEC_SYNTAX", "yaml", 3, 1]);
    expect(error.message).toBe(
      "invalid session spec: YAML syntax error at line 3, column 1: " +
        "Flow sequence in block collection must be sufficiently indented and end with a ]",
    );
  });

  test("a duplicate key is a syntax error, not a silent overwrite, in YAML and in JSON", () => {
    const yaml = textError("name: a\ncommand: [x]\nname: b\n");
    expect(yaml.message).toBe(
      "invalid session spec: YAML syntax error at line 3, column 1: Map keys must be unique",
    );
    // JSON.parse alone would keep the last "cpu"; the first duplicate in the text is named.
    const json = textError('{"name": "a",\n "command": ["x"],\n "resources": {"cpu": 1, "cpu": 64}}');
    expect([json.format, json.line, json.column, json.reason]).toEqual([
      "json",
      3,
      26,
      "Map keys must be unique",
    ]);
    expect(textError('{"name": "a", "env": {"A": "1", "\\u0041": "2"}, "command": ["x"]}').column).toBe(33);
    expect(textError('{"env": {"B": "1", "B": "2"}, "env": {}, "name": "a", "command": ["x"]}').column).toBe(
      20,
    );
  });

  test("an unresolved YAML tag or alias is an error, not silently dropped", () => {
    expect(textError("name: !secret a\ncommand: [x]\n").message).toBe(
      "invalid session spec: YAML syntax error at line 1, column 7: Unresolved tag: !secret",
    );
    const alias = textError("name: a\ncommand: *cmd\n");
    expect([alias.line, alias.column]).toEqual([2, 10]);
  });

  test("a YAML syntax error deeper in the text names its line and column", () => {
    const error = textError('name: a\ncommand: [x]\nenv:\n  A: "\\q"\n');
    expect(error.message).toBe(
      "invalid session spec: YAML syntax error at line 4, column 7: Invalid escape sequence \\q",
    );
    expect([error.format, error.line, error.column]).toEqual(["yaml", 4, 7]);
  });

  test("a JSON syntax error names the line and column", () => {
    const error = textError('{\n  "name": "a",\n  "command": ["x" "y"]\n}');
    expect([error.format, error.line, error.column]).toEqual(["json", 3, 19]);
    expect(error.message).toBe(
      "invalid session spec: JSON syntax error at line 3, column 19: Missing , or : between flow sequence items",
    );
  });

  test("a trailing comma, valid YAML, is still a JSON syntax error at the comma", () => {
    const error = textError('{\n  "name": "a",\n  "command": ["x",]\n}');
    expect(error.message).toBe(
      "invalid session spec: JSON syntax error at line 3, column 18: " +
        "trailing comma (JSON allows none before a closing bracket)",
    );
    expect([textError('{"name": "a",\n}').line, textError('{"name": "a",\n}').column]).toEqual([1, 13]);
  });

  test.each([
    ['{"name": "a" "command": []}', 1, 14, 'unexpected "command"'],
    ['{"name": tru}', 1, 10, 'expected a value, found "tru"'],
    ['{"name": 01}', 1, 10, 'expected a value, found "01"'],
    ['{"apiVersion": "v1",\n  "kind": }', 2, 11, "expected a value"],
    ['{\n"name": "a\\q"}', 2, 11, "Invalid escape sequence \\q"],
    ['{"name": "a"', 1, 13, "Flow map must end with a }"],
    ['{"name": "a"}}', 1, 14, 'unexpected "}"'],
    ["[1,,2]", 1, 4, 'unexpected ","'],
    ['{"name": "a\tb"}', 1, 12, "control character in string (escape it)"],
    // YAML that is not JSON: located by yaml's tokens.
    ["{'name': 'a'}", 1, 2, "strings must be in double quotes in JSON"],
    ['{"name": "a" # why\n}', 1, 14, "comments are not allowed in JSON"],
    ['{"name": &n "a"}', 1, 10, "YAML anchors are not allowed in JSON"],
    ['{"name": "a"}\n---\n{}', 2, 1, "YAML document markers are not allowed in JSON"],
    // Valid YAML, valid tokens, not JSON: JSON.parse's reason at its position.
    ['{"name"}', 1, 8, "Expected ':' after property name"],
  ])("JSON %s fails at %i:%i with %s", (text, line, column, reason) => {
    const error = textError(text);
    expect({ line: error.line, column: error.column, reason: error.reason }).toEqual({
      line,
      column,
      reason,
    });
  });

  test("well-formed text that breaks the schema is a validation error, not a syntax error", () => {
    expect(() => parseSpecText("name: a\n")).toThrow(SpecValidationError);
    expect(() => parseSpecText("")).toThrow("(root): expected an object, got null");
  });
});

describe("any input", () => {
  test("either parses or raises SpecValidationError with a path and reason for each issue", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.jsonValue(),
          fc.record(
            { name: fc.jsonValue(), command: fc.jsonValue(), resources: fc.jsonValue() },
            { requiredKeys: [] },
          ),
        ),
        (input) => {
          try {
            parseSessionSpec(input);
          } catch (error) {
            expect(error).toBeInstanceOf(SpecValidationError);
            for (const issue of (error as SpecValidationError).issues) {
              expect(issue.path.length).toBeGreaterThan(0);
              expect(issue.message.length).toBeGreaterThan(0);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  test("any spec within bounds parses to itself", () => {
    const stages = (arb: fc.Arbitrary<number>) =>
      fc.record(
        Object.fromEntries(STAGE_KEYS.map((k) => [k, arb])) as Record<
          (typeof STAGE_KEYS)[number],
          fc.Arbitrary<number>
        >,
      );
    const spec = fc.record({
      name: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/),
      queue: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
      priority: fc.integer({ min: -1000, max: 1000 }),
      replicas: fc.integer({ min: 1, max: 64 }),
      resources: fc.record({
        cpu: fc.double({ min: 0.001, max: 1024, noNaN: true }),
        memoryMiB: fc.integer({ min: 1, max: 1 << 20 }),
      }),
      command: fc.array(
        fc.string({ minLength: 1 }).filter((s) => !s.includes("\0")),
        { minLength: 1, maxLength: 4 },
      ),
      env: fc.dictionary(
        fc.stringMatching(/^[A-Z][A-Z0-9_]{0,10}$/).filter((k) => !k.startsWith("CAIRN_")),
        fc.string().filter((s) => !s.includes("\0")),
      ),
      timeouts: stages(fc.integer({ min: 1, max: 31_536_000 })),
      maxTries: stages(fc.integer({ min: 1, max: 100 })),
    });
    fc.assert(
      fc.property(spec, (input) => {
        expect(parseSessionSpec(input)).toEqual(input);
      }),
      { numRuns: 200 },
    );
  });
});

describe("examples/", () => {
  const dir = join(import.meta.dirname, "../../examples");
  /** Deployment specs, not session specs. */
  const DEPLOYMENTS = ["service.yaml"];
  const files = readdirSync(dir).filter((f) => /\.(ya?ml|json)$/.test(f) && !DEPLOYMENTS.includes(f));

  test("holds the documented examples", () => {
    expect(files).toEqual(
      expect.arrayContaining(["hello.yaml", "gang.yaml", "tasks.yaml", "fail.yaml", "oom.yaml"]),
    );
  });

  test.each(files)("%s parses", (file) => {
    const spec = parseSpecText(
      readFileSync(join(dir, file), "utf8"),
      file.endsWith(".json") ? "json" : "yaml",
    );
    expect(spec.name).toBe(file.replace(/\.(ya?ml|json)$/, ""));
  });

  test("service.yaml is a deployment of 3 replicas of an HTTP server on $CAIRN_PORT", () => {
    const spec = parseDeploymentSpec(parseYaml(readFileSync(join(dir, "service.yaml"), "utf8")));
    expect(spec.name).toBe("service");
    expect(spec.replicas).toBe(3);
    expect(spec.service.command.join(" ")).toContain("process.env.CAIRN_PORT");
    expect(spec.healthCheck).toMatchObject({ path: "/", intervalSeconds: 5 });
  });

  test("gang.yaml is co-scheduled, one task per agent; tasks.yaml is independent tasks tolerating one failure", () => {
    const gang = parseSpecText(readFileSync(join(dir, "gang.yaml"), "utf8"));
    expect(jobSettings(gang)).toEqual({ coscheduled: true, perAgent: 1, maxTaskFailures: 0 });
    const tasks = parseSpecText(readFileSync(join(dir, "tasks.yaml"), "utf8"));
    expect(jobSettings(tasks)).toEqual({ coscheduled: false, perAgent: 1, maxTaskFailures: 1 });
    expect(tasks.timeouts.pending).toBe(120);
  });

  test("gang.yaml is a gang of four and oom.yaml is capped at 64 MiB", () => {
    expect(parseSpecText(readFileSync(join(dir, "gang.yaml"), "utf8")).replicas).toBe(4);
    expect(parseSpecText(readFileSync(join(dir, "oom.yaml"), "utf8")).resources.memoryMiB).toBe(64);
  });
});
