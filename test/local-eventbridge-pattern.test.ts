/**
 * EventBridge content filtering, table-driven. Patterns and events are taken from:
 * - [UG-patterns]   AWS EventBridge User Guide, "Event patterns" / "Event pattern syntax"
 *                   (docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html)
 * - [UG-filtering]  "Content filtering in Amazon EventBridge event patterns"
 *                   (awsdocs/amazon-eventbridge-user-guide doc_source/eb-event-patterns-content-based-filtering.md)
 * - [UG-operators]  "Comparison operators for use in event patterns" (eb-create-pattern-operators.html)
 * - [UG-arrays]     "Arrays in Amazon EventBridge event patterns" (eb-event-patterns-arrays.html)
 * - [UG-null]       "Matching null values and empty strings" (eb-event-patterns-null-values.md)
 * - [ruler]         aws/event-ruler README (the matcher behind EventBridge): "Ruler by Example",
 *                   "$or" examples, "JSON Array Matching"
 * Rows marked [edge] pin behaviour the docs state in prose (e.g. "prefix only works on strings").
 */
import { describe, expect, test } from "vitest";
import {
  compileEventPattern,
  InvalidEventPatternError,
  matchesEventPattern,
  validateEventPattern,
} from "../local/eventbridge/index.ts";

// [ruler] "Ruler by Example" sample event (also the shape of [UG-patterns]'s EC2 event).
const EC2_EVENT = {
  version: "0",
  id: "ddddd4-aaaa-7777-4444-345dd43cc333",
  "detail-type": "EC2 Instance State-change Notification",
  source: "aws.ec2",
  account: "012345679012",
  time: "2017-10-02T16:24:49Z",
  region: "us-east-1",
  resources: ["arn:aws:ec2:us-east-1:123456789012:instance/i-000000aaaaaa00000"],
  detail: {
    "c-count": 5,
    "d-count": 3,
    "x-limit": 301.8,
    "source-ip": "10.0.0.33",
    "instance-id": "i-000000aaaaaa00000",
    state: "running",
  },
};

// [UG-null] example event.
const NULL_EVENT = {
  version: "0",
  id: "3e3c153a-8339-4e30-8c35-687ebef853fe",
  "detail-type": "EC2 Instance Launch Successful",
  source: "aws.autoscaling",
  account: "123456789012",
  time: "2015-11-11T21:31:47Z",
  region: "us-east-1",
  resources: [],
  detail: { eventVersion: "", responseElements: null },
};

// [ruler] "JSON Array Matching" event.
const EMPLOYEES = {
  employees: [
    { firstName: "John", lastName: "Doe" },
    { firstName: "Anna", lastName: "Smith" },
    { firstName: "Peter", lastName: "Jones" },
  ],
};

const CLOUDWATCH = { source: "aws.cloudwatch", metricName: "CPUUtilization", namespace: "AWS/Lambda" };

type Row = readonly [name: string, pattern: object, event: object, expected: boolean];

const d = (detail: object) => ({ ...EC2_EVENT, detail });

