// Runs in Chromium, served by browser.test.mjs from the same origin as its /v1/* proxy to a real
// wharf: the built dist/ client (ESM, unbundled) creates a topic and subscriptions, produces
// with Producer and produceRaw, consumes with Consumer (ack, a throwing handler redelivered),
// streams over SSE, and meets a 401. It leaves what it saw in window.__result for the test to
// assert; a thrown error leaves { error }.
import { Consumer, Producer, UnauthorizedError, WharfClient, WharfError, messageBytes, messageText } from "/dist/index.js";

const params = new URLSearchParams(location.hash.slice(1));
const topic = params.get("topic");
const token = params.get("token"); // an admin token for the auth wharf behind /auth

const until = async (fn, ms, what) => {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

async function run() {
  const r = { userAgent: navigator.userAgent, isNode: typeof process !== "undefined" };
  const client = new WharfClient({ baseUrl: location.origin });

  const created = await client.createTopic({ name: topic });
  r.topic = { name: created.name, partitions: created.partitions };
  await client.createSubscription(topic, { name: "s", start: "earliest" });
  await client.createSubscription(topic, { name: "sse", start: "earliest" });

  // Producer: three JSON messages (text with key/headers/tags, bytes, text) in one batch.
  const producer = new Producer(client, topic, { maxBatchMessages: 3, lingerMs: 50 });
  const sent = await Promise.all([
    producer.send({ value: "j1 é", key: "k1", headers: { source: "browser" }, tags: ["eu"] }),
    producer.send({ value: new Uint8Array([0, 1, 2, 250, 255]) }),
    producer.send({ value: "flaky" }),
  ]);
  await producer.close();
  r.producer = {
    offsets: sent.map((m) => m.offset),
    idsAreHex32: sent.every((m) => /^[0-9a-f]{32}$/.test(m.id)),
    requests: producer.stats.requests,
    messages: producer.stats.messages,
  };

  // Raw produce: text with key, tags, a header and an Idempotency-Key; bytes; a duplicate.
  const raw1 = await client.produceRaw(topic, "raw text é", { key: "rk", tags: ["a", "b"], headers: { trace: "t-1" }, idempotencyKey: "raw-1" });
  const raw2 = await client.produceRaw(topic, new Uint8Array([0xff, 0x00, 0x80]));
  const dup = await client.produceRaw(topic, "raw text é", { idempotencyKey: "raw-1" });
  r.raw = { id: raw1.id, offsets: [raw1.offset, raw2.offset], duplicate: dup.duplicate, duplicateOffset: dup.offset };

  // Consumer: acks what the handler returned from; "flaky" throws on its first delivery.
  const seen = [];
  const consumer = new Consumer(
    client,
    topic,
    "s",
    (m) => {
      const text = m.value_base64 != null ? `bytes:${hex(messageBytes(m))}` : messageText(m);
      seen.push({ text, attempt: m.delivery_attempt, key: m.key ?? null, tags: m.tags ?? [], headers: m.headers ?? {} });
      if (text === "flaky" && m.delivery_attempt === 1) throw new Error("first try fails in the browser");
    },
    { waitMs: 1000, nackDelayMs: 0 },
  );
  await until(() => consumer.stats.acked === 5, 20_000, "the consumer to ack 5 messages");
  await consumer.stop();
  const sub = await client.describeSubscription(topic, "s");
  r.consumer = {
    seen: seen.sort((a, b) => (a.text + a.attempt < b.text + b.attempt ? -1 : 1)),
    stats: { ...consumer.stats },
    server: { acked: sub.stats.acked, redelivered: sub.stats.redelivered, backlog: sub.stats.backlog, in_flight: sub.stats.in_flight },
  };

  // SSE over fetch's ReadableStream (through the proxy): the backlog of "sse", acked; then a
  // message produced after the stream opened, which only arrives if nothing buffers the stream.
  const got = [];
  for await (const m of client.stream(topic, "sse", { maxInFlight: 10, heartbeatMs: 200, signal: AbortSignal.timeout(15_000) })) {
    got.push(m);
    if (got.length === 5) break;
  }
  const acked = await client.ack(topic, "sse", got.map((m) => m.receipt));
  const ac = new AbortController();
  const guard = setTimeout(() => ac.abort(), 15_000);
  const opened = Date.now();
  const later = (async () => {
    const vals = [];
    for await (const m of client.stream(topic, "sse", { signal: ac.signal, heartbeatMs: 100 })) {
      vals.push({ value: messageText(m), afterMs: Date.now() - opened });
      await client.ack(topic, "sse", [m.receipt]);
      ac.abort();
    }
    return vals;
  })();
  await new Promise((res) => setTimeout(res, 500));
  await client.produce(topic, [{ value: "after" }]);
  const live = await later;
  clearTimeout(guard);
  r.sse = {
    backlog: got.map((m) => (m.value_base64 != null ? `bytes:${hex(messageBytes(m))}` : messageText(m))).sort(),
    receiptsOk: got.every((m) => typeof m.receipt === "string" && m.receipt.length > 0 && m.delivery_attempt === 1),
    acked: acked.acked,
    live,
  };

  // Auth (a second wharf with HS256 behind /auth): no token is a 401 UnauthorizedError with the
  // problem's code and the X-Request-Id; the test's admin token works from the browser.
  const anon = new WharfClient({ baseUrl: `${location.origin}/auth` });
  const e = await anon.createTopic({ name: `${topic}-anon` }).catch((x) => x);
  r.unauthorized = {
    isUnauthorizedError: e instanceof UnauthorizedError,
    isWharfError: e instanceof WharfError,
    status: e.status,
    code: e.code,
    hasRequestId: typeof e.requestId === "string" && e.requestId.length > 0,
  };
  const admin = new WharfClient({ baseUrl: `${location.origin}/auth`, token: () => token });
  await admin.createTopic({ name: `${topic}-authed` });
  r.authorized = { offset: (await admin.produce(`${topic}-authed`, [{ value: "with a token" }]))[0].offset };
  return r;
}

run().then(
  (r) => {
    window.__result = r;
    document.getElementById("out").textContent = JSON.stringify(r, null, 2);
  },
  (e) => {
    window.__result = { error: `${e?.name}: ${e?.message}\n${e?.stack ?? ""}` };
    document.getElementById("out").textContent = window.__result.error;
  },
);
