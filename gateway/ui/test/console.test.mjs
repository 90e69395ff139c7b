// The web console in a real browser: Debian's Chromium (/usr/bin/chromium, or $CHROMIUM) driven
// by playwright-core (no browser download) against a real `wharf serve` with auth on ($WHARF_BIN,
// else the newest target/{release,debug}/wharf; a fresh data folder and a free port). The test
// makes traffic over HTTP (a topic, a subscription, produce, ack, nack into dead letters), signs
// in on the page with an admin token, and checks what the page renders against what the API
// says. Screenshots go to target/ui-screenshots/ at the repository root.
//
// The trace check looks a dead letter's original up on the live server: its timeline must show
// produced, delivered, nacked, dead_lettered and redriven, in that order.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { eventually, name, startWharf } from "../../../clients/typescript/test/wharf.mjs";
import { signedIn as signedInAt, show } from "./page.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const SHOTS = join(repo, "target", "ui-screenshots");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const SECRET = "console-browser-test-secret-0123456789abcdef";
// Generous: a shared, loaded CI machine; nothing here measures speed.
const UI_TIMEOUT_MS = 20_000;
// How long the chart check waits for a per-minute point: past one minute's close, with margin.
const HISTORY_WAIT_MS = 90_000;

const PRODUCED = 10;
const ACKED = 2;
const NACKED = 3;

let wharf;
let admin;
let profile;
let context;
let topic;
const sub = "workers";
let deadIds = [];
const log = [];