const ROWS: readonly Row[] = [
  // Exact values, AND across fields, OR within a field.
  [
    "[ruler] simple match: detail-type, resources and detail.state",
    {
      "detail-type": ["EC2 Instance State-change Notification"],
      resources: ["arn:aws:ec2:us-east-1:123456789012:instance/i-000000aaaaaa00000"],
      detail: { state: ["initializing", "running"] },
    },
    EC2_EVENT,
    true,
  ],
  ["[ruler] simple: state not among the values", { detail: { state: ["initializing"] } }, EC2_EVENT, false],
  ["[UG-patterns] source is one of two values", { source: ["aws.ec2", "aws.fargate"] }, EC2_EVENT, true],
  [
    "[UG-patterns] EC2 terminated pattern against a running instance",
    {
      source: ["aws.ec2"],
      "detail-type": ["EC2 Instance State-change Notification"],
      detail: { state: ["terminated"] },
    },
    EC2_EVENT,
    false,
  ],
  [
    "[UG-patterns] every pattern field must exist in the event",
    { detail: { nope: ["x"] } },
    EC2_EVENT,
    false,
  ],
  ["[edge] exact string match is case-sensitive", { source: ["AWS.EC2"] }, EC2_EVENT, false],
  ["[edge] number matches number", { detail: { "x-limit": [301.8] } }, EC2_EVENT, true],
  ["[UG-filtering] number written in exponent form", { detail: { "x-limit": [3.018e2] } }, EC2_EVENT, true],
  [
    '[edge] string "301.8" does not match number 301.8',
    { detail: { "x-limit": ["301.8"] } },
    EC2_EVENT,
    false,
  ],
  ["[edge] boolean true matches true", { detail: { on: [true] } }, d({ on: true }), true],
  ['[edge] boolean true does not match "true"', { detail: { on: [true] } }, d({ on: "true" }), false],
  ["[UG-null] empty string matches empty string", { detail: { eventVersion: [""] } }, NULL_EVENT, true],
  ["[UG-null] null matches null", { detail: { responseElements: [null] } }, NULL_EVENT, true],
  ["[UG-null] empty string does not match null", { detail: { responseElements: [""] } }, NULL_EVENT, false],
  ["[UG-null] null does not match empty string", { detail: { eventVersion: [null] } }, NULL_EVENT, false],
  ["[edge] null does not match a missing field", { detail: { missing: [null] } }, NULL_EVENT, false],

  // Arrays in events.
  [
    "[UG-arrays] pattern and event arrays intersect",
    {
      resources: [
        "arn:aws:ec2:us-east-1:123456789012:instance/i-b188560f",
        "arn:aws:ec2:us-east-1:111122223333:instance/i-b188560f",
        "arn:aws:ec2:us-east-1:444455556666:instance/i-b188560f",
      ],
    },
    {
      resources: [
        "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:eb56d16b-bbf0-401d-b893-d5978ed4a025:autoScalingGroupName/ASGTerminate",
        "arn:aws:ec2:us-east-1:123456789012:instance/i-b188560f",
      ],
    },
    true,
  ],
  [
    "[UG-arrays] no common element",
    { resources: ["arn:aws:ec2:us-east-1:111122223333:instance/i-b188560f"] },
    { resources: ["arn:aws:ec2:us-east-1:123456789012:instance/i-b188560f"] },
    false,
  ],
  [
    "[ruler] objects inside an array: field of one element",
    { employees: { firstName: ["Anna"] } },
    EMPLOYEES,
    true,
  ],
  [
    "[ruler] array-consistent: both fields in the same element",
    { employees: { firstName: ["Anna"], lastName: ["Smith"] } },
    EMPLOYEES,
    true,
  ],
  [
    "[ruler] array-consistent: fields from different elements do not match",
    { employees: { firstName: ["Anna"], lastName: ["Jones"] } },
    EMPLOYEES,
    false,
  ],
  [
    "[ruler] multi-level arrays are crushed",
    { employees: { firstName: ["Peter"] } },
    { employees: [[EMPLOYEES.employees[0]], [EMPLOYEES.employees[2]]] },
    true,
  ],

  // prefix / suffix / equals-ignore-case / wildcard.
  ["[UG-filtering] prefix on time", { time: [{ prefix: "2017-10-02" }] }, EC2_EVENT, true],
  ["[UG-filtering] prefix that does not match", { time: [{ prefix: "2017-10-03" }] }, EC2_EVENT, false],
  ["[edge] prefix only works on strings", { detail: { "c-count": [{ prefix: "5" }] } }, EC2_EVENT, false],
  ["[ruler] suffix", { source: [{ suffix: "ec2" }] }, EC2_EVENT, true],
  ["[UG-operators] suffix .png", { FileName: [{ suffix: ".png" }] }, { FileName: "photo.png" }, true],
  [
    "[UG-operators] suffix .png on a .jpg",
    { FileName: [{ suffix: ".png" }] },
    { FileName: "photo.jpg" },
    false,
  ],
  [
    "[UG-operators] equals-ignore-case",
    { Name: [{ "equals-ignore-case": "alice" }] },
    { Name: "ALICE" },
    true,
  ],
  [
    "[UG-operators] equals-ignore-case, other name",
    { Name: [{ "equals-ignore-case": "alice" }] },
    { Name: "Bob" },
    false,
  ],
  [
    "[UG-operators] prefix ignoring case",
    { service: [{ prefix: { "equals-ignore-case": "eventb" } }] },
    { service: "EventBridge" },
    true,
  ],
  [
    "[UG-operators] suffix ignoring case",
    { service: [{ suffix: { "equals-ignore-case": "tBridge" } }] },
    { service: "EVENTBRIDGE" },
    true,
  ],
  [
    "[ruler] wildcard Simple*Service",
    { source: [{ wildcard: "Simple*Service" }] },
    { source: "SimpleQueueService" },
    true,
  ],
  [
    "[edge] wildcard * matches nothing too",
    { source: [{ wildcard: "Simple*Service" }] },
    { source: "SimpleService" },
    true,
  ],
  [
    "[edge] wildcard anchored at both ends",
    { source: [{ wildcard: "Simple*Service" }] },
    { source: "ASimpleXService!" },
    false,
  ],
  [
    "[edge] wildcard in an ARN",
    { EventBusArn: [{ wildcard: "arn:aws:events:us-east-1:*:event-bus/*" }] },
    { EventBusArn: "arn:aws:events:us-east-1:123456789012:event-bus/cairn" },
    true,
  ],
  ["[ruler] escaped \\* is a literal asterisk", { v: [{ wildcard: "a\\*b" }] }, { v: "a*b" }, true],
  ["[ruler] escaped \\* does not act as a wildcard", { v: [{ wildcard: "a\\*b" }] }, { v: "axxb" }, false],
  ["[edge] wildcard metacharacters are literal", { v: [{ wildcard: "a.c*" }] }, { v: "abcd" }, false],

  // anything-but.
  [
    "[UG-filtering] anything-but string",
    { detail: { state: [{ "anything-but": "initializing" }] } },
    EC2_EVENT,
    true,
  ],
  [
    "[UG-filtering] anything-but the actual value",
    { detail: { state: [{ "anything-but": "running" }] } },
    EC2_EVENT,
    false,
  ],
  [
    "[UG-filtering] anything-but number",
    { detail: { "x-limit": [{ "anything-but": 123 }] } },
    EC2_EVENT,
    true,
  ],
  [
    "[edge] anything-but the actual number",
    { detail: { "x-limit": [{ "anything-but": 301.8 }] } },
    EC2_EVENT,
    false,
  ],
  [
    "[UG-filtering] anything-but list of strings",
    { detail: { state: [{ "anything-but": ["stopped", "overloaded"] }] } },
    EC2_EVENT,
    true,
  ],
  [
    "[edge] anything-but list containing the value",
    { detail: { state: [{ "anything-but": ["stopped", "running"] }] } },
    EC2_EVENT,
    false,
  ],
  [
    "[UG-filtering] anything-but list of numbers",
    { detail: { "x-limit": [{ "anything-but": [100, 200, 300] }] } },
    EC2_EVENT,
    true,
  ],
  [
    "[UG-filtering] anything-but prefix init",
    { detail: { state: [{ "anything-but": { prefix: "init" } }] } },
    EC2_EVENT,
    true,
  ],
  [
    "[UG-filtering] anything-but prefix on a value with that prefix",
    { detail: { state: [{ "anything-but": { prefix: "run" } }] } },
    EC2_EVENT,
    false,
  ],
  [
    "[UG-operators] anything-but suffix .png",
    { FileName: [{ "anything-but": { suffix: ".png" } }] },
    { FileName: "photo.png" },
    false,
  ],
  [
    "[UG-operators] anything-but suffix .png on a .txt",
    { FileName: [{ "anything-but": { suffix: ".png" } }] },
    { FileName: "notes.txt" },
    true,
  ],
  [
    "[UG-operators] anything-but equals-ignore-case",
    { state: [{ "anything-but": { "equals-ignore-case": "initializing" } }] },
    { state: "INITIALIZING" },
    false,
  ],
  [
    "[UG-operators] anything-but equals-ignore-case list",
    { state: [{ "anything-but": { "equals-ignore-case": ["initializing", "stopped"] } }] },
    { state: "Running" },
    true,
  ],
  [
    "[UG-operators] anything-but wildcard */lib/*",
    { FilePath: [{ "anything-but": { wildcard: "*/lib/*" } }] },
    { FilePath: "/usr/lib/libc.so" },
    false,
  ],
  [
    "[UG-operators] anything-but wildcard on another path",
    { FilePath: [{ "anything-but": { wildcard: "*/lib/*" } }] },
    { FilePath: "/usr/bin/env" },
    true,
  ],
  [
    "[UG-operators] anything-but Raining",
    { Weather: [{ "anything-but": ["Raining"] }] },
    { Weather: "Sunny" },
    true,
  ],
  ["[edge] anything-but needs the field to exist", { missing: [{ "anything-but": "x" }] }, EC2_EVENT, false],
  [
    "[edge] anything-but on an event array: one element outside the list is enough",
    { tags: [{ "anything-but": "a" }] },
    { tags: ["a", "b"] },
    true,
  ],
  ["[edge] numeric anything-but ignores strings", { v: [{ "anything-but": [1, 2] }] }, { v: "3" }, false],

  // numeric.
  [
    "[UG-filtering] numeric: all three fields true",
    {
      detail: {
        "c-count": [{ numeric: [">", 0, "<=", 5] }],
        "d-count": [{ numeric: ["<", 10] }],
        "x-limit": [{ numeric: ["=", 3.018e2] }],
      },
    },
    EC2_EVENT,
    true,
  ],
  ["[edge] numeric > 5 excludes 5", { detail: { "c-count": [{ numeric: [">", 5] }] } }, EC2_EVENT, false],
  ["[edge] numeric >= 5 includes 5", { detail: { "c-count": [{ numeric: [">=", 5] }] } }, EC2_EVENT, true],
  [
    "[edge] numeric range open top excludes top",
    { detail: { "c-count": [{ numeric: [">=", 0, "<", 5] }] } },
    EC2_EVENT,
    false,
  ],
  [
    "[UG-operators] price more than 10 and at most 20",
    { Price: [{ numeric: [">", 10, "<=", 20] }] },
    { Price: 20 },
    true,
  ],
  ["[UG-operators] price is 100", { Price: [{ numeric: ["=", 100] }] }, { Price: 100 }, true],
  [
    "[edge] numeric on a numeric-looking string does not match",
    { Price: [{ numeric: ["=", 100] }] },
    { Price: "100" },
    false,
  ],
  ["[edge] numeric on an array: any element", { v: [{ numeric: [">", 10] }] }, { v: [1, 2, 30] }, true],

  // cidr.
  [
    "[UG-filtering] cidr 10.0.0.0/24",
    { detail: { "source-ip": [{ cidr: "10.0.0.0/24" }] } },
    EC2_EVENT,
    true,
  ],
  ["[edge] cidr other subnet", { detail: { "source-ip": [{ cidr: "10.0.1.0/24" }] } }, EC2_EVENT, false],
  ["[edge] cidr /32", { ip: [{ cidr: "10.0.0.33/32" }] }, { ip: "10.0.0.33" }, true],
  ["[UG-filtering] cidr IPv6", { ip: [{ cidr: "2001:db8::/32" }] }, { ip: "2001:db8:0:1::7" }, true],
  ["[edge] cidr IPv6 outside", { ip: [{ cidr: "2001:db8::/32" }] }, { ip: "2001:db9::1" }, false],
  ["[edge] cidr needs an address", { ip: [{ cidr: "10.0.0.0/8" }] }, { ip: "not-an-ip" }, false],

  // exists.
  [
    "[UG-filtering] exists true on a present leaf",
    { detail: { state: [{ exists: true }] } },
    EC2_EVENT,
    true,
  ],
  [
    "[UG-filtering] exists true: event without detail.state",
    { detail: { state: [{ exists: true }] } },
    { "detail-type": "x", detail: { "c-count": { c1: 100 } } },
    false,
  ],
  [
    "[UG-filtering] exists false on a missing field",
    { detail: { "c-count": [{ exists: false }] } },
    d({ state: "x" }),
    true,
  ],
  [
    "[edge] exists false on a present field",
    { detail: { "c-count": [{ exists: false }] } },
    EC2_EVENT,
    false,
  ],
  [
    "[UG-filtering] exists false: c-count is not a leaf node",
    { detail: { "c-count": [{ exists: false }] } },
    d({ state: ["initializing", "running"], "c-count": { c1: 100 } }),
    true,
  ],
  [
    "[edge] exists true on a null value (null is a value)",
    { detail: { responseElements: [{ exists: true }] } },
    NULL_EVENT,
    true,
  ],
  [
    "[edge] exists false under a missing parent",
    { detail: { nested: { x: [{ exists: false }] } } },
    EC2_EVENT,
    true,
  ],

  // Complex and $or.
  [
    "[ruler] complex example",
    {
      time: [{ prefix: "2017-10-02" }],
      detail: {
        state: [{ "anything-but": "initializing" }],
        "c-count": [{ numeric: [">", 0, "<=", 5] }],
        "d-count": [{ numeric: ["<", 10] }],
        "x-limit": [{ "anything-but": [100, 200, 300] }],
        "source-ip": [{ cidr: "10.0.0.0/8" }],
      },
    },
    EC2_EVENT,
    true,
  ],
  [
    "[ruler] $or: source AND (metricName OR namespace), metricName matches",
    {
      source: ["aws.cloudwatch"],
      $or: [{ metricName: ["CPUUtilization", "ReadLatency"] }, { namespace: ["AWS/EC2", "AWS/ES"] }],
    },
    CLOUDWATCH,
    true,
  ],
  [
    "[ruler] $or: neither branch matches",
    {
      source: ["aws.cloudwatch"],
      $or: [{ metricName: ["ReadLatency"] }, { namespace: ["AWS/EC2", "AWS/ES"] }],
    },
    CLOUDWATCH,
    false,
  ],
  [
    "[ruler] $or: AND outside fails",
    { source: ["aws.ec2"], $or: [{ metricName: ["CPUUtilization"] }, { namespace: ["AWS/Lambda"] }] },
    CLOUDWATCH,
    false,
  ],
  [
    "[ruler] $or with an AND inside a branch",
    {
      source: ["aws.cloudwatch"],
      $or: [
        { metricName: ["ReadLatency"] },
        { metricType: ["MetricType"], namespace: ["AWS/EC2", "AWS/Lambda"] },
        { scope: ["Service"] },
      ],
    },
    { ...CLOUDWATCH, metricType: "MetricType" },
    true,
  ],
  [
    "[ruler] nested $or inside a $or branch",
    {
      source: ["aws.cloudwatch"],
      $or: [
        { metricName: ["ReadLatency"] },
        {
          metricType: ["MetricType"],
          namespace: ["AWS/Lambda"],
          $or: [{ metricId: [1234] }, { spaceId: [1000] }],
        },
      ],
    },
    { ...CLOUDWATCH, metricType: "MetricType", spaceId: 1000 },
    true,
  ],
  [
    "[ruler] parallel $or at two levels, second level fails",
    {
      $or: [{ metricName: ["CPUUtilization"] }, { namespace: ["AWS/EC2"] }],
      detail: { $or: [{ source: ["aws.cloudwatch"] }, { "detail-type": ["CloudWatch Alarm State Change"] }] },
    },
    { ...CLOUDWATCH, detail: { source: "other" } },
    false,
  ],
  [
    "[UG-operators] Location is New York or Day is Monday",
    { $or: [{ Location: ["New York"] }, { Day: ["Monday"] }] },
    { Location: "Boston", Day: "Monday" },
    true,
  ],
  [
    "[edge] $or branch with exists false",
    { $or: [{ a: [{ exists: false }] }, { b: ["x"] }] },
    { a: 1, b: "y" },
    false,
  ],
];

