// The text/event-stream parser alone, on chunkings a network can produce.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSse } from "../dist/index.js";

function streamOf(chunks) {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(typeof ch === "string" ? enc.encode(ch) : ch);
      c.close();
    },
  });
}

async function all(chunks) {
  const out = [];
  for await (const e of parseSse(streamOf(chunks))) out.push(e);
  return out;
}

test("events, ids, comments, multi-line data, CRLF split across chunks", async () => {
  const events = await all([
    "\uFEFF: heartbeat\n\n",
    "event: message\r",
    "\nid: r1\r\ndata: {\"a\":",
    "1}\r\n\r\n",
    "data: line1\ndata:line2\n\n",
    "event: error\ndata: {\"code\":\"x\"}\n\n",
    "data: incomplete",
  ]);
  assert.deepEqual(events, [
    { event: "message", data: '{"a":1}', id: "r1" },
    { event: "message", data: "line1\nline2", id: "r1" },
    { event: "error", data: '{"code":"x"}', id: "r1" },
  ]);
});

test("a multi-byte character split between chunks is decoded once whole", async () => {
  const bytes = new TextEncoder().encode("data: é€\n\n");
  const events = await all([bytes.slice(0, 7), bytes.slice(7, 9), bytes.slice(9)]);
  assert.deepEqual(events, [{ event: "message", data: "é€", id: "" }]);
});

test("bare CR line ends", async () => {
  const events = await all(["data: a\r\rdata: b\r", "\r"]);
  assert.deepEqual(events.map((e) => e.data), ["a", "b"]);
});
