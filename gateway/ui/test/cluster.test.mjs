// The web console against a real three-node cluster: three `wharf serve` processes with
// cluster settings and auth on, a topic of three partitions replicated on all three, traffic
// through different nodes. In Debian's Chromium (playwright-core), signed in on node 3: the
// cluster page lists the three nodes live and every partition of the topic with the leader,
// term and replicas GET /v1/cluster gives; the message page shows a message's trace (produced
// through node 1, delivered through node 2, acked through node 3) as a timeline; no page
// error. Screenshots go to target/ui-screenshots/cluster-*.png.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { eventually, freePort, name, waitReady, wharfBinary } from "../../../clients/typescript/test/wharf.mjs";
import { signedIn as signedInAt, show } from "./page.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const SHOTS = join(repo, "target", "ui-screenshots");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const SECRET = "console-cluster-test-secret-0123456789abcdef";
const CLUSTER_SECRET = "console-cluster-peers-secret-0123456789abcd";
const NODES = 3;
// Generous: three nodes and a browser on a shared, loaded two-core machine.
const UI_TIMEOUT_MS = 30_000;
const SETTLE_MS = 60_000;

const nodes = [];
let admin;
let profile;
let context;
let topic;
const sub = "workers";
let acked;
const log = [];

/** Starts node `id` of the cluster whose cluster ports are `clusterPorts`. */
async function startNode(id, publicPort, clusterPorts) {
  const dataDir = mkdtempSync(join(tmpdir(), `wharf-console-cluster-${id}-`));
  const peers = clusterPorts.map((port, i) => `${i + 1}=127.0.0.1:${port}`).join(",");
  const env = { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn", WHARF_AUTH_HS256_SECRET: SECRET };
  const child = spawn(wharfBinary(), [
    "serve", "--listen", `127.0.0.1:${publicPort}`, "--data-dir", dataDir, "--fsync", "never",
    "--node-id", String(id), "--zone", `zone-${id}`, "--cluster-listen", `127.0.0.1:${clusterPorts[id - 1]}`,
    "--peers", peers, "--cluster-secret", CLUSTER_SECRET,
  ], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr = (stderr + d).slice(-8192);
  });
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  return {
    id, child, dataDir, url: `http://127.0.0.1:${publicPort}`, killOnExit,
    stderr: () => stderr,
  };
}