describe("matchesEventPattern: the documented examples", () => {
  test.each(ROWS)("%s", (_name, pattern, event, expected) => {
    expect(matchesEventPattern(pattern, event)).toBe(expected);
    // The same pattern given as JSON text compiles to the same matcher.
    expect(matchesEventPattern(JSON.stringify(pattern), event)).toBe(expected);
  });

  test("a compiled pattern is reusable and does not mutate the event", () => {
    const compiled = compileEventPattern({ detail: { state: ["running"] } });
    const event = structuredClone(EC2_EVENT);
    expect(compiled.matches(event)).toBe(true);
    expect(compiled.matches({ ...event, detail: { state: "stopped" } })).toBe(false);
    expect(event).toEqual(EC2_EVENT);
  });

  test("field names from Object.prototype are not found on events that lack them", () => {
    expect(matchesEventPattern({ constructor: [{ exists: true }] }, {})).toBe(false);
    expect(matchesEventPattern({ toString: [{ exists: false }] }, {})).toBe(true);
  });
});

type InvalidRow = readonly [name: string, pattern: unknown, reason: string];

const INVALID: readonly InvalidRow[] = [
  ["not JSON", "{source: [", "pattern is not valid JSON"],
  ["not an object", '["aws.ec2"]', "Filter is not an object"],
  ["empty pattern", {}, "Empty objects are not allowed"],
  ["non-array leaf value", { source: "aws.ec2" }, '"source" must be an object or an array'],
  [
    "numeric leaf value",
    { detail: { count: 5 } },
    'at "detail.count": "count" must be an object or an array',
  ],
  ["empty value array", { source: [] }, "Empty arrays are not allowed"],
  ["nested array value", { source: [["a"]] }, "Match value must be String, number, true, false, or null"],
  ["unknown operator", { source: [{ contains: "ec2" }] }, "Unrecognized match type contains"],
  [
    "two operators in one object",
    { source: [{ prefix: "a", suffix: "b" }] },
    "Only one key allowed in match expression",
  ],
  ["prefix of a number", { source: [{ prefix: 5 }] }, "prefix match pattern must be a string"],
  [
    "exists not boolean",
    { source: [{ exists: "yes" }] },
    "exists match pattern must be either true or false.",
  ],
  ["numeric not an array", { n: [{ numeric: ">" }] }, "Value of numeric must be an array."],
  ["numeric unknown operator", { n: [{ numeric: ["!=", 3] }] }, "Unrecognized numeric range operator: !="],
  ["numeric value not a number", { n: [{ numeric: [">", "3"] }] }, "Value of > must be numeric"],
  [
    "numeric range with a bad top operator",
    { n: [{ numeric: [">", 0, ">", 5] }] },
    "Bad numeric range operator: >",
  ],
  ["numeric range upside down", { n: [{ numeric: [">", 10, "<", 5] }] }, "Bottom must be less than top"],
  [
    "numeric = with extra terms",
    { n: [{ numeric: ["=", 1, "<", 5] }] },
    "Too many elements in numeric expression",
  ],
  [
    "numeric range with extra terms",
    { n: [{ numeric: [">", 0, "<", 5, 6] }] },
    "Too many terms in numeric range expression",
  ],
  ["numeric out of range", { n: [{ numeric: ["<", 6e9] }] }, "must be between -5.0E9 and 5.0E9, inclusive"],
  [
    "anything-but boolean",
    { s: [{ "anything-but": true }] },
    "Value of anything-but must be an array or single string/number value.",
  ],
  [
    "anything-but mixed list",
    { s: [{ "anything-but": ["a", 1] }] },
    "either all values are number or string",
  ],
  [
    "anything-but list with null",
    { s: [{ "anything-but": ["a", null] }] },
    "start|null|boolean is not supported",
  ],
  [
    "anything-but unknown inner operator",
    { s: [{ "anything-but": { numeric: [">", 1] } }] },
    "Unsupported anything-but pattern: numeric",
  ],
  [
    "anything-but empty prefix",
    { s: [{ "anything-but": { prefix: "" } }] },
    "Null prefix/suffix not allowed",
  ],
  ["wildcard with consecutive *", { s: [{ wildcard: "a**b" }] }, "Consecutive wildcard characters at pos 2"],
  ["wildcard with a bad escape", { s: [{ wildcard: "a\\b" }] }, "Invalid escape character at pos 1"],
  ["cidr without prefix length", { ip: [{ cidr: "10.0.0.1" }] }, "one '/' is required"],
  ["cidr with a bad address", { ip: [{ cidr: "10.0.0.300/8" }] }, "is not an IP address"],
  ["cidr prefix too long", { ip: [{ cidr: "10.0.0.0/33" }] }, "prefix length must be between 0 and 32"],
  ["$or not an array", { $or: { a: ["x"] } }, "It must be an Array followed with $or."],
  ["$or with one branch", { $or: [{ a: ["x"] }] }, "There must have at least 2 Objects in $or relationship."],
  [
    "$or with a non-object branch",
    { $or: [{ a: ["x"] }, ["b"]] },
    "Only JSON object is allowed in array of $or relationship.",
  ],
  [
    "operator name as a field inside $or",
    { $or: [{ numeric: [1] }, { a: ["x"] }] },
    "numeric is a reserved field name",
  ],
];

