/**
 * The dashboard in a real browser: Debian's Chromium driven by puppeteer-core, against the embedded
 * runtime with real agent processes and the dashboard `npm start` serves (local/dashboard.ts).
 * Screenshots go to test-results/ (kept by CI as artifacts). One runtime and one browser for the
 * file; each scenario submits its own sessions (and one its own deployment).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createServer, get, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DetailType, toPutEventsEntry } from "../functions/core/events.ts";
import { newSession } from "../functions/core/sessions.ts";
import { SPEC_DEFAULTS } from "../functions/core/spec.ts";
import { parseRetryPolicy } from "../functions/core/retry/policy.ts";
import type { DashboardServer } from "../dashboard/server.ts";
import { startLocalDashboard } from "../local/dashboard.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { until } from "./support/until.ts";

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";
const RESULTS = resolve("test-results");
/** `CAIRN_DOCS_SCREENSHOTS=1` also writes docs/dashboard.md's screenshots (docs/images/), cropped. */
const DOCS = process.env["CAIRN_DOCS_SCREENSHOTS"] === "1" ? resolve("docs/images") : undefined;

/** The full page under test-results/, and the top `height` pixels for docs/dashboard.md when asked. */
async function screenshot(page: Page, name: string, height: number): Promise<void> {
  await page.screenshot({ path: `${RESULTS}/${name}.png`, fullPage: true });
  if (DOCS !== undefined) {
    mkdirSync(DOCS, { recursive: true });
    await page.screenshot({ path: `${DOCS}/${name}.png`, clip: { x: 0, y: 0, width: 1100, height } });
  }
}
const sh = (script: string) => ["/bin/sh", "-c", script];
let n = 0;
const newId = (label: string) => `dash-${label}-${Date.now().toString(36)}-${n++}`;

/**
 * The DOM the callbacks run in the page read, declared here: the project compiles without the
 * DOM lib (its one browser script is plain JavaScript).
 */
interface El {
  readonly textContent: string | null;
  readonly className: string;
  getAttribute(name: string): string | null;
  querySelector(selector: string): El | null;
  checkVisibility(): boolean;
}
interface BrowserGlobals {
  getComputedStyle(element: El): { color: string };
}

