// The retry policy with a scripted fetch (no server): 503 and network errors are retried, a
// Retry-After is waited as given, other errors are thrown at once as typed errors.
import assert from "node:assert/strict";
import { test } from "node:test";
import { OverloadedError, WharfClient, WharfError, WharfNetworkError, parseRetryAfter } from "../dist/index.js";

const problem = (status, code) =>
  new Response(JSON.stringify({ type: `urn:wharf:problem:${code}`, title: code, status, detail: `scripted ${code}`, code }), {
    status,
    headers: { "content-type": "application/problem+json", "retry-after": "0", "x-request-id": "req-1" },
  });
const ok = () => new Response(JSON.stringify({ messages: [] }), { status: 200, headers: { "content-type": "application/json" } });

function scripted(steps) {
  const seen = [];
  const fetch = async (req) => {
    seen.push({ method: req.method, url: req.url, body: await req.clone().text() });
    const step = steps.shift();
    if (step === undefined) throw new Error("script ran out");
    if (step instanceof Error) throw step;
    return step();
  };
  return { fetch, seen };
}

test("a 503 with Retry-After is retried, then succeeds; the body is resent unchanged", async () => {
  const { fetch, seen } = scripted([() => problem(503, "overloaded"), () => problem(503, "overloaded"), ok]);
  const retries = [];
  const c = new WharfClient({ baseUrl: "http://wharf.invalid", fetch, onRetry: (e) => retries.push(e) });
  const got = await c.receive("t", "s", { wait_ms: 0, attempt_id: "a-1" });
  assert.deepEqual(got, []);
  assert.equal(seen.length, 3);
  assert.ok(seen.every((s) => s.body === seen[0].body && JSON.parse(s.body).attempt_id === "a-1"));
  assert.deepEqual(retries.map((r) => [r.attempt, r.delayMs, r.error.status]), [[1, 0, 503], [2, 0, 503]]);
});

test("a network error is retried with backoff; after maxAttempts it is a WharfNetworkError", async () => {
  const { fetch } = scripted([new TypeError("fetch failed"), ok]);
  const c = new WharfClient({ baseUrl: "http://wharf.invalid", fetch, retry: { initialBackoffMs: 1 } });
  assert.deepEqual(await c.receive("t", "s"), []);

  const down = scripted([new TypeError("a"), new TypeError("b"), new TypeError("c")]);
  const c2 = new WharfClient({ baseUrl: "http://wharf.invalid", fetch: down.fetch, retry: { maxAttempts: 3, initialBackoffMs: 1 } });
  const err = await c2.receive("t", "s").catch((e) => e);
  assert.ok(err instanceof WharfNetworkError, String(err));
  assert.equal(down.seen.length, 3);
});

test("503s past maxAttempts throw OverloadedError; a 400 is thrown at once, not retried", async () => {
  const busy = scripted([() => problem(503, "overloaded"), () => problem(503, "overloaded")]);
  const c = new WharfClient({ baseUrl: "http://wharf.invalid", fetch: busy.fetch, retry: { maxAttempts: 2 } });
  const e1 = await c.receive("t", "s").catch((e) => e);
  assert.ok(e1 instanceof OverloadedError);
  assert.equal(e1.code, "overloaded");
  assert.equal(e1.retryAfterMs, 0);
  assert.equal(e1.requestId, "req-1");

  const bad = scripted([() => problem(400, "invalid_request"), ok]);
  const c2 = new WharfClient({ baseUrl: "http://wharf.invalid", fetch: bad.fetch });
  const e2 = await c2.receive("t", "s").catch((e) => e);
  assert.ok(e2 instanceof WharfError);
  assert.equal(e2.status, 400);
  assert.equal(e2.detail, "scripted invalid_request");
  assert.equal(bad.seen.length, 1);
});

test("an abort during a Retry-After wait ends the call at once", async () => {
  const slow = scripted([() => new Response("{}", { status: 429, headers: { "retry-after": "30" } }), ok]);
  const c = new WharfClient({ baseUrl: "http://wharf.invalid", fetch: slow.fetch });
  const started = Date.now();
  const err = await c.receive("t", "s", {}, { signal: AbortSignal.timeout(200) }).catch((e) => e);
  assert.ok(Date.now() - started < 2000);
  assert.equal(err.name, "TimeoutError");
  assert.equal(slow.seen.length, 1);
});

test("Retry-After: delta-seconds and HTTP dates", () => {
  assert.equal(parseRetryAfter("2"), 2000);
  assert.equal(parseRetryAfter(null), undefined);
  assert.equal(parseRetryAfter("soon"), undefined);
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:05 GMT", now), 5000);
});