describe("validateEventPattern: what AWS rejects with InvalidEventPatternException", () => {
  test.each(INVALID)("%s", (_name, pattern, reason) => {
    let caught: unknown;
    try {
      validateEventPattern(pattern);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidEventPatternError);
    const err = caught as InvalidEventPatternError;
    expect(err.code).toBe("InvalidEventPatternException");
    expect(err.name).toBe("InvalidEventPatternException");
    expect(err.message).toContain(reason);
    expect(() => matchesEventPattern(pattern, EC2_EVENT)).toThrow(reason);
  });

  test("the error names where in the pattern the problem is", () => {
    expect(() => validateEventPattern({ detail: { state: [{ prefix: 1 }] } })).toThrow(
      'Event pattern is not valid. Reason: at "detail.state": prefix match pattern must be a string',
    );
  });

  test("valid patterns pass", () => {
    for (const [, pattern] of ROWS) expect(() => validateEventPattern(pattern)).not.toThrow();
  });
});

// ---------------------------------------------------------------------------------------------
// The rest of the documented language. Sources as above, plus
// [ruler-dots]  aws/event-ruler README, "Caveat: Compiled rules and JSON keys with dots"
// [ruler-rc]    aws/event-ruler JsonRuleCompiler (its messages are AWS's "Reason: …")
// [edge] rows on a path given twice: AWS documents nothing and event-ruler keeps the last by
//               default, so the embedded bus refuses them rather than guess.
// [UG-complex]  "Comparison operators", section "Wildcards and event pattern complexity": a rule
//               that is too complex is refused with InvalidEventPatternException. AWS publishes no
//               number; event-ruler's MachineComplexityEvaluator is the measure, and a user report
//               (three `*:stack/<name>/*` values accepted, a fourth refused: "Rule is too complex")
//               fixes the threshold between 9 and 12 — taken as "more than 10".

