// Against a real wharf (anonymous on loopback): produce JSON and raw, the Producer's batching,
// the Consumer's ack / nack / extend / stop, SSE, delayed messages and a 429 retried per
// Retry-After. Every test asserts values the server returned.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Consumer, NotFoundError, Producer, WharfClient, WharfError, messageBytes, messageText } from "../dist/index.js";
import { eventually, name, startWharf } from "./wharf.mjs";

// Each test's own bound, well inside the file's 60 s (package.json): a test that hangs fails
// by its name instead of taking the whole file down unnamed.
const BOUNDED = { timeout: 20_000 };

let wharf;
let client;

before(async () => {
  wharf = await startWharf();
  client = new WharfClient({ baseUrl: wharf.url });
});
after(async () => {
  await wharf?.stop();
});

async function topicWithSub(prefix, sub = {}, topic = {}) {
  const t = name(prefix);
  await client.createTopic({ name: t, ...topic });
  await client.createSubscription(t, { name: "s", start: "earliest", ...sub });
  return t;
}

describe("produce", () => {
  test("JSON batch with text and bytes, key, headers, tags; a repeated id is a duplicate", BOUNDED, async () => {
    const t = await topicWithSub("json");
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const r = await client.produce(t, [
      { value: "hello", key: "k1", headers: { source: "test" }, tags: ["eu"], id: "order-1" },
      { value: bytes },
    ]);
    assert.equal(r.length, 2);
    assert.equal(r[0].id, "order-1");
    assert.equal(r[0].offset, 0);
    assert.equal(r[1].offset, 1);
    assert.equal(r[0].duplicate, false);
    assert.match(r[1].id, /^[0-9a-f]{32}$/, "the client assigned an idempotency id");

    const again = await client.produce(t, [{ value: "hello", id: "order-1" }]);
    assert.equal(again[0].duplicate, true);
    assert.equal(again[0].offset, 0);

    const got = await client.receive(t, "s", { max_messages: 10, wait_ms: 2000 });
    assert.equal(got.length, 2, "the duplicate was not stored");
    const [a, b] = got.sort((x, y) => x.offset - y.offset);
    assert.equal(a.value, "hello");
    assert.equal(a.key, "k1");
    assert.deepEqual(a.headers, { source: "test" });
    assert.deepEqual(a.tags, ["eu"]);
    assert.equal(a.delivery_attempt, 1);
    assert.deepEqual(messageBytes(b), bytes);
    const acked = await client.ack(t, "s", [a.receipt, b.receipt]);
    assert.equal(acked.acked, 2);
    assert.deepEqual(acked.failed, []);
  });

  test("raw text and raw bytes with key, tags, headers and Idempotency-Key", BOUNDED, async () => {
    const t = await topicWithSub("raw");
    const r1 = await client.produceRaw(t, "plain text é", { key: "k", tags: ["a", "b"], headers: { trace: "t-1" }, idempotencyKey: "raw-1" });
    assert.equal(r1.id, "raw-1");
    assert.equal(r1.offset, 0);
    const bin = new Uint8Array([0xff, 0x00, 0x80]);
    const r2 = await client.produceRaw(t, bin);
    assert.equal(r2.offset, 1);
    const dup = await client.produceRaw(t, "plain text é", { idempotencyKey: "raw-1" });
    assert.equal(dup.duplicate, true);

    const got = (await client.receive(t, "s", { max_messages: 10, wait_ms: 2000 })).sort((x, y) => x.offset - y.offset);
    assert.equal(got.length, 2);
    assert.equal(messageText(got[0]), "plain text é");
    assert.equal(got[0].key, "k");
    assert.deepEqual(got[0].tags, ["a", "b"]);
    assert.equal(got[0].headers.trace, "t-1");
    assert.deepEqual(messageBytes(got[1]), bin);
  });

  test("Producer batches by count and by linger, in order, one request per batch", BOUNDED, async () => {
    const t = await topicWithSub("batch");
    let posts = 0;
    const counting = new WharfClient({
      baseUrl: wharf.url,
      fetch: (req) => {
        if (req.method === "POST" && req.url.endsWith("/messages")) posts++;
        return fetch(req);
      },
    });
    const producer = new Producer(counting, t, { maxBatchMessages: 10, lingerMs: 50 });
    const sent = await Promise.all(Array.from({ length: 25 }, (_, i) => producer.send({ value: `m${i}` })));
    await producer.close();
    assert.equal(posts, 3, "25 messages at 10 per batch: 10 + 10 + a lingering 5");
    assert.deepEqual(
      sent.map((r) => r.offset),
      Array.from({ length: 25 }, (_, i) => i),
    );
    assert.equal(new Set(sent.map((r) => r.id)).size, 25);
    await assert.rejects(producer.send({ value: "late" }), /closed/);
  });

  test("Producer splits batches by bytes", BOUNDED, async () => {
    const t = await topicWithSub("bytes");
    const producer = new Producer(client, t, { maxBatchMessages: 1000, maxBatchBytes: 3000, lingerMs: 20 });
    const big = "x".repeat(1000);
    const sent = await Promise.all(Array.from({ length: 6 }, () => producer.send({ value: big })));
    await producer.flush();
    assert.equal(producer.stats.requests, 3, "about 1 KiB each under a 3000-byte cap: two per request");
    assert.equal(producer.stats.messages, 6);
    assert.deepEqual(
      sent.map((r) => r.offset),
      [0, 1, 2, 3, 4, 5],
    );
  });

  test("a 429 is retried after its Retry-After", BOUNDED, async () => {
    const t = name("limited");
    await client.createTopic({ name: t, rate_limit: { messages_per_second: 1 } });
    const retries = [];
    const limited = new WharfClient({ baseUrl: wharf.url, onRetry: (e) => retries.push({ ...e, at: Date.now() }) });
    const started = Date.now();
    const first = await limited.produce(t, [{ value: "one" }]);
    const second = await limited.produce(t, [{ value: "two" }]);
    const elapsed = Date.now() - started;
    assert.equal(first[0].offset, 0);
    assert.equal(second[0].offset, 1);
    assert.ok(retries.length >= 1, "the second produce met the limit and was retried");
    const r = retries[0];
    assert.ok(r.error instanceof WharfError);
    assert.equal(r.error.status, 429);
    assert.equal(r.error.code, "rate_limited");
    assert.ok(r.retryAfterMs >= 1000, `Retry-After was ${r.retryAfterMs} ms`);
    assert.equal(r.delayMs, r.retryAfterMs, "the wait is the server's Retry-After");
    assert.ok(elapsed >= r.retryAfterMs, `done after ${elapsed} ms, Retry-After ${r.retryAfterMs} ms`);

    const noRetry = new WharfClient({ baseUrl: wharf.url, retry: { maxAttempts: 1 } });
    const err = await noRetry.produce(t, [{ value: "three" }]).catch((e) => e);
    assert.equal(err.status, 429, "with retries off the 429 surfaces as a typed error");
    assert.equal(err.name, "RateLimitedError");
  });
});

