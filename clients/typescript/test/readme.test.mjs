// The README's TypeScript example, run as written: the lines between README:begin and README:end
// below must appear verbatim (after dedent) in the repository README's "TypeScript" section.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
// The package imports itself by name (package.json "exports"), as a user's code would.
import { Consumer, Producer, WharfClient } from "@wharf/client";
import { eventually, startWharf } from "./wharf.mjs";

let wharf;
before(async () => {
  wharf = await startWharf({ secret: "ts-client-readme-secret-0123456789abcdefgh" });
  process.env.WHARF_URL = wharf.url;
  process.env.WHARF_TOKEN = wharf.token("svc-orders", "admin:orders*");
});
after(async () => {
  await wharf?.stop();
});

test("the README example produces and consumes", async () => {
  const printed = [];
  const console = { log: (...args) => printed.push(args) };

  // README:begin
  const client = new WharfClient({
    baseUrl: process.env.WHARF_URL ?? "http://127.0.0.1:8080",
    token: process.env.WHARF_TOKEN, // only when auth is on
  });
  await client.createTopic({ name: "orders", partitions: 3 });
  await client.createSubscription("orders", { name: "billing", start: "earliest" });

  // Batched (count, bytes, linger), idempotent ids, 429/503 retried after Retry-After.
  const producer = new Producer(client, "orders", { maxBatchMessages: 100, lingerMs: 5 });
  const stored = await producer.send({ key: "customer-1", value: JSON.stringify({ id: 42, total: 10 }) });
  await producer.close();

  // Long-polls; acks when the handler returns, nacks with the error's message when it throws,
  // extends the lease while it runs. consumer.stop() aborts the poll and waits for handlers.
  const consumer = new Consumer(client, "orders", "billing", async (m) => {
    console.log("billing", JSON.parse(m.value));
  });
  // README:end

  await eventually(() => consumer.stats.acked === 1);
  await consumer.stop();
  assert.equal(stored.offset, 0);
  assert.deepEqual(printed, [["billing", { id: 42, total: 10 }]]);

  const source = readFileSync(new URL(import.meta.url), "utf8");
  const region = source.split("// README:begin\n")[1].split("  // README:end")[0];
  const dedented = region
    .split("\n")
    .map((l) => l.replace(/^ {2}/, ""))
    .join("\n");
  const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
  assert.ok(readme.includes(dedented), "README.md's TypeScript example differs from this test's; copy it over");
});