const FILES = (path: string) => ({ detail: { FilePath: path } });

const MORE_ROWS: readonly Row[] = [
  // anything-but with lists of prefixes, suffixes, wildcards and case-folded values.
  [
    "[ruler] anything-but prefix list: neither prefix",
    { detail: { state: [{ "anything-but": { prefix: ["init", "error"] } }] } },
    EC2_EVENT,
    true,
  ],
  [
    "[ruler] anything-but prefix list: the first prefix",
    { detail: { state: [{ "anything-but": { prefix: ["init", "error"] } }] } },
    d({ state: "initializing" }),
    false,
  ],
  [
    "[ruler] anything-but prefix list: the second prefix",
    { detail: { state: [{ "anything-but": { prefix: ["init", "error"] } }] } },
    d({ state: "error-disk" }),
    false,
  ],
  [
    "[ruler] anything-but suffix list: neither suffix",
    { detail: { "instance-id": [{ "anything-but": { suffix: ["1234", "6789"] } }] } },
    EC2_EVENT,
    true,
  ],
  [
    "[ruler] anything-but suffix list: the second suffix",
    { detail: { "instance-id": [{ "anything-but": { suffix: ["1234", "6789"] } }] } },
    d({ "instance-id": "i-000000aaaaaa06789" }),
    false,
  ],
  [
    "[ruler] anything-but wildcard list: a .class under bin",
    { detail: { FilePath: [{ "anything-but": { wildcard: ["*/bin/*.jar", "*/bin/*.class"] } }] } },
    FILES("/usr/bin/App.class"),
    false,
  ],
  [
    "[ruler] anything-but wildcard list: a .jar under lib",
    { detail: { FilePath: [{ "anything-but": { wildcard: ["*/bin/*.jar", "*/bin/*.class"] } }] } },
    FILES("/usr/lib/App.jar"),
    true,
  ],
  [
    "[ruler] anything-but equals-ignore-case list: another casing of a listed value",
    { detail: { state: [{ "anything-but": { "equals-ignore-case": ["Stopped", "OverLoaded"] } }] } },
    d({ state: "OVERLOADED" }),
    false,
  ],
  [
    "[edge] anything-but prefix list: a number is no string, so it is not excluded",
    { detail: { "c-count": [{ "anything-but": { prefix: ["5", "init"] } }] } },
    EC2_EVENT,
    true,
  ],
  [
    "[edge] anything-but prefix list needs the field present",
    { detail: { missing: [{ "anything-but": { prefix: ["init"] } }] } },
    EC2_EVENT,
    false,
  ],

  // Keys with dots: a field is its path joined with dots, in the pattern and in the event.
  [
    "[ruler-dots] nested pattern, nested event",
    { detail: { state: { status: ["running"] } } },
    { detail: { state: { status: "running" } } },
    true,
  ],
  [
    "[ruler-dots] dotted pattern key, nested event",
    { detail: { "state.status": ["running"] } },
    { detail: { state: { status: "running" } } },
    true,
  ],
  [
    "[ruler-dots] nested pattern, dotted event key",
    { detail: { state: { status: ["running"] } } },
    { detail: { "state.status": "running" } },
    true,
  ],
  [
    "[ruler-dots] dotted pattern key, dotted event key",
    { detail: { "state.status": ["running"] } },
    { detail: { "state.status": "running" } },
    true,
  ],
  [
    "[ruler-dots] a dotted top-level key reaches into detail",
    { "detail.state.status": [{ prefix: "run" }] },
    { detail: { state: { status: "running" } } },
    true,
  ],
  [
    "[ruler-dots] the value still has to match",
    { detail: { "state.status": ["stopped"] } },
    { detail: { "state.status": "running" } },
    false,
  ],
  [
    "[ruler-dots] exists:false sees a dotted event key",
    { detail: { state: { status: [{ exists: false }] } } },
    { detail: { "state.status": "running" } },
    false,
  ],
  [
    "[ruler-dots] exists:true sees a dotted event key",
    { detail: { state: { status: [{ exists: true }] } } },
    { detail: { "state.status": "running" } },
    true,
  ],
  [
    "[ruler-dots] a dotted key and its nested twin are two values of one field",
    { detail: { "state.status": ["stopped"] } },
    { detail: { state: { status: "running" }, "state.status": "stopped" } },
    true,
  ],
  [
    "[ruler-dots] a dotted and a nested field under one object match within one array element",
    { detail: { "x.a": ["1"], x: { b: ["2"] } } },
    {
      detail: {
        x: [
          { a: "1", b: "3" },
          { a: "3", b: "2" },
        ],
      },
    },
    false,
  ],
  [
    "[ruler-dots] … and match when one element holds both",
    { detail: { "x.a": ["1"], x: { b: ["2"] } } },
    {
      detail: {
        x: [
          { a: "3", b: "3" },
          { a: "1", b: "2" },
        ],
      },
    },
    true,
  ],
  [
    "[ruler-dots] dotted keys inside $or branches",
    { $or: [{ "detail.state": ["stopped"] }, { "detail.c-count": [{ numeric: [">", 4] }] }] },
    EC2_EVENT,
    true,
  ],

  // Wildcard complexity: at the limit the pattern is accepted and matches.
  [
    "[UG-complex] three *:stack/<name>/* values in one field are accepted",
    {
      detail: {
        "stack-id": [
          { wildcard: "*:stack/api/*" },
          { wildcard: "*:stack/web/*" },
          { wildcard: "*:stack/db/*" },
        ],
      },
    },
    { detail: { "stack-id": "arn:aws:cloudformation:us-east-1:1:stack/web/1f2e" } },
    true,
  ],
  [
    "[UG-complex] an anything-but wildcard list is one pattern: four values are accepted",
    {
      detail: {
        "stack-id": [
          { "anything-but": { wildcard: ["*:stack/a/*", "*:stack/b/*", "*:stack/c/*", "*:stack/d/*"] } },
        ],
      },
    },
    { detail: { "stack-id": "arn:aws:cloudformation:us-east-1:1:stack/e/1f2e" } },
    true,
  ],
];