describe("consume", () => {
  test("Consumer acks what its handler returned from", BOUNDED, async () => {
    const t = await topicWithSub("ack");
    await client.produce(t, [{ value: "a" }, { value: "b" }, { value: "c" }]);
    const seen = [];
    const consumer = new Consumer(client, t, "s", (m) => {
      seen.push(m.value);
    }, { waitMs: 1000 });
    await eventually(() => consumer.stats.acked === 3);
    await consumer.stop();
    assert.deepEqual(seen.sort(), ["a", "b", "c"]);
    const s = await client.describeSubscription(t, "s");
    assert.equal(s.stats.acked, 3);
    assert.equal(s.stats.backlog, 0);
    assert.equal(s.stats.in_flight, 0);
  });

  test("a handler exception nacks: the message is redelivered with delivery_attempt 2", BOUNDED, async () => {
    const t = await topicWithSub("nack");
    await client.produce(t, [{ value: "flaky" }]);
    const attempts = [];
    const consumer = new Consumer(client, t, "s", (m) => {
      attempts.push(m.delivery_attempt);
      if (m.delivery_attempt === 1) throw new Error("first try fails");
    }, { waitMs: 1000, nackDelayMs: 0 });
    await eventually(() => consumer.stats.acked === 1);
    await consumer.stop();
    assert.deepEqual(attempts, [1, 2]);
    assert.equal(consumer.stats.nacked, 1);
    const s = await client.describeSubscription(t, "s");
    assert.equal(s.stats.acked, 1);
    assert.equal(s.stats.redelivered, 1);
  });

  test("the nack carries the handler's error message (seen on the dead letter)", BOUNDED, async () => {
    const t = await topicWithSub("dlq", { max_deliveries: 1 });
    await client.produce(t, [{ value: "poison" }]);
    const consumer = new Consumer(client, t, "s", () => {
      throw new Error("card declined");
    }, { waitMs: 1000, nackDelayMs: 0 });
    await eventually(() => consumer.stats.nacked === 1);
    await consumer.stop();
    const dlq = `${t}.s.dlq`;
    const page = await eventually(async () => {
      const p = await client.readPartition(dlq, 0, { offset: 0 }).catch(() => null);
      return p && p.messages.length > 0 ? p : null;
    });
    assert.ok(page, "the message reached the dead-letter topic");
    assert.equal(page.messages[0].value, "poison");
    assert.equal(page.messages[0].headers["wharf-dlq-error"], "card declined");
  });

  test("a slow handler's lease is extended, so its late ack still succeeds", BOUNDED, async () => {
    const t = await topicWithSub("extend");
    await client.produce(t, [{ value: "slow" }]);
    const errors = [];
    let calls = 0;
    const consumer = new Consumer(client, t, "s", async () => {
      calls++;
      await new Promise((r) => setTimeout(r, 2600));
    }, { waitMs: 1000, ackTimeoutMs: 1000, extendEveryMs: 400, onError: (e) => errors.push(e) });
    await eventually(() => consumer.stats.acked === 1, 15_000);
    await consumer.stop();
    assert.deepEqual(errors.map(String), []);
    assert.equal(calls, 1, "not redelivered while the handler ran");
    assert.ok(consumer.stats.extended >= 3, `extended ${consumer.stats.extended} times`);
    const s = await client.describeSubscription(t, "s");
    assert.equal(s.stats.acked, 1);
    assert.equal(s.stats.redelivered, 0);
  });

  test("without extends the same slow ack fails (the lease is strict), so the test above can fail", BOUNDED, async () => {
    const t = await topicWithSub("noextend");
    await client.produce(t, [{ value: "slow" }]);
    const [m] = await client.receive(t, "s", { wait_ms: 2000, ack_timeout_ms: 1000 });
    await new Promise((r) => setTimeout(r, 1500));
    const r = await client.ack(t, "s", [m.receipt]);
    assert.equal(r.acked, 0);
    assert.equal(r.failed[0].code, "receipt_invalid");
  });

  test("stop() ends a pending long-poll at once and the consumer's done resolves", BOUNDED, async () => {
    const t = await topicWithSub("stop");
    const consumer = new Consumer(client, t, "s", () => {}, { waitMs: 20_000 });
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    await consumer.stop();
    await consumer.done;
    assert.ok(Date.now() - started < 1000, `stop took ${Date.now() - started} ms`);
    assert.equal(consumer.stopped, true);
  });

  test("a receive on an unknown subscription stops the consumer with a typed NotFoundError", BOUNDED, async () => {
    const t = await topicWithSub("nosub");
    const consumer = new Consumer(client, t, "missing", () => {}, { waitMs: 100 });
    const err = await consumer.done.catch((e) => e);
    assert.ok(err instanceof NotFoundError, String(err));
    assert.equal(err.status, 404);
    assert.equal(err.code, "subscription_not_found");
  });
});