let rt: TestRuntime;
let dashboard: DashboardServer;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`,
    );
  }
  mkdirSync(RESULTS, { recursive: true });
  [rt, browser] = await Promise.all([
    startTestRuntime({ agents: 2, agentCapacity: { cpu: 2, memoryMiB: 1024 }, retryCacheMs: 200 }),
    puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
    }),
  ]);
  // Counts taken afresh for every page, so that a test can compare them with the table.
  dashboard = await startLocalDashboard(rt.runtime.info, { counts: { liveTtlMs: 0, endedTtlMs: 0 } });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
  await rt?.stop();
});

async function open(path: string): Promise<Page> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 900 });
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  const response = await page.goto(new URL(path, dashboard.url).href, { waitUntil: "load" });
  expect(response?.status(), `GET ${path}`).toBe(200);
  // No script error and no CSP violation on any page.
  expect(errors).toEqual([]);
  return page;
}

/** The badge of each task row: display name and computed colour. */
function taskBadges(page: Page): Promise<{ text: string; cls: string; color: string }[]> {
  return page.$$eval("table.tasks tbody tr td:nth-child(2) .badge", (badges) =>
    (badges as unknown as El[]).map((b) => ({
      text: b.textContent ?? "",
      cls: b.className,
      color: (globalThis as unknown as BrowserGlobals).getComputedStyle(b).color,
    })),
  );
}

describe("the dashboard in Chromium", () => {
  test("a gang job whose task fails shows FAILED and WORKER_FAILED in the seed's colours", async () => {
    const id = newId("gang");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "gang",
        replicas: 2,
        coscheduled: true,
        resources: { cpu: 1, memoryMiB: 64 },
        command: sh(`if [ "$CAIRN_TASK_INDEX" = "1" ]; then sleep 0.5; exit 1; fi; exec sleep 60`),
      },
    });
    await until("the job's final state", async () => (await rt.store.getJob(id))?.final);
    const page = await open(`/jobs/${id}`);
    expect(await taskBadges(page)).toEqual([
      { text: "worker_failed", cls: "badge status-worker_failed", color: "rgb(130, 80, 223)" },
      { text: "failed", cls: "badge status-failed", color: "rgb(207, 34, 46)" },
    ]);
    const state = await page.$eval("main > p .badge", (badge) => {
      const b = badge as unknown as El;
      return {
        text: b.textContent,
        color: (globalThis as unknown as BrowserGlobals).getComputedStyle(b).color,
      };
    });
    expect(state).toEqual({ text: "failed", color: "rgb(207, 34, 46)" });
    expect(await page.$eval(".job-reason", (e) => (e as unknown as El).textContent)).toBe(
      "1 task failed (maxTaskFailures 0)",
    );
    // A link per task, to its session's kernel.
    expect(
      await page.$$eval("table.tasks td:first-child a", (as) =>
        (as as unknown as El[]).map((a) => a.getAttribute("href")),
      ),
    ).toEqual([`/sessions/${id}#kernel-0`, `/sessions/${id}#kernel-1`]);
    await screenshot(page, "dashboard-job", 440);
    await page.close();
  });

  test("a retried session's timeline shows two runs and the backoff between them", async () => {
    const policy = `p-${Date.now().toString(36)}`;
    await rt.store.createRetryPolicy(
      parseRetryPolicy({
        apiVersion: "cairn.dev/v1",
        kind: "RetryPolicy",
        metadata: { name: policy },
        spec: {
          rules: [
            {
              action: "Retry",
              onExitCodes: { operator: "In", values: [3] },
              backoff: { initialDelay: "1s" },
            },
          ],
        },
      }),
      Date.now(),
    );
    const id = newId("retry");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "retried",
        resources: { cpu: 1, memoryMiB: 64 },
        command: sh(
          `echo "run $CAIRN_RUN_INDEX"; if [ "$CAIRN_RUN_INDEX" = "0" ]; then exit 3; fi; echo done`,
        ),
        retry: { policies: [policy] },
      },
    });
    await rt.waitForEnd(id, 60_000);
    const page = await open(`/sessions/${id}`);
    const runs = await page.$$eval("svg.timeline g[data-run] rect.run-band", (rects) =>
      (rects as unknown as El[]).map((r) => ({
        cls: r.getAttribute("class"),
        title: r.querySelector("title")?.textContent ?? "",
      })),
    );
    expect(runs).toHaveLength(2);
    expect(runs[0]).toMatchObject({ cls: "run-band status-failed" });
    expect(runs[0]?.title).toMatch(/^run 0: FAILED · exit 3; retried: /);
    expect(runs[1]).toMatchObject({ cls: "run-band status-succeeded" });
    const backoffs = await page.$$eval("svg.timeline rect.backoff title", (ts) =>
      (ts as unknown as El[]).map((t) => t.textContent),
    );
    expect(backoffs).toHaveLength(1);
    expect(backoffs[0]).toMatch(/^backoff 1\.0 s after run 0, until /);
    // Stages entered, each with its expiry deadline; the history records at their times.
    const stages = await page.$$eval("svg.timeline g.stage-entry", (gs) =>
      (gs as unknown as El[]).map((g) => g.getAttribute("data-status")),
    );
    expect(stages).toEqual(expect.arrayContaining(["PENDING", "RUNNING", "TERMINATING", "TERMINATED"]));
    expect(stages.filter((s) => s === "RUNNING")).toHaveLength(2);
    expect(
      await page.$$eval("svg.timeline .deadline", (ds) => (ds as unknown as El[]).length),
    ).toBeGreaterThan(4);
    expect(
      await page.$$eval(
        "svg.timeline g.history-mark[data-result='REQUEUED']",
        (ms) => (ms as unknown as El[]).length,
      ),
    ).toBeGreaterThanOrEqual(1);
    // Retries used of each budget: the failure budget, the global cap and the policy's rule.
    const budgets = await page.$$eval("table.budgets tbody tr", (trs) =>
      (trs as unknown as El[]).map((tr) => tr.textContent?.replace(/\s+/g, " ").trim()),
    );
    expect(budgets).toEqual(
      expect.arrayContaining([
        "failure (FAILED runs) 1 0 (default; applies when no retry policy does)",
        "counted retries (global cap under policies) 1 20 (globalMaxRetries)",
        `rule ${policy}#0 1 the rule's retryLimit`,
      ]),
    );
    expect(await page.$eval("a.execution", (a) => (a as unknown as El).getAttribute("href"))).toBe(
      `/sessions/${id}/execution`,
    );
    // The log tail of the last run, read from the runtime's CloudWatch Logs.
    await until("the log tail", async () =>
      (await page.$eval("#log-0", (e) => (e as unknown as El).textContent ?? "")).includes("run 1\ndone")
        ? true
        : undefined,
    );
    await screenshot(page, "dashboard-timeline", 640);
    // An earlier run's log, from the runs table.
    await Promise.all([
      page.waitForNavigation(),
      page.locator(`tr[data-run-row="0"] a[href$="?run=0#logs"]`).click(),
    ]);
    await until("run 0's log", async () =>
      (await page.$eval("#log-0", (e) => (e as unknown as El).textContent ?? "")) === "run 0\n"
        ? true
        : undefined,
    );
    const execution = await open(`/sessions/${id}/execution`);
    expect(
      await execution.$$eval("table.execution-history tbody tr", (rows) => (rows as unknown as El[]).length),
    ).toBeGreaterThan(10);
    await execution.close();
    await page.close();
  });

  test("a pending session shows why it waits; cancelling it from the page cancels it", async () => {
    const id = newId("pending");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "too-big",
        resources: { cpu: 64, memoryMiB: 64 },
        command: ["/bin/true"],
        schedulingTimeout: 600,
      },
    });
    const { session } = await rt.waitFor(
      id,
      (s) => s.session.pendingReason !== undefined,
      "a pending reason",
    );
    const list = await open(`/?status=PENDING`);
    const row = await list.$eval(
      `tr[data-session="${id}"] td.note`,
      (td) => (td as unknown as El).textContent,
    );
    expect(row).toBe(session.pendingReason);
    expect(session.pendingReason).toMatch(/no agent matches/);
    await list.close();

    // The job page shows it under the task's state.
    const job = await open(`/jobs/${id}`);
    expect(await taskBadges(job)).toEqual([
      { text: "pending", cls: "badge status-pending", color: "rgb(154, 103, 0)" },
    ]);
    expect(await job.$eval("span.pending-reason", (e) => (e as unknown as El).textContent)).toBe(
      session.pendingReason,
    );
    await job.close();

    const page = await open(`/sessions/${id}`);
    expect(await page.$eval("p.pending-reason", (p) => (p as unknown as El).textContent)).toBe(
      `Waiting because: ${session.pendingReason}`,
    );
    // The confirmation is in the page: the button appears only once the cancel is opened.
    expect(await page.$eval("details.cancel button", (b) => (b as unknown as El).checkVisibility())).toBe(
      false,
    );
    await page.click("details.cancel summary");
    await Promise.all([page.waitForNavigation(), page.locator("details.cancel button.danger").click()]);
    expect(page.url()).toBe(new URL(`/sessions/${id}?cancel=requested`, dashboard.url).href);
    expect(await page.$eval("p.notice", (p) => (p as unknown as El).textContent)).toBe(
      `Cancel requested for session ${id}.`,
    );
    const ended = await rt.waitForEnd(id);
    expect(ended.session.status).toBe("CANCELLED");
    expect(ended.session.cancelReason).toBe("cancelled from the dashboard");
    // The live refresh brings the new status into the open page.
    await until("the page shows CANCELLED", async () =>
      (await page.$eval("main .badge", (b) => (b as unknown as El).textContent)) === "CANCELLED"
        ? true
        : undefined,
    );
    await page.close();
  });

  test("a running task's log is followed as it is written", async () => {
    const id = newId("follow");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "talker",
        resources: { cpu: 1, memoryMiB: 64 },
        command: sh(`echo first; sleep 3; echo "<b>second</b>"; sleep 30`),
      },
    });
    await rt.waitForStatus(id, "RUNNING");
    const page = await open(`/sessions/${id}`);
    expect(await page.$eval("input.follow", (e) => (e as unknown as { checked: boolean }).checked)).toBe(
      true,
    );
    expect(await page.$eval("#log-0", (e) => (e as unknown as El).textContent ?? "")).not.toContain("second");
    // Written after the page was served: only the follow brings it, as text.
    await until("the second line", async () =>
      (await page.$eval("#log-0", (e) => (e as unknown as El).textContent ?? "")).includes(
        "first\n<b>second</b>\n",
      )
        ? true
        : undefined,
    );
    expect(await page.$$eval("#log-0 b", (els) => (els as unknown as El[]).length)).toBe(0);
    await page.close();
    await rt.cancel(id, "done following");
  });

  test("a cancel POST from another origin is refused", async () => {
    const id = newId("origin");
    await rt.submit({
      sessionId: id,
      spec: { name: "sleeper", command: ["sleep", "30"], resources: { cpu: 1, memoryMiB: 64 } },
    });
    // A submission is taken in through the bus: the session is there to cancel once it runs.
    await rt.waitForStatus(id, "RUNNING");
    const post = (origin: string) =>
      fetch(new URL("/cancel", dashboard.url), {
        method: "POST",
        headers: { Origin: origin, "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ kind: "session", id, confirm: "yes", reason: "x" }),
        redirect: "manual",
      });
    const refused = await post("http://evil.example");
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain(
      "cancel refused: Origin http://evil.example is not this dashboard",
    );
    expect((await rt.store.getSession(id))?.session.cancelRequestedAtMs).toBeUndefined();
    const accepted = await post(new URL(dashboard.url).origin);
    expect(accepted.status).toBe(303);
    await rt.waitForEnd(id);
  });

  test("a session name containing <script> renders as text", async () => {
    const id = newId("xss");
    const name = `<script>window.__owned = 1</script><img src=x onerror="window.__owned = 2">`;
    // Names are validated at submission: this one can only come from the table itself.
    await rt.store.createSession(
      newSession(id, { ...SPEC_DEFAULTS, name, command: ["/bin/true"] }, Date.now()),
    );
    for (const path of [`/sessions/${id}`, `/?name=${encodeURIComponent("<script>")}`, `/jobs/${id}`]) {
      const page = await open(path);
      expect(
        await page.evaluate(() => (globalThis as unknown as { __owned?: number }).__owned),
      ).toBeUndefined();
      expect(await page.$$eval("main script, main img", (els) => els.length)).toBe(0);
      const shown = await page.$eval("main", (main) => (main as unknown as El).textContent);
      expect(shown).toContain(name);
      if (path.startsWith("/sessions/")) await page.screenshot({ path: `${RESULTS}/dashboard-escaping.png` });
      await page.close();
    }
  });

  test("agents, queues and the list's counts", async () => {
    const agents = await open("/agents");
    const rows = await agents.$$eval("table.agents tbody tr", (trs) =>
      (trs as unknown as El[]).map((tr) => [
        tr.getAttribute("data-agent"),
        tr.querySelector(".liveness")?.textContent,
      ]),
    );
    expect(rows).toEqual([
      ["agent-1", "live"],
      ["agent-2", "live"],
    ]);
    await agents.screenshot({ path: `${RESULTS}/dashboard-agents.png`, fullPage: true });
    await agents.close();
    const queues = await open("/queues");
    expect(
      await queues.$$eval("table.policies tr", (trs) => (trs as unknown as El[]).length),
    ).toBeGreaterThan(0);
    await queues.close();
    const list = await open("/");
    const readCounts = (): Promise<Record<string, number>> =>
      list.$$eval(".counts a", (as) =>
        Object.fromEntries(
          (as as unknown as El[]).map((a): [string, number] => [
            a.getAttribute("data-count") ?? "",
            Number(a.querySelector("b")?.textContent),
          ]),
        ),
      );
    const endedIn = (items: readonly { status: string }[]): number =>
      items.filter((x) => x.status === "TERMINATED" || x.status === "CANCELLED").length;
    // Counts are cached and refreshed behind the page, and sessions of earlier tests may still be
    // ending: the live refresh must come to agree with the table as it is when the page is read.
    await until("the counts to match the table", async () => {
      const seen = await readCounts();
      const sessions = await rt.store.listRecentSessions({ limit: 1000 });
      const ended = endedIn(sessions.items);
      const shown = (seen["TERMINATED"] ?? 0) + (seen["CANCELLED"] ?? 0);
      return seen["ALL"] === sessions.items.length && shown === ended ? seen : undefined;
    });
    await list.screenshot({ path: `${RESULTS}/dashboard-list.png`, fullPage: true });
    await list.close();
  });
});

