// Timeouts with a scripted fetch (no server): an attempt that never answers is abandoned after
// `timeoutMs` and retried as a network error; a stream that goes silent for `idleTimeoutMs`
// throws, while one that keeps sending heartbeats is not cut. The scripted answers behave as
// fetch does: a request whose signal aborts rejects, and so does the body it was reading.
import assert from "node:assert/strict";
import { test } from "node:test";
import { WharfClient, WharfNetworkError } from "../dist/index.js";

const ok = () => new Response(JSON.stringify({ messages: [] }), { status: 200, headers: { "content-type": "application/json" } });

/** An answer that never comes: rejects with the signal's reason once the request is aborted. */
function never(req) {
  return new Promise((_, reject) => {
    if (req.signal.aborted) reject(req.signal.reason);
    req.signal.addEventListener("abort", () => reject(req.signal.reason), { once: true });
  });
}

/** A 200 event stream that sends `chunks` as [delay ms, text], then stays open and silent. */
function eventStream(req, chunks) {
  const encoder = new TextEncoder();
  const timers = [];
  const body = new ReadableStream({
    start(controller) {
      let at = 0;
      for (const [delay, text] of chunks) {
        at += delay;
        timers.push(setTimeout(() => controller.enqueue(encoder.encode(text)), at));
      }
      req.signal.addEventListener("abort", () => {
        timers.forEach(clearTimeout);
        controller.error(req.signal.reason);
      }, { once: true });
    },
    cancel() {
      timers.forEach(clearTimeout);
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

const message = (value) => `event: message\nid: r-${value}\ndata: ${JSON.stringify({ value, receipt: `r-${value}` })}\n\n`;

test("an attempt with no answer within timeoutMs is abandoned and retried; past maxAttempts it is a WharfNetworkError", async () => {
  const answers = [never, ok];
  let seen = 0;
  const fetch = async (req) => {
    seen++;
    return answers.shift()(req);
  };
  const retries = [];
  const c = new WharfClient({ baseUrl: "http://wharf.invalid", fetch, timeoutMs: 100, retry: { initialBackoffMs: 1 }, onRetry: (e) => retries.push(e) });
  assert.deepEqual(await c.receive("t", "s", { wait_ms: 0 }), []);
  assert.equal(seen, 2);
  assert.equal(retries.length, 1);
  assert.equal(retries[0].error.name, "TimeoutError");

  let tries = 0;
  const down = new WharfClient({
    baseUrl: "http://wharf.invalid",
    fetch: async (req) => (tries++, never(req)),
    timeoutMs: 50,
    retry: { maxAttempts: 3, initialBackoffMs: 1 },
  });
  const started = Date.now();
  const err = await down.ack("t", "s", ["r"]).catch((e) => e);
  assert.ok(err instanceof WharfNetworkError, String(err));
  assert.equal(tries, 3);
  assert.ok(Date.now() - started >= 150, "each attempt waited its timeout");
});

test("the caller's abort of a hanging attempt ends the call at once as an abort, not a retry", async () => {
  let tries = 0;
  const c = new WharfClient({ baseUrl: "http://wharf.invalid", fetch: async (req) => (tries++, never(req)), timeoutMs: 60_000 });
  const err = await c.receive("t", "s", {}, { signal: AbortSignal.timeout(100) }).catch((e) => e);
  assert.equal(err.name, "TimeoutError");
  assert.ok(!(err instanceof WharfNetworkError));
  assert.equal(tries, 1);
});

test("a stream silent for idleTimeoutMs throws WharfNetworkError after what it delivered", async () => {
  const c = new WharfClient({
    baseUrl: "http://wharf.invalid",
    fetch: async (req) => eventStream(req, [[0, ": heartbeat\n\n"], [20, message("a")]]),
  });
  const got = [];
  const started = Date.now();
  const err = await (async () => {
    for await (const m of c.stream("t", "s", { idleTimeoutMs: 150 })) got.push(m.value);
  })().catch((e) => e);
  assert.ok(err instanceof WharfNetworkError, String(err));
  assert.match(err.message, /150 ms/);
  assert.deepEqual(got, ["a"]);
  assert.ok(Date.now() - started >= 150);
});

test("heartbeats keep a stream without messages alive past idleTimeoutMs; the caller's abort ends it quietly", async () => {
  const beats = Array.from({ length: 12 }, () => [50, ": heartbeat\n\n"]);
  const c = new WharfClient({
    baseUrl: "http://wharf.invalid",
    fetch: async (req) => eventStream(req, [...beats, [50, message("late")]]),
  });
  const got = [];
  const ac = new AbortController();
  for await (const m of c.stream("t", "s", { idleTimeoutMs: 200, signal: ac.signal })) {
    got.push(m.value);
    ac.abort();
  }
  assert.deepEqual(got, ["late"], "delivered after 650 ms of heartbeats, over three idle timeouts");
});