describe("SSE and delays", () => {
  test("stream() yields messages from text/event-stream; acking their receipts settles them", BOUNDED, async () => {
    const t = await topicWithSub("sse");
    await client.produce(t, [{ value: "s1" }, { value: "s2", key: "k" }, { value: "s3" }]);
    const got = [];
    // A stream that yields too little ends at the timeout and fails the assertions below.
    for await (const m of client.stream(t, "s", { maxInFlight: 10, signal: AbortSignal.timeout(10_000), heartbeatMs: 200 })) {
      got.push(m);
      if (got.length === 3) break;
    }
    assert.deepEqual(got.map((m) => m.value).sort(), ["s1", "s2", "s3"]);
    assert.ok(got.every((m) => typeof m.receipt === "string" && m.receipt.length > 0 && m.delivery_attempt === 1));
    const r = await client.ack(t, "s", got.map((m) => m.receipt));
    assert.equal(r.acked, 3);

    // A stream also wakes for a message produced after it opened; abort ends it quietly.
    const ac = new AbortController();
    const guard = setTimeout(() => ac.abort(), 10_000);
    const later = (async () => {
      const seen = [];
      for await (const m of client.stream(t, "s", { signal: ac.signal, heartbeatMs: 100 })) {
        seen.push(m.value);
        ac.abort();
      }
      return seen;
    })();
    await new Promise((r) => setTimeout(r, 300));
    await client.produce(t, [{ value: "after" }]);
    assert.deepEqual(await later, ["after"]);
    clearTimeout(guard);
  });

  test("a delayed message is not delivered before its time, and can be cancelled before it", BOUNDED, async () => {
    const t = await topicWithSub("delay");
    const producer = new Producer(client, t, { lingerMs: 0 });
    const started = Date.now();
    const [due, cancelled] = await Promise.all([
      producer.send({ value: "later", delay_ms: 1500 }),
      producer.send({ value: "never", delay_ms: 1500, id: "cancel-me" }),
    ]);
    assert.equal(due.offset ?? null, null, "a delayed message has no offset yet");
    assert.ok(due.deliver_at_ms >= started + 1500);
    await client.cancelDelayed(t, cancelled.id);
    await assert.rejects(client.cancelDelayed(t, "cancel-me"), NotFoundError);

    assert.deepEqual(await client.receive(t, "s", { wait_ms: 0 }), []);
    const got = await client.receive(t, "s", { wait_ms: 5000 });
    const at = Date.now();
    assert.equal(got.length, 1);
    assert.equal(got[0].value, "later");
    assert.ok(at >= due.deliver_at_ms, `delivered ${due.deliver_at_ms - at} ms early`);
    assert.deepEqual(await client.receive(t, "s", { wait_ms: 500 }), [], "the cancelled one never comes");
  });
});