describe("matchesEventPattern: anything-but lists, dotted keys, complex wildcards", () => {
  test.each(MORE_ROWS)("%s", (_name, pattern, event, expected) => {
    expect(matchesEventPattern(pattern, event)).toBe(expected);
    expect(matchesEventPattern(JSON.stringify(pattern), event)).toBe(expected);
  });

  test("an event with dotted keys is matched without being changed", () => {
    const event = { detail: { "state.status": "running" } };
    const copy = structuredClone(event);
    expect(compileEventPattern({ detail: { state: { status: ["running"] } } }).matches(event)).toBe(true);
    expect(event).toEqual(copy);
  });
});

const stackWildcards = (n: number) =>
  ["api", "web", "db", "jobs", "auth"].slice(0, n).map((name) => ({ wildcard: `*:stack/${name}/*` }));

const MORE_INVALID: readonly InvalidRow[] = [
  [
    "[ruler-rc] anything-but prefix list with a number",
    { s: [{ "anything-but": { prefix: ["a", 1] } }] },
    "prefix/suffix match pattern must be a string",
  ],
  [
    "[ruler-rc] anything-but prefix list with an empty prefix",
    { s: [{ "anything-but": { prefix: ["a", ""] } }] },
    "Null prefix/suffix not allowed",
  ],
  [
    "[ruler-rc] anything-but suffix list with null",
    { s: [{ "anything-but": { suffix: [".png", null] } }] },
    "prefix/suffix match pattern must be a string",
  ],
  [
    "[ruler-rc] anything-but suffix of a number",
    { s: [{ "anything-but": { suffix: 5 } }] },
    "prefix/suffix match pattern must be a string",
  ],
  [
    "[ruler-rc] anything-but wildcard list with a number",
    { s: [{ "anything-but": { wildcard: ["*.png", 5] } }] },
    "wildcard match pattern must be a string",
  ],
  [
    "[ruler-rc] anything-but wildcard list with a bad wildcard",
    { s: [{ "anything-but": { wildcard: ["*.png", "a**b"] } }] },
    "Consecutive wildcard characters at pos 2",
  ],
  [
    "[ruler-rc] anything-but equals-ignore-case list with a number",
    { s: [{ "anything-but": { "equals-ignore-case": ["a", 1] } }] },
    "Inside anything-but/equals-ignore-case list, number|start|null|boolean is not supported.",
  ],
  [
    "[ruler-rc] anything-but prefix of an object",
    { s: [{ "anything-but": { prefix: { "equals-ignore-case": "a" } } }] },
    "Value of anything-but must be an array or single string/number value.",
  ],
  [
    "[ruler-rc] anything-but with two operators",
    { s: [{ "anything-but": { prefix: "a", suffix: "b" } }] },
    "Only one key allowed in anything-but expression",
  ],
  [
    "[edge] one field given dotted and nested",
    { detail: { "state.status": ["a"], state: { status: ["b"] } } },
    "Path `detail.state.status` cannot be allowed multiple times",
  ],
  [
    "[edge] one field given at the top level and dotted",
    { "detail.state": ["a"], detail: { state: ["b"] } },
    "Path `detail.state` cannot be allowed multiple times",
  ],
  [
    "[edge] one field both beside and inside $or",
    { source: ["a"], $or: [{ source: ["b"] }, { account: ["1"] }] },
    "Path `source` cannot be allowed multiple times",
  ],
  [
    "[UG-complex] four *:stack/<name>/* values in one field",
    { detail: { "stack-id": stackWildcards(4) } },
    'at "detail.stack-id": Rule is too complex - try using fewer wildcard characters or fewer repeating character sequences after a wildcard character',
  ],
  [
    "[UG-complex] the same field's wildcards across $or branches are measured together",
    {
      $or: [
        { detail: { "stack-id": stackWildcards(2) } },
        { detail: { "stack-id": stackWildcards(4).slice(2) } },
      ],
    },
    "Rule is too complex",
  ],
  [
    "[UG-complex] eleven wildcard values in one field: all eleven are live after the first byte",
    { s: Array.from({ length: 11 }, (_, i) => ({ wildcard: `v${i}-*` })) },
    "Rule is too complex",
  ],
  [
    "[UG-complex] repeating characters after a wildcard",
    { s: [{ wildcard: "*aaaaaaaaaaa" }] },
    "Rule is too complex",
  ],
];

describe("validateEventPattern: the rest of what AWS rejects", () => {
  test.each(MORE_INVALID)("%s", (_name, pattern, reason) => {
    expect(() => validateEventPattern(pattern)).toThrow(InvalidEventPatternError);
    expect(() => validateEventPattern(pattern)).toThrow(reason);
  });

  test("fields with the same name in different branches of $or are fine", () => {
    expect(() => validateEventPattern({ $or: [{ source: ["a"] }, { source: ["b"] }] })).not.toThrow();
  });

  test("ten wildcard values in one field are accepted", () => {
    const pattern = { s: Array.from({ length: 10 }, (_, i) => ({ wildcard: `v${i}-*` })) };
    expect(() => validateEventPattern(pattern)).not.toThrow();
    expect(matchesEventPattern(pattern, { s: "v7-x" })).toBe(true);
  });

  test("wildcards in different fields are measured apart", () => {
    const pattern = { detail: { a: stackWildcards(3), b: stackWildcards(3) } };
    expect(() => validateEventPattern(pattern)).not.toThrow();
  });
});