describe("deployments in Chromium", () => {
  test("a deployment's replica comes up HEALTHY in the list and on its page, with its session and executions", async () => {
    const id = newId("svc");
    const server =
      'require("node:http").createServer((q, s) => s.end("ok")).listen(Number(process.env.CAIRN_PORT), "127.0.0.1");';
    await rt.put(
      toPutEventsEntry(rt.runtime.info.eventBusName, DetailType.DeploymentCreated, {
        deploymentId: id,
        spec: {
          name: id,
          replicas: 1,
          service: {
            command: ["/bin/sh", "-c", 'node -e "$SERVER"; sleep 3600'],
            env: { SERVER: server },
            resources: { cpu: 0.25, memoryMiB: 64 },
          },
          healthCheck: { intervalSeconds: 2, timeoutSeconds: 1 },
        },
      }),
    );
    // The list's live refresh brings the deployment to READY with its one replica healthy.
    const list = await open("/deployments");
    const row = `tr[data-deployment="${id}"]`;
    await until(
      "the list to show READY, 1 / 1, 1 healthy",
      async () => {
        const cells = await list
          .$$eval(`${row} td`, (tds) => (tds as unknown as El[]).map((td) => td.textContent?.trim()))
          .catch(() => []);
        return cells[1] === "READY" && cells[2] === "1 / 1" && cells[3] === "1" ? cells : undefined;
      },
      60_000,
      250,
    );
    expect(
      await list.$eval(`${row} .badge`, (b) => [
        (b as unknown as El).className,
        (globalThis as unknown as BrowserGlobals).getComputedStyle(b as unknown as El).color,
      ]),
    ).toEqual(["badge deployment-ready", "rgb(9, 105, 218)"]);
    await Promise.all([list.waitForNavigation(), list.locator(`${row} a`).click()]);
    expect(list.url()).toBe(new URL(`/deployments/${id}`, dashboard.url).href);
    const route = `tr[data-route="${id}-r0"]`;
    const routeCells = await until(
      "the route to be HEALTHY with a probe",
      async () => {
        const cells = await list.$$eval(`${route} td`, (tds) =>
          (tds as unknown as El[]).map((td) => td.textContent?.replace(/\s+/g, " ").trim() ?? ""),
        );
        return cells[1] === "HEALTHY" && /^\d/.test(cells[4] ?? "") ? cells : undefined;
      },
      30_000,
      250,
    );
    expect(
      await list.$eval(
        `${route} .badge`,
        (b) => (globalThis as unknown as BrowserGlobals).getComputedStyle(b as unknown as El).color,
      ),
    ).toBe("rgb(26, 127, 55)");
    // agent:port is where the replica answers.
    const [, port] = /^agent-\d+:(\d+)$/.exec(routeCells[2] ?? "") ?? [];
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
    await screenshot(list, "dashboard-deployment", 700);
    // The deployment's execution and the route's: the embedded engine's history of each.
    for (const [link, first] of [
      ["dd a.execution", "ExecutionStarted"],
      [`${route} a.execution`, "ExecutionStarted"],
    ] as const) {
      const href = await list.$eval(link, (a) => (a as unknown as El).getAttribute("href") ?? "");
      const execution = await open(href);
      const types = await execution.$$eval("table.execution-history tbody td:nth-child(3)", (tds) =>
        (tds as unknown as El[]).map((td) => td.textContent ?? ""),
      );
      expect(types[0], href).toBe(first);
      expect(types.length, href).toBeGreaterThan(2);
      await execution.close();
    }
    // The route's session is an ordinary session, on its own page.
    await Promise.all([
      list.waitForNavigation(),
      list.locator(`${route} a[href="/sessions/${id}-r0"]`).click(),
    ]);
    expect(await list.$eval("h1", (h) => (h as unknown as El).textContent)).toContain(`${id}-r0`);
    await list.close();

    await rt.put(
      toPutEventsEntry(rt.runtime.info.eventBusName, DetailType.DeploymentDestroyRequested, {
        deploymentId: id,
      }),
    );
    await rt.waitForEnd(`${id}-r0`, 60_000);
  }, 120_000);
});

