/** One Server-Sent Event, as the WHATWG `text/event-stream` rules define it. */
export interface SseEvent {
  /** `event:` field; "message" when absent. */
  event: string;
  /** The `data:` lines joined with "\n". */
  data: string;
  /** The last `id:` seen on the stream (the spec's "last event ID"). */
  id: string;
}

/**
 * Parses a `text/event-stream` body (fetch's `response.body`) into events, with web-platform
 * APIs only (ReadableStream reader + TextDecoder), so it runs in Node 20+ and browsers and, unlike
 * `EventSource`, works with a request that carries an `Authorization` header. Lines may end in
 * CRLF, LF or CR, also split across chunks; comment lines (`: heartbeat`) are skipped; an event
 * with no data is not dispatched (per the spec). Cancelling the iteration cancels the body.
 * `onChunk` hears of every chunk read, comments included (an idle watchdog's pulse).
 */
export async function* parseSse(body: ReadableStream<Uint8Array>, onChunk?: () => void): AsyncGenerator<SseEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let buffer = "";
  let first = true;
  let lastCr = false; // the previous chunk ended in "\r": a "\n" starting this one belongs to it
  let event = "";
  let data: string[] = [];
  let lastId = "";

  function* lines(text: string, final: boolean): Generator<string> {
    buffer += text;
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const ch = buffer.charCodeAt(i);
      if (ch === 10 /* \n */ && lastCr && i === start) {
        // "\r\n" split as "\r" | "\n", or this "\n" just follows a "\r" line end
        lastCr = false;
        start = i + 1;
        continue;
      }
      lastCr = false;
      if (ch === 13 /* \r */ || ch === 10) {
        yield buffer.slice(start, i);
        if (ch === 13) {
          if (i + 1 < buffer.length) {
            if (buffer.charCodeAt(i + 1) === 10) i++;
          } else {
            lastCr = true;
          }
        }
        start = i + 1;
      }
    }
    buffer = buffer.slice(start);
    if (final && buffer !== "") {
      // An unterminated last line is dropped, as the spec says of an incomplete event.
      buffer = "";
    }
  }

  function* take(line: string): Generator<SseEvent> {
    if (line === "") {
      if (data.length > 0) yield { event: event === "" ? "message" : event, data: data.join("\n"), id: lastId };
      event = "";
      data = [];
      return;
    }
    if (line.startsWith(":")) return; // comment, e.g. a heartbeat
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        event = value;
        break;
      case "data":
        data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) lastId = value;
        break;
      default: // "retry" and unknown fields: ignored (no automatic reconnect here)
        break;
    }
  }

  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (!done) onChunk?.();
      let text = done ? decoder.decode() : decoder.decode(value, { stream: true });
      if (first && text.length > 0) {
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        first = false;
      }
      for (const line of lines(text, done)) yield* take(line);
      if (done) return;
    }
  } finally {
    // Reached on normal end, on an error, and when the consumer stops iterating early.
    await reader.cancel().catch(() => {});
  }
}