async function call(method, path, body, token = admin) {
  const r = await fetch(`${wharf.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

async function ok(method, path, body) {
  const r = await call(method, path, body);
  assert.ok(r.status >= 200 && r.status < 300, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function subStats() {
  return (await ok("GET", `/v1/topics/${topic}/subscriptions/${sub}`)).stats;
}

/** Whether a route exists: anything but 404 `route_not_found` and 405. */
async function routeExists(path) {
  const r = await call("GET", path);
  const missing = (r.status === 404 && r.body?.code === "route_not_found") || r.status === 405;
  return { exists: !missing, status: r.status, code: r.body?.code };
}

before(async () => {
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM)`);
  mkdirSync(SHOTS, { recursive: true });
  wharf = await startWharf({ secret: SECRET });
  admin = wharf.token("console-admin", "admin:* produce:* consume:*");
  topic = name("orders");
  await ok("POST", "/v1/topics", { name: topic, partitions: 2 });
  await ok("POST", `/v1/topics/${topic}/subscriptions`, { name: sub, start: "earliest", max_deliveries: 1 });
  await ok("POST", `/v1/topics/${topic}/messages`, {
    messages: Array.from({ length: PRODUCED }, (_, i) => ({ value: `order ${i}`, key: `customer-${i % 3}` })),
  });
  const received = [];
  await eventually(async () => {
    const r = await ok("POST", `/v1/topics/${topic}/subscriptions/${sub}/receive`,
      { max_messages: ACKED + NACKED - received.length, wait_ms: 1000 });
    received.push(...r.messages);
    return received.length >= ACKED + NACKED;
  }, 20_000);
  assert.equal(received.length, ACKED + NACKED);
  await ok("POST", `/v1/topics/${topic}/subscriptions/${sub}/ack`, { receipts: received.slice(0, ACKED).map((m) => m.receipt) });
  const nacked = received.slice(ACKED);
  deadIds = nacked.map((m) => m.id);
  await ok("POST", `/v1/topics/${topic}/subscriptions/${sub}/nack`,
    { receipts: nacked.map((m) => m.receipt), delay_ms: 0, error: "cannot parse order" });
  const dead = await eventually(async () => (await subStats()).dead_lettered === NACKED, 20_000);
  assert.ok(dead, `dead letters never counted: ${JSON.stringify(await subStats())}`);
  profile = mkdtempSync(join(tmpdir(), "wharf-console-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});

after(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await wharf?.stop();
});

/** A page of the console, signed in with `token` through the sign-in form. */
function signedIn(token) {
  return signedInAt(context, wharf.url, token, log, UI_TIMEOUT_MS);
}

function problems() {
  return log.filter((line) => line.startsWith("pageerror") || /Content.Security.Policy|Refused to/i.test(line));
}

test("the console renders the topic list, a subscription's figures, and a redrive click changes the stats", async () => {
  const page = await signedIn(admin);
  await show(page, "#/topics");
  const row = page.locator(`#topic-list tr[data-topic="${topic}"]`);
  await row.waitFor();
  await page.screenshot({ path: join(SHOTS, "topics.png"), fullPage: true });
  const cells = await row.locator("td").allInnerTexts();
  assert.equal(cells[0], topic);
  assert.equal(cells[1], "2", `partitions: ${cells}`);
  assert.equal(cells[2], String(PRODUCED), `stored messages: ${cells}`);
  const before = await subStats();
  assert.equal(before.backlog, PRODUCED - ACKED - NACKED);
  assert.equal(
    await row.locator(`[data-backlog="${sub}"]`).innerText(),
    String(before.backlog),
    "the list's backlog is the API's",
  );

  await show(page, `#/sub/${topic}/${sub}`);
  const figure = (key) => page.locator(`[data-figure="${key}"] .value`).innerText();
  assert.equal(await figure("backlog"), String(before.backlog));
  assert.equal(await figure("dead_lettered"), String(NACKED));
  assert.equal(await figure("acked"), String(ACKED));
  const deadRows = await page.locator("#dead-letters table tbody tr").count();
  assert.equal(deadRows, NACKED, "the dead letters are listed");
  const originals = await page.locator("#dead-letters tbody tr td:nth-child(3) a").allInnerTexts();
  assert.deepEqual([...originals].sort(), [...deadIds].sort(), "each dead letter links to its original's trace");
  assert.match(await page.locator("#dead-letters tbody").innerText(), /cannot parse order/);
  await page.screenshot({ path: join(SHOTS, "subscription-before-redrive.png"), fullPage: true });

  await page.click("#redrive");
  await page.waitForSelector("#redrive-result .ok");
  assert.match(await page.locator("#redrive-result").innerText(), new RegExp(`Redriven: ${NACKED} dead letters`));
  const afterStats = await eventually(async () => {
    const s = await subStats();
    return s.backlog === before.backlog + NACKED ? s : null;
  }, UI_TIMEOUT_MS);
  assert.ok(afterStats, `backlog after the redrive click: ${JSON.stringify(await subStats())}, before ${before.backlog}`);
  await show(page, `#/sub/${topic}/${sub}`);
  assert.equal(await figure("backlog"), String(afterStats.backlog), "the page shows the new backlog");
  await page.screenshot({ path: join(SHOTS, "subscription-after-redrive.png"), fullPage: true });

  // Seek to the end: the backlog goes.
  await page.selectOption("#seek-form select", "latest");
  await page.click("#seek-form button[type=submit]");
  await page.waitForSelector("#seek-result .ok");
  const sought = await subStats();
  assert.ok(sought.backlog < afterStats.backlog, `backlog after seeking to latest: ${sought.backlog}`);
  assert.equal(await figure("backlog"), String(sought.backlog), "the page shows the backlog after the seek");

  // Single node: no cluster tab. A rule made over the API is listed on the alerts page.
  assert.equal(await page.locator("#nav-cluster").isHidden(), true);
  const rule = name("console-backlog");
  await ok("POST", "/v1/alerts/rules", {
    name: rule, kind: "backlog", topic, subscription: sub, threshold: 1000, for_ms: 60_000,
    webhook_url: "http://127.0.0.1:9/hook",
  });
  await show(page, "#/alerts");
  const alerts = await page.locator("#view").innerText();
  assert.match(await page.locator('#view [data-list="rules"]').innerText(), new RegExp(rule), alerts);
  assert.match(alerts, /No active alerts/, alerts);
  assert.equal(await page.locator("#view .error").count(), 0, alerts);
  assert.deepEqual(problems(), [], log.join("\n"));
  await page.close();
});

test("a token without grants on the topic sees \"not allowed\", not an error", async () => {
  const page = await signedIn(wharf.token("console-other", "consume:elsewhere.*"));
  await show(page, `#/sub/${topic}/${sub}`);
  assert.equal(await page.locator("#view .not-allowed").first().innerText(), "not allowed");
  assert.equal(await page.locator("#view .error").count(), 0);
  await show(page, "#/topics");
  assert.equal(await page.locator(`#topic-list tr[data-topic="${topic}"]`).count(), 0, "the topic is not listed");
  await page.screenshot({ path: join(SHOTS, "not-allowed.png"), fullPage: true });
  await page.close();
});

test("the topic page charts produced and consumed messages per minute", async () => {
  const route = await routeExists(`/v1/stats/history?topic=${topic}&minutes=60`);
  assert.ok(route.exists, `GET /v1/stats/history answered ${route.status} ${route.code}`);
  const page = await signedIn(admin);
  await show(page, `#/topic/${topic}`);
  const chart = page.locator('.chart[data-chart="produced"]');
  // A minute's point may appear only once the minute closes: reload until it does.
  await eventually(async () => (await chart.getAttribute("data-nonzero")) === "true" || (await show(page, `#/topic/${topic}`), false), HISTORY_WAIT_MS, 2000);
  assert.equal(await chart.getAttribute("data-nonzero"), "true", "the produced chart has data");
  await chart.locator("canvas").waitFor();
  await page.screenshot({ path: join(SHOTS, "topic-charts.png"), fullPage: true });
  await show(page, `#/sub/${topic}/${sub}`);
  await page.locator('.chart[data-chart="backlog"] canvas').waitFor();
  assert.deepEqual(problems(), [], log.join("\n"));
  await page.close();
});

test("a message lookup shows the trace as a timeline", async () => {
  const id = deadIds[0];
  const route = await routeExists(`/v1/topics/${topic}/messages/${encodeURIComponent(id)}`);
  assert.ok(route.exists, `GET /v1/topics/{t}/messages/{id} answered ${route.status} ${route.code}`);
  const page = await signedIn(admin);
  await show(page, `#/message?${new URLSearchParams({ topic, id })}`);
  await page.locator("#timeline li").first().waitFor();
  const kinds = await page.locator("#timeline li").evaluateAll((items) => items.map((li) => li.dataset.kind));
  const order = ["produced", "delivered", "nacked", "dead_lettered", "redriven"];
  const positions = order.map((kind) => kinds.indexOf(kind));
  assert.ok(positions.every((p) => p >= 0), `every step is shown: ${kinds}`);
  assert.deepEqual([...positions].sort((a, b) => a - b), positions, `in time order: ${kinds}`);
  await page.screenshot({ path: join(SHOTS, "message-trace.png"), fullPage: true });
  await page.close();
});

// The pages for routes other work adds, against those routes' agreed shapes: the browser answers
// them itself (page.route), everything else comes from the live server. This checks the
// console's rendering of the contract now; the checks above check the real routes once they
// exist.
test("with the history and trace routes stubbed to their contract, the charts and the timeline render", async () => {
  const page = await signedIn(admin);
  const now = Date.now();
  const minute = 60_000;
  const start = Math.floor(now / minute) * minute - 9 * minute;
  const topicPoints = Array.from({ length: 10 }, (_, i) => ({
    time_ms: start + i * minute, produced_messages: 10 * i, produced_bytes: 100 * i,
    consumed_messages: 5 * i, consumed_bytes: 50 * i, produce_errors: 0, latency_p99_ms: 3,
  }));
  const subPoints = Array.from({ length: 10 }, (_, i) => ({
    time_ms: start + i * minute, delivered_messages: 5 * i, acks: 4 * i, nacks: i, dead_letters: i % 2,
    backlog: 100 - i, backlog_max: 110 - i, oldest_unacked_age_ms: 1000 * i, oldest_unacked_age_ms_max: 1500 * i,
  }));
  await page.route("**/v1/stats/history?*", (route) => {
    const q = new URL(route.request().url()).searchParams;
    const points = q.get("subscription") ? subPoints : topicPoints;
    route.fulfill({ json: { topic: q.get("topic"), subscription: q.get("subscription"), points } });
  });
  await page.route("**/v1/stats/top?*", (route) => {
    const by = new URL(route.request().url()).searchParams.get("by");
    route.fulfill({ json: { by, minutes: 60, items: [{ topic, subscription: by === "backlog" ? sub : null, value: 42 }] } });
  });
  const t0 = now - 5000;
  const consumer = { principal: "worker-1", client_addr: "10.0.0.7" };
  await page.route(`**/v1/topics/${topic}/messages/stub-id`, (route) => route.fulfill({
    json: {
      message: { id: "stub-id", key: "customer-1", value: "order 1", headers: {}, tags: [] },
      produced: { time_ms: t0, principal: "shop", client_addr: "10.0.0.5", node: 1, partition: 0, offset: 7 },
      subscriptions: [{
        name: sub, state: "acked", events: [
          // Out of order on purpose: the page sorts by time.
          { time_ms: t0 + 3000, kind: "redriven", attempt: null, consumer: null, error: null },
          { time_ms: t0 + 1000, kind: "delivered", attempt: 1, consumer, error: null },
          { time_ms: t0 + 2000, kind: "dead_lettered", attempt: 1, consumer: null, error: null },
          { time_ms: t0 + 1500, kind: "nacked", attempt: 1, consumer, error: "cannot parse order" },
          { time_ms: t0 + 4000, kind: "delivered", attempt: 2, consumer, error: null },
          { time_ms: t0 + 4500, kind: "acked", attempt: 2, consumer, error: null },
        ],
      }],
    },
  }));
  await show(page, "#/topics");
  await page.locator('[data-ranking="backlog"] table').waitFor();
  assert.match(await page.locator('[data-ranking="produced"]').innerText(), /42/);
  await show(page, `#/topic/${topic}`);
  for (const key of ["produced", "consumed"]) {
    const chart = page.locator(`.chart[data-chart="${key}"]`);
    assert.equal(await chart.getAttribute("data-points"), "10");
    assert.equal(await chart.getAttribute("data-nonzero"), "true");
    await chart.locator("canvas").waitFor();
    assert.match(await chart.locator(".u-legend").innerText(), key === "produced" ? /produced/ : /consumed/);
  }
  await page.screenshot({ path: join(SHOTS, "stubbed-topic-charts.png"), fullPage: true });
  await show(page, `#/sub/${topic}/${sub}`);
  await page.locator('.chart[data-chart="backlog"] canvas').waitFor();
  await page.screenshot({ path: join(SHOTS, "stubbed-subscription-charts.png"), fullPage: true });
  await show(page, `#/message?${new URLSearchParams({ topic, id: "stub-id" })}`);
  const items = page.locator("#timeline li");
  await items.first().waitFor();
  const kinds = await items.evaluateAll((lis) => lis.map((li) => li.dataset.kind));
  assert.deepEqual(kinds, ["produced", "delivered", "nacked", "dead_lettered", "redriven", "delivered", "acked"]);
  assert.match(await items.nth(0).innerText(), /by shop from 10\.0\.0\.5/);
  assert.match(await items.nth(2).innerText(), /worker-1 from 10\.0\.0\.7.*attempt 1.*error: cannot parse order/);
  await page.screenshot({ path: join(SHOTS, "stubbed-message-trace.png"), fullPage: true });
  assert.deepEqual(problems(), [], log.join("\n"));
  await page.close();
});

test("with auth off the console works without a token", async () => {
  const open = await startWharf();
  try {
    const t = name("open");
    const r = await fetch(`${open.url}/v1/topics`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: t }),
    });
    assert.equal(r.status, 201, await r.text());
    const page = await context.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    await page.goto(`${open.url}/ui#/topics`);
    await page.locator(`#topic-list tr[data-topic="${t}"]`).waitFor();
    assert.equal(await page.locator("#banner").isHidden(), true, "no sign-in banner");
    await page.close();
  } finally {
    await open.stop();
  }
});
