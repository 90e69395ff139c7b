// The client in a real browser: Debian's Chromium (/usr/bin/chromium, or $CHROMIUM) driven by
// playwright-core (no browser download). A static server started here serves page.html, the
// built dist/ (unbundled ESM) and openapi-fetch's ESM build, and reverse-proxies /v1/* to a real
// anonymous wharf and /auth/v1/* to a second one with HS256 auth, so the page and the API share
// one origin: Wharf sends no CORS headers. page.mjs does the work and leaves window.__result.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { dirname, extname, join, resolve, sep } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { name, startWharf } from "../wharf.mjs";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const SECRET = "ts-browser-test-secret-0123456789abcdefghij";

// Only these files are served (no directory listing, nothing outside them).
const STATIC_ROOTS = {
  "/dist/": join(pkg, "dist"),
  "/node_modules/openapi-fetch/dist/": join(pkg, "node_modules/openapi-fetch/dist"),
  "/test/browser/": join(pkg, "test/browser"),
};
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".mjs": "text/javascript", ".map": "application/json" };

let wharf;
let authWharf;
let server;
let origin;
let profile;
let context;
const proxied = []; // "METHOD path status" of each proxied request, for a failure's message

/**
 * Pipes one request to `target` (a wharf URL) and the answer back, chunk by chunk (SSE too).
 * The browser's `Host` goes through unchanged, as Wharf's README asks of a proxy in front: with
 * it, the page's `Origin` is Wharf's own and its browser guard lets the request in.
 */
function proxy(req, res, target, path) {
  const url = new URL(target);
  const up = httpRequest(
    { host: url.hostname, port: url.port, method: req.method, path, headers: { ...req.headers } },
    (upRes) => {
      proxied.push(`${req.method} ${path} ${upRes.statusCode}`);
      res.writeHead(upRes.statusCode, upRes.headers);
      res.flushHeaders();
      upRes.pipe(res);
    },
  );
  // The browser aborting (a stopped long-poll, an aborted stream) closes the upstream request.
  res.on("close", () => up.destroy());
  up.on("error", (e) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" }).end(String(e));
    else res.destroy();
  });
  req.pipe(up);
}

function serveStatic(req, res, pathname) {
  if (pathname === "/") pathname = "/test/browser/page.html";
  for (const [prefix, dir] of Object.entries(STATIC_ROOTS)) {
    if (!pathname.startsWith(prefix)) continue;
    const file = resolve(dir, decodeURIComponent(pathname.slice(prefix.length)));
    if (!file.startsWith(dir + sep) || !existsSync(file)) break;
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "cache-control": "no-store" });
    res.end(readFileSync(file));
    return;
  }
  res.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${pathname}`);
}

before(async () => {
  assert.ok(existsSync(join(pkg, "dist/index.js")), "run `npm run build` first");
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM)`);
  [wharf, authWharf] = await Promise.all([startWharf(), startWharf({ secret: SECRET })]);
  server = createServer((req, res) => {
    const { pathname, search } = new URL(req.url, "http://x");
    if (pathname.startsWith("/v1/")) proxy(req, res, wharf.url, pathname + search);
    else if (pathname.startsWith("/auth/v1/")) proxy(req, res, authWharf.url, pathname.slice("/auth".length) + search);
    else serveStatic(req, res, pathname);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  origin = `http://127.0.0.1:${server.address().port}`;
  profile = mkdtempSync(join(tmpdir(), "wharf-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
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
  server?.closeAllConnections();
  await new Promise((r) => (server ? server.close(r) : r()));
  await Promise.all([wharf?.stop(), authWharf?.stop()]);
});

test("in Chromium: Producer, produceRaw, Consumer ack + redelivery, SSE through a proxy, 401", async () => {
  const page = await context.newPage();
  const log = [];
  page.on("console", (m) => log.push(`console.${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => log.push(`pageerror: ${e.message}`));
  page.on("requestfailed", (rq) => log.push(`requestfailed: ${rq.url()} ${rq.failure()?.errorText}`));
  const topic = name("browser");
  const token = authWharf.token("browser", "admin:*");
  await page.goto(`${origin}/#topic=${encodeURIComponent(topic)}&token=${encodeURIComponent(token)}`);
  let r;
  try {
    await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 60_000, polling: 100 });
    r = await page.evaluate(() => window.__result);
  } catch (e) {
    throw new Error(`the page gave no result: ${e.message}\n${log.join("\n")}\nproxied:\n${proxied.join("\n")}`);
  }
  assert.equal(r.error, undefined, `the page threw: ${r.error}\n${log.join("\n")}`);

  assert.match(r.userAgent, /HeadlessChrome|Chrome\//);
  assert.equal(r.isNode, false, "really not Node: no `process` global");
  assert.deepEqual(r.topic, { name: topic, partitions: 1 });

  assert.deepEqual(r.producer, { offsets: [0, 1, 2], idsAreHex32: true, requests: 1, messages: 3 });
  assert.deepEqual(r.raw, { id: "raw-1", offsets: [3, 4], duplicate: true, duplicateOffset: 3 });

  const seen = r.consumer.seen.map((m) => `${m.text}#${m.attempt}`);
  assert.deepEqual(seen.sort(), ["bytes:000102faff#1", "bytes:ff0080#1", "flaky#1", "flaky#2", "j1 é#1", "raw text é#1"].sort());
  const j1 = r.consumer.seen.find((m) => m.text === "j1 é");
  assert.deepEqual({ key: j1.key, tags: j1.tags, headers: j1.headers }, { key: "k1", tags: ["eu"], headers: { source: "browser" } });
  const raw = r.consumer.seen.find((m) => m.text === "raw text é");
  assert.equal(raw.key, "rk");
  assert.deepEqual(raw.tags, ["a", "b"]);
  assert.equal(raw.headers.trace, "t-1");
  assert.deepEqual(r.consumer.stats, { received: 6, acked: 5, nacked: 1, extended: 0 });
  assert.deepEqual(r.consumer.server, { acked: 5, redelivered: 1, backlog: 0, in_flight: 0 });

  assert.deepEqual(r.sse.backlog, ["bytes:000102faff", "bytes:ff0080", "flaky", "j1 é", "raw text é"]);
  assert.equal(r.sse.receiptsOk, true);
  assert.equal(r.sse.acked, 5);
  assert.equal(r.sse.live.length, 1, JSON.stringify(r.sse.live));
  assert.equal(r.sse.live[0].value, "after");
  assert.ok(r.sse.live[0].afterMs >= 500 && r.sse.live[0].afterMs < 10_000, `arrived ${r.sse.live[0].afterMs} ms after opening`);

  assert.deepEqual(r.unauthorized, { isUnauthorizedError: true, isWharfError: true, status: 401, code: "unauthorized", hasRequestId: true });
  assert.deepEqual(r.authorized, { offset: 0 });

  // Everything went through the proxy: the SSE streams and the 401 among them.
  assert.ok(proxied.some((l) => /^GET \/v1\/topics\/[^ ]+\/subscriptions\/sse\/stream\?[^ ]* 200$/.test(l)), proxied.join("\n"));
  assert.ok(proxied.some((l) => /^POST \/v1\/topics 401$/.test(l)), proxied.join("\n"));
  await page.close();
});