describe("cairn dashboard, pointed at the runtime's endpoints as at AWS", () => {
  const children: ChildProcess[] = [];
  let proxy: Server | undefined;
  afterAll(() => {
    for (const c of children) c.kill("SIGKILL");
    proxy?.close();
  });

  /** The CLI's environment: no AWS or Cairn settings but the ones given. */
  function cliEnv(extra: Record<string, string>): Record<string, string> {
    const inherited = Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined && !entry[0].startsWith("AWS_") && !entry[0].startsWith("CAIRN_"),
    );
    const { info } = rt.runtime;
    return {
      ...Object.fromEntries(inherited),
      AWS_REGION: info.region,
      AWS_ACCESS_KEY_ID: info.credentials.client.accessKeyId,
      AWS_SECRET_ACCESS_KEY: info.credentials.client.secretAccessKey,
      ...extra,
    };
  }

  /** Runs `cairn dashboard …` until it prints its URL. */
  async function cliDashboard(
    args: readonly string[],
    env: Record<string, string>,
  ): Promise<{ url: string; stop(): Promise<number | null>; stderr(): string }> {
    const cli = spawn(process.execPath, [resolve("bin/cairn.js"), "dashboard", ...args], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(cli);
    let stdout = "";
    let stderr = "";
    cli.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    cli.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const url = await until(
      "the dashboard's URL",
      () => {
        if (cli.exitCode !== null) throw new Error(`cairn dashboard exited ${cli.exitCode}: ${stderr}`);
        return Promise.resolve(/cairn dashboard: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stdout)?.[1]);
      },
      20_000,
    );
    return {
      url,
      stderr: () => stderr,
      stop: () => {
        cli.kill("SIGINT");
        return new Promise((done) => cli.once("exit", (c) => done(c)));
      },
    };
  }

  async function expectPages(url: string, execution: string): Promise<void> {
    const newest = (await rt.store.listRecentSessions({ limit: 1 })).items[0]!;
    const list = await fetch(url);
    expect(list.status).toBe(200);
    expect(list.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await list.text()).toContain(`data-session="${newest.id}"`);
    const sessionPage = await fetch(new URL(`/sessions/${newest.id}`, url));
    expect(sessionPage.status).toBe(200);
    expect(await sessionPage.text()).toContain(execution);
    // A task's log, read from CloudWatch Logs through the CLI's own reader.
    const talker = (await rt.store.listRecentSessions({ limit: 100 })).items.find(
      (x) => x.spec.name === "talker",
    )!;
    const log = await fetch(new URL(`/sessions/${talker.id}/logs?kernel=0&run=0`, url));
    const { lines } = (await log.json()) as { lines: { message: string }[] };
    expect(lines.map((l) => l.message).slice(0, 2)).toEqual(["first", "<b>second</b>"]);
    const agents = await fetch(new URL("/agents", url));
    expect(await agents.text()).toContain('data-agent="agent-1"');
  }

  test("--endpoint serves the same pages, refuses another Host, and stops on SIGINT", async () => {
    const { info } = rt.runtime;
    const dash = await cliDashboard(
      ["--endpoint", info.endpoints.edge, "--port", "0"],
      cliEnv({
        CAIRN_TABLE_NAME: info.tableName,
        CAIRN_EVENT_BUS_NAME: info.eventBusName,
        CAIRN_STATE_MACHINE_ARN: info.stateMachineArn,
        CAIRN_KERNEL_LOG_GROUP_NAME: info.kernelLogGroupName,
      }),
    );
    // Through an endpoint there is no console to link the execution to.
    await expectPages(dash.url, "the execution is on endpoint");
    // Another Host (DNS rebinding) is refused.
    const rebound = await new Promise<number | undefined>((done, fail) =>
      get(dash.url, { headers: { Host: "attacker.example" } }, (res) => {
        res.resume();
        done(res.statusCode);
      }).on("error", fail),
    );
    expect(rebound).toBe(421);
    expect(await dash.stop(), dash.stderr()).toBe(0);
  });

  test("--stack reads the stack's outputs from CloudFormation, then serves the same pages, linking executions to the console", async () => {
    const { info } = rt.runtime;
    // One endpoint, as LocalStack's: CloudFormation answered here (the runtime has none), every
    // other service passed on to the runtime's edge endpoint.
    const outputs = {
      TableName: info.tableName,
      EventBusName: info.eventBusName,
      StateMachineArn: info.stateMachineArn,
      KernelLogGroupName: info.kernelLogGroupName,
    };
    const edge = new URL(info.endpoints.edge);
    const describeStacks: string[] = [];
    proxy = createServer((req, res) => {
      const service = /Credential=[^/]+\/[^/]+\/[^/]+\/([^/]+)\//.exec(req.headers.authorization ?? "")?.[1];
      if (service === "cloudformation") {
        let body = "";
        req.on("data", (c: Buffer) => (body += c.toString()));
        req.on("end", () => {
          describeStacks.push(new URLSearchParams(body).get("StackName") ?? "");
          res.writeHead(200, { "Content-Type": "text/xml" });
          res.end(
            `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member>` +
              `<StackName>Cairn</StackName><StackStatus>CREATE_COMPLETE</StackStatus><CreationTime>2026-11-01T00:00:00Z</CreationTime><Outputs>` +
              Object.entries(outputs)
                .map(
                  ([k, v]) => `<member><OutputKey>${k}</OutputKey><OutputValue>${v}</OutputValue></member>`,
                )
                .join("") +
              `</Outputs></member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DescribeStacksResponse>`,
          );
        });
        return;
      }
      const forward = request(
        { host: edge.hostname, port: edge.port, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on("error", (error) => res.destroy(error));
      req.pipe(forward);
    });
    await new Promise<void>((done) => proxy!.listen(0, "127.0.0.1", done));
    const endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    // As against AWS: no --endpoint, the SDK's own AWS_ENDPOINT_URL sends every call to the endpoint.
    const dash = await cliDashboard(["--stack", "Cairn"], cliEnv({ AWS_ENDPOINT_URL: endpoint }));
    expect(describeStacks).toEqual(["Cairn"]);
    const newest = (await rt.store.listRecentSessions({ limit: 1 })).items[0]!;
    const arn = `${info.stateMachineArn.replace(":stateMachine:", ":execution:")}:${newest.id}`;
    await expectPages(
      dash.url,
      `href="https://${info.region}.console.aws.amazon.com/states/home?region=${info.region}#/v2/executions/details/${arn}"`,
    );
    expect(await dash.stop(), dash.stderr()).toBe(0);
  });
});