async function stopNode(node) {
  process.off("exit", node.killOnExit);
  if (node.child.exitCode === null) {
    const exited = new Promise((r) => node.child.once("exit", r));
    node.child.kill("SIGTERM");
    const t = setTimeout(() => node.child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(t);
  }
  rmSync(node.dataDir, { recursive: true, force: true });
}

async function call(node, method, path, body) {
  const r = await fetch(`${node.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${admin}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

/** `method path` on `node` until it is not a 503 (the cluster still electing); must succeed. */
async function ok(node, method, path, body) {
  let r;
  await eventually(async () => {
    r = await call(node, method, path, body);
    return r.status !== 503;
  }, SETTLE_MS, 200);
  assert.ok(r.status >= 200 && r.status < 300, `${method} ${path} on node ${node.id}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

before(async () => {
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM)`);
  mkdirSync(SHOTS, { recursive: true });
  const publicPorts = [];
  const clusterPorts = [];
  for (let i = 0; i < NODES; i++) {
    publicPorts.push(await freePort());
    clusterPorts.push(await freePort());
  }
  for (let id = 1; id <= NODES; id++) nodes.push(await startNode(id, publicPorts[id - 1], clusterPorts));
  for (const node of nodes) {
    assert.ok(await waitReady(node.url, node.child, SETTLE_MS), `node ${node.id} not ready:\n${node.stderr()}`);
  }
  const minted = spawnSync(wharfBinary(), ["token", "--sub", "console-admin", "--scope", "admin:* produce:* consume:*", "--ttl", "1h"], {
    env: { ...process.env, WHARF_AUTH_HS256_SECRET: SECRET },
    encoding: "utf8",
  });
  assert.equal(minted.status, 0, minted.stderr);
  admin = minted.stdout.trim();
  topic = name("orders");
  await ok(nodes[0], "POST", "/v1/topics", { name: topic, partitions: 3, replication_factor: 3 });
  await ok(nodes[0], "POST", `/v1/topics/${topic}/subscriptions`, { name: sub, start: "earliest" });
  await ok(nodes[0], "POST", `/v1/topics/${topic}/messages`, {
    messages: Array.from({ length: 6 }, (_, i) => ({ value: `order ${i}`, key: `customer-${i}` })),
  });
  const received = await ok(nodes[1], "POST", `/v1/topics/${topic}/subscriptions/${sub}/receive`, { max_messages: 1, wait_ms: 5000 });
  assert.equal(received.messages.length, 1, JSON.stringify(received));
  acked = received.messages[0];
  const settled = await ok(nodes[2], "POST", `/v1/topics/${topic}/subscriptions/${sub}/ack`, { receipts: [acked.receipt] });
  assert.equal(settled.acked, 1, JSON.stringify(settled));
  profile = mkdtempSync(join(tmpdir(), "wharf-console-cluster-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  for (const node of nodes) await stopNode(node);
});

/** A console page on `node`, signed in as the admin. */
function signedIn(node) {
  return signedInAt(context, node.url, admin, log, UI_TIMEOUT_MS);
}

const pageErrors = () => log.filter((l) => l.startsWith("pageerror"));

test("the cluster page lists every node live and each partition's leader and replicas", async () => {
  const node = nodes[2];
  const page = await signedIn(node);
  // Every node is heard from within a few seconds of the start: ask until the API says so,
  // then compare the page with the API's answer of that moment.
  let view;
  await eventually(async () => {
    view = (await call(node, "GET", "/v1/cluster")).body;
    return view?.nodes?.length === NODES && view.nodes.every((n) => n.live)
      && view.partitions.filter((p) => p.topic === topic).every((p) => p.leader !== null);
  }, SETTLE_MS, 200);
  assert.equal(view.mode, "cluster", JSON.stringify(view));
  // Hidden before signing in (the cluster view needs a token), shown once signed in.
  await page.locator("#nav-cluster").waitFor({ state: "visible" });
  await show(page, "#/cluster");
  const rows = page.locator('[data-list="cluster-nodes"] tbody tr');
  assert.equal(await rows.count(), NODES);
  for (const n of view.nodes) {
    const row = page.locator(`[data-list="cluster-nodes"] tr[data-node="${n.id}"]`);
    const text = await row.innerText();
    assert.match(text, new RegExp(`zone-${n.id}`), text);
    assert.match(text, /\byes\b/, `node ${n.id} shown live: ${text}`);
  }
  const ours = view.partitions.filter((p) => p.topic === topic);
  assert.equal(ours.length, 3, JSON.stringify(view.partitions));
  for (const p of ours) {
    const row = page.locator(`[data-list="cluster-partitions"] tr[data-topic="${topic}"][data-partition="${p.partition}"]`);
    const cells = await row.locator("td").allInnerTexts();
    assert.equal(cells[0], topic);
    assert.equal(cells[2], String(p.leader), `partition ${p.partition}'s leader: ${cells}`);
    const shown = cells[4].split(",").map((r) => Number.parseInt(r.trim(), 10));
    assert.deepEqual(shown, p.replicas.map((r) => r.node), `partition ${p.partition}'s replicas: ${cells}`);
  }
  // The probes' topics are listed after the users' and marked as the server's.
  const topics = await page.locator('[data-list="cluster-partitions"] tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.topic));
  const firstInternal = topics.findIndex((t) => t.startsWith("__"));
  assert.ok(firstInternal === -1 || topics.slice(firstInternal).every((t) => t.startsWith("__")), `${topics}`);
  await page.screenshot({ path: join(SHOTS, "cluster-nodes.png"), fullPage: true });
  assert.deepEqual(pageErrors(), [], log.join("\n"));
  await page.close();
});

test("a message produced, delivered and acked through three nodes shows its trace on another", async () => {
  const page = await signedIn(nodes[2]);
  await show(page, `#/message?${new URLSearchParams({ topic, id: acked.id })}`);
  await page.locator("#timeline li").first().waitFor();
  const kinds = await page.locator("#timeline li").evaluateAll((items) => items.map((li) => li.dataset.kind));
  assert.deepEqual(kinds, ["produced", "delivered", "acked"], `the steps in order: ${kinds}`);
  const produced = await page.locator("#timeline li").first().innerText();
  assert.match(produced, /node 1/, produced);
  await page.screenshot({ path: join(SHOTS, "cluster-message-trace.png"), fullPage: true });
  assert.deepEqual(pageErrors(), [], log.join("\n"));
  await page.close();
});
