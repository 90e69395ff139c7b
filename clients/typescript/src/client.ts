import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./generated/openapi.js";
import { errorFromResponse, WharfError, WharfNetworkError } from "./errors.js";
import { parseSse } from "./sse.js";

export type Schemas = components["schemas"];
export type CreateTopicRequest = Schemas["CreateTopicRequest"];
export type Topic = Schemas["Topic"];
export type CreateSubscriptionRequest = Schemas["CreateSubscriptionRequest"];
export type Subscription = Schemas["Subscription"];
export type ProduceMessage = Schemas["ProduceMessage"];
export type ProducedMessage = Schemas["ProducedMessage"];
export type ReceivedMessage = Schemas["ReceivedMessage"];
export type ReceiveBody = Schemas["ReceiveBody"];
export type AckResponse = Schemas["AckResponse"];
export type NackResponse = Schemas["NackResponse"];
export type ExtendResponse = Schemas["ExtendResponse"];
export type AckLevel = "none" | "leader" | "all";

/** A message to produce: `value` may be text or bytes (sent as `value_base64`). */
export type MessageInput = Omit<ProduceMessage, "value" | "value_base64"> & {
  value: string | Uint8Array;
};

/** A bearer token, or a function returning one (called before every request, so it can refresh). */
export type TokenSource = string | (() => string | Promise<string>);

export interface RetryOptions {
  /** Attempts in all, the first included (default 6). 1 disables retries. */
  maxAttempts?: number;
  /** First backoff without `Retry-After` (default 100 ms); doubles per attempt. */
  initialBackoffMs?: number;
  /** Cap of one backoff without `Retry-After` (default 10 s). */
  maxBackoffMs?: number;
}

/** What a retry hook sees: the attempt that failed (1-based), the wait, and why. */
export interface RetryEvent {
  attempt: number;
  delayMs: number;
  /** The 429/503 error, or the network error fetch threw. */
  error: unknown;
  /** The `Retry-After` of a 429/503, in ms, when it had one. */
  retryAfterMs: number | undefined;
}

export interface WharfClientOptions {
  /** e.g. `http://127.0.0.1:8080` (no `/v1`). */
  baseUrl: string;
  token?: TokenSource;
  retry?: RetryOptions;
  /** Called before each retry (logging, metrics, tests). */
  onRetry?: (event: RetryEvent) => void;
  /** A fetch to use instead of the global one. */
  fetch?: (request: Request) => Promise<Response>;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
  /**
   * How long one attempt of a call may take, answer included, before it is abandoned and counts
   * as a network error (retried, then `WharfNetworkError`). Default 70 000 ms: above the longest
   * long-poll (`wait_ms` 60 000) with room for a slow answer. For `stream()` it bounds the
   * opening only; its silence is bounded by `idleTimeoutMs`.
   */
  timeoutMs?: number;
}

/** Default `timeoutMs`: the longest long-poll (60 s) plus 10 s for the answer. */
export const DEFAULT_TIMEOUT_MS = 70_000;
/** The server's default `heartbeat_ms`, which a stream's default idle timeout is based on. */
export const SERVER_HEARTBEAT_MS = 15_000;
/** A stream that sent nothing (no event, no heartbeat) for this many heartbeats is dead. */
export const IDLE_HEARTBEATS = 3;

export interface CallOptions {
  signal?: AbortSignal | undefined;
}

type Outcome<T> = { data?: T; error?: unknown; response: Response };

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A random id of 32 hex digits (crypto.getRandomValues works in insecure browser contexts too). */
export function newId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function bytesToBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

export function base64ToBytes(b64: string): Uint8Array {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** A received message's payload as bytes, whether it came as `value` or `value_base64`. */
export function messageBytes(m: { value?: string | null; value_base64?: string | null }): Uint8Array {
  if (m.value_base64 != null) return base64ToBytes(m.value_base64);
  return new TextEncoder().encode(m.value ?? "");
}

/** A received message's payload as text (UTF-8 decoded when it came as `value_base64`). */
export function messageText(m: { value?: string | null; value_base64?: string | null }): string {
  if (m.value != null) return m.value;
  return new TextDecoder().decode(messageBytes(m));
}

/** Converts a `MessageInput` to the wire form (bytes become `value_base64`). */
export function toWire(m: MessageInput): ProduceMessage {
  const { value, ...rest } = m;
  return typeof value === "string" ? { ...rest, value } : { ...rest, value_base64: bytesToBase64(value) };
}

function isAbort(e: unknown, signal?: AbortSignal): boolean {
  return signal?.aborted === true || (e instanceof Error && e.name === "AbortError");
}

export interface ProduceRawOptions extends CallOptions {
  /** Default `application/octet-stream` for bytes, `text/plain; charset=utf-8` for text. */
  contentType?: string;
  key?: string;
  tags?: string[];
  delayMs?: number;
  deliverAtMs?: number;
  /** The message id (`Idempotency-Key`); a random one when absent, so retries never store twice. */
  idempotencyKey?: string;
  /** Application headers, sent as `X-Wharf-Header-<name>`. */
  headers?: Record<string, string>;
  ack?: AckLevel;
}

export interface StreamOptions extends CallOptions {
  /** Unacked messages the stream may hold, 1..=1000 (server default 10). */
  maxInFlight?: number;
  ackTimeoutMs?: number;
  heartbeatMs?: number;
  /** A receipt still held from an earlier stream (`Last-Event-ID`). */
  lastEventId?: string;
  /**
   * A stream that sends nothing, not even a heartbeat, for this long is taken as dead and
   * throws `WharfNetworkError` (a half-open connection, a stalled proxy). Default three
   * heartbeats: `3 * (heartbeatMs ?? 15000)`.
   */
  idleTimeoutMs?: number;
}

/**
 * A signal for one attempt: aborts when `outer` does, or with a `TimeoutError` after `ms`.
 * `settle()` stops the timer (the answer arrived) and detaches from `outer` only when
 * `detach` is set, since a streamed body still needs `outer` to end it.
 */
function attemptSignal(outer: AbortSignal | undefined, ms: number) {
  const { controller, detach: detachOuter } = following(outer);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError"));
  }, ms);
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    settle(detach: boolean) {
      clearTimeout(timer);
      if (detach) detachOuter();
    },
  };
}

/** A controller that aborts when `outer` does, with its reason; `detach()` stops following. */
function following(outer: AbortSignal | undefined): { controller: AbortController; detach: () => void } {
  const controller = new AbortController();
  const forward = () => controller.abort(outer?.reason);
  if (outer?.aborted) forward();
  else outer?.addEventListener("abort", forward, { once: true });
  return { controller, detach: () => outer?.removeEventListener("abort", forward) };
}

/**
 * The Wharf client: typed calls over the generated `openapi-fetch` client (`api`, for anything
 * this layer does not wrap), a bearer token on every request, 429/503 retried after their
 * `Retry-After` (exponential backoff without one; network errors too), errors thrown as
 * `WharfError` subclasses.
 */
export class WharfClient {
  /** The generated, fully typed openapi-fetch client (token middleware installed, no retries). */
  readonly api: Client<paths>;
  private readonly retry: Required<RetryOptions>;
  private readonly onRetry: ((e: RetryEvent) => void) | undefined;
  private readonly timeoutMs: number;

  constructor(options: WharfClientOptions) {
    const clientOptions: Parameters<typeof createClient<paths>>[0] = {
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      headers: options.headers ?? {},
    };
    if (options.fetch) clientOptions.fetch = options.fetch;
    this.api = createClient<paths>(clientOptions);
    const token = options.token;
    if (token !== undefined) {
      this.api.use({
        async onRequest({ request }) {
          const t = typeof token === "function" ? await token() : token;
          request.headers.set("Authorization", `Bearer ${t}`);
          return request;
        },
      });
    }
    this.retry = {
      maxAttempts: Math.max(1, options.retry?.maxAttempts ?? 6),
      initialBackoffMs: options.retry?.initialBackoffMs ?? 100,
      maxBackoffMs: options.retry?.maxBackoffMs ?? 10_000,
    };
    this.onRetry = options.onRetry;
    this.timeoutMs = Math.max(1, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  }

  /** Exponential backoff with jitter for attempt n (1-based): half fixed, half random. */
  backoffMs(attempt: number): number {
    const d = Math.min(this.retry.maxBackoffMs, this.retry.initialBackoffMs * 2 ** (attempt - 1));
    return d / 2 + Math.random() * (d / 2);
  }

  /**
   * Runs one generated call with the retry policy: a 429 or 503 waits its `Retry-After` (or the
   * backoff) and tries again; a thrown fetch (network) error backs off and tries again; any other
   * non-2xx throws its typed `WharfError` at once. An abort of `signal` rethrows at once. Each
   * attempt gets its own signal (`signal`, or `timeoutMs` passing) to hand to fetch; an attempt
   * that times out is a network error. `streamed`: the answer's body is read after this returns,
   * so the attempt's signal stays tied to `signal` to end it.
   */
  async call<T>(
    op: (signal: AbortSignal) => Promise<Outcome<T>>,
    signal?: AbortSignal,
    streamed = false,
  ): Promise<{ data: T; response: Response }> {
    for (let attempt = 1; ; attempt++) {
      let outcome: Outcome<T>;
      const bounded = attemptSignal(signal, this.timeoutMs);
      try {
        outcome = await op(bounded.signal);
      } catch (e) {
        bounded.settle(true);
        if (!bounded.timedOut() && isAbort(e, signal)) throw e;
        if (attempt >= this.retry.maxAttempts) {
          throw new WharfNetworkError(`request failed after ${attempt} attempts: ${String(e)}`, { cause: e });
        }
        const delayMs = this.backoffMs(attempt);
        this.onRetry?.({ attempt, delayMs, error: e, retryAfterMs: undefined });
        await sleep(delayMs, signal);
        continue;
      }
      bounded.settle(!streamed);
      const { response } = outcome;
      if (response.ok) return { data: outcome.data as T, response };
      const error = errorFromResponse(response, outcome.error);
      if ((response.status === 429 || response.status === 503) && attempt < this.retry.maxAttempts) {
        const delayMs = error.retryAfterMs ?? this.backoffMs(attempt);
        this.onRetry?.({ attempt, delayMs, error, retryAfterMs: error.retryAfterMs });
        await sleep(delayMs, signal);
        continue;
      }
      throw error;
    }
  }

  // ---- topics and subscriptions -------------------------------------------------------------

  async createTopic(body: CreateTopicRequest, o: CallOptions = {}): Promise<Topic> {
    return (await this.call((signal) => this.api.POST("/v1/topics", { body, signal }), o.signal)).data;
  }

  async describeTopic(topic: string, o: CallOptions = {}): Promise<Topic> {
    return (await this.call((signal) => this.api.GET("/v1/topics/{topic}", { params: { path: { topic } }, signal }), o.signal)).data;
  }

  async deleteTopic(topic: string, o: CallOptions = {}): Promise<void> {
    await this.call((signal) => this.api.DELETE("/v1/topics/{topic}", { params: { path: { topic } }, signal }), o.signal);
  }

  async createSubscription(topic: string, body: CreateSubscriptionRequest, o: CallOptions = {}): Promise<Subscription> {
    return (
      await this.call(
        (signal) => this.api.POST("/v1/topics/{topic}/subscriptions", { params: { path: { topic } }, body, signal }),
        o.signal,
      )
    ).data;
  }

  async describeSubscription(topic: string, sub: string, o: CallOptions = {}): Promise<Subscription> {
    return (
      await this.call(
        (signal) => this.api.GET("/v1/topics/{topic}/subscriptions/{sub}", { params: { path: { topic, sub } }, signal }),
        o.signal,
      )
    ).data;
  }

  /** Reads a partition by offset, without leases (replay, audit, dead-letter topics). */
  async readPartition(
    topic: string,
    partition: number,
    q: { offset?: number; max?: number; waitMs?: number } = {},
    o: CallOptions = {},
  ): Promise<Schemas["PartitionPage"]> {
    const query: NonNullable<paths["/v1/topics/{topic}/partitions/{partition}/messages"]["get"]["parameters"]["query"]> = {};
    if (q.offset !== undefined) query.offset = q.offset;
    if (q.max !== undefined) query.max = q.max;
    if (q.waitMs !== undefined) query.wait_ms = q.waitMs;
    return (
      await this.call(
        (signal) =>
          this.api.GET("/v1/topics/{topic}/partitions/{partition}/messages", {
            params: { path: { topic, partition }, query },
            signal,
          }),
        o.signal,
      )
    ).data;
  }

  // ---- producing ------------------------------------------------------------------------------

  /**
   * Produces a JSON batch (1..=1000 messages) in one request. Messages without an `id` get a
   * random one (set `autoId: false` to let the server assign them), so a retried request is
   * deduplicated by the server instead of stored twice.
   */
  async produce(
    topic: string,
    messages: MessageInput[],
    o: CallOptions & { ack?: AckLevel; autoId?: boolean } = {},
  ): Promise<ProducedMessage[]> {
    const autoId = o.autoId ?? true;
    const wire = messages.map((m) => toWire(autoId && m.id == null ? { ...m, id: newId() } : m));
    return this.produceWire(topic, wire, o);
  }

  /** Produces already wire-shaped messages (used by `Producer`, which assigns ids itself). */
  async produceWire(topic: string, messages: ProduceMessage[], o: CallOptions & { ack?: AckLevel } = {}): Promise<ProducedMessage[]> {
    const query = o.ack ? { ack: o.ack } : {};
    const { data } = await this.call(
      (signal) =>
        this.api.POST("/v1/topics/{topic}/messages", {
          params: { path: { topic }, query },
          body: { messages },
          headers: { "Content-Type": "application/json" },
          signal,
        }),
      o.signal,
    );
    return (data as Schemas["ProduceResponse"]).messages;
  }

  /** Produces one raw message (any body but JSON): the body is the value, as is. */
  async produceRaw(topic: string, body: string | Uint8Array | ArrayBuffer | Blob, o: ProduceRawOptions = {}): Promise<ProducedMessage> {
    const contentType = o.contentType ?? (typeof body === "string" ? "text/plain; charset=utf-8" : "application/octet-stream");
    if (/^application\/([^;]*\+)?json\b/i.test(contentType)) {
      throw new TypeError("produceRaw: a JSON content type is read as a batch; use produce()");
    }
    const query: NonNullable<paths["/v1/topics/{topic}/messages"]["post"]["parameters"]["query"]> = {};
    if (o.ack) query.ack = o.ack;
    if (o.key !== undefined) query.key = o.key;
    if (o.tags && o.tags.length > 0) query.tags = o.tags.join(",");
    if (o.delayMs !== undefined) query.delay_ms = o.delayMs;
    if (o.deliverAtMs !== undefined) query.deliver_at_ms = o.deliverAtMs;
    const headers: Record<string, string> = {
      "Content-Type": contentType,
      "Idempotency-Key": o.idempotencyKey ?? newId(),
    };
    for (const [name, value] of Object.entries(o.headers ?? {})) headers[`X-Wharf-Header-${name}`] = value;
    const { data } = await this.call(
      (signal) =>
        this.api.POST("/v1/topics/{topic}/messages", {
          params: { path: { topic }, query },
          // openapi-fetch types the body as the operation's JSON batch; this raw body (the
          // spec's application/octet-stream `RawMessage`) goes out as it is, not serialized.
          body: body as unknown as Schemas["ProduceRequest"],
          bodySerializer: (b: unknown) => b,
          headers,
          signal,
        }),
      o.signal,
    );
    const first = (data as Schemas["ProduceResponse"]).messages[0];
    if (!first) throw new WharfError(200, { code: "empty_reply", detail: "a raw produce answered no message" });
    return first;
  }

  /** Cancels a delayed message that is not due yet (404 `NotFoundError` once due or unknown). */
  async cancelDelayed(topic: string, id: string, o: CallOptions = {}): Promise<void> {
    await this.call(
      (signal) => this.api.DELETE("/v1/topics/{topic}/messages/{id}", { params: { path: { topic, id } }, signal }),
      o.signal,
    );
  }

  // ---- consuming ------------------------------------------------------------------------------

  /** One long-poll receive: returns at the first messages, or empty after `wait_ms`. */
  async receive(topic: string, sub: string, body: ReceiveBody = {}, o: CallOptions = {}): Promise<ReceivedMessage[]> {
    const { data } = await this.call(
      (signal) =>
        this.api.POST("/v1/topics/{topic}/subscriptions/{sub}/receive", {
          params: { path: { topic, sub } },
          body,
          signal,
        }),
      o.signal,
    );
    return data.messages;
  }

  async ack(topic: string, sub: string, receipts: string[], o: CallOptions = {}): Promise<AckResponse> {
    return (
      await this.call(
        (signal) =>
          this.api.POST("/v1/topics/{topic}/subscriptions/{sub}/ack", {
            params: { path: { topic, sub } },
            body: { receipts },
            signal,
          }),
        o.signal,
      )
    ).data;
  }

  /** Sends messages back: redelivered after `delayMs`, or after the subscription's retry backoff. */
  async nack(
    topic: string,
    sub: string,
    receipts: string[],
    o: CallOptions & { delayMs?: number | null; error?: string } = {},
  ): Promise<NackResponse> {
    const body: Schemas["NackRequest"] = { receipts, delay_ms: o.delayMs ?? null };
    if (o.error !== undefined) body.error = o.error.slice(0, 1024);
    return (
      await this.call(
        (signal) => this.api.POST("/v1/topics/{topic}/subscriptions/{sub}/nack", { params: { path: { topic, sub } }, body, signal }),
        o.signal,
      )
    ).data;
  }

  /** Extends leases to `ackTimeoutMs` from now (1000..=43200000). */
  async extend(topic: string, sub: string, receipts: string[], ackTimeoutMs: number, o: CallOptions = {}): Promise<ExtendResponse> {
    return (
      await this.call(
        (signal) =>
          this.api.POST("/v1/topics/{topic}/subscriptions/{sub}/extend", {
            params: { path: { topic, sub } },
            body: { receipts, ack_timeout_ms: ackTimeoutMs },
            signal,
          }),
        o.signal,
      )
    ).data;
  }

  /**
   * Server-Sent Events delivery (`GET …/stream`) as an async iterator of received messages. Each
   * is leased as by a receive: ack it with `ack()`. Ends when `signal` aborts (quietly), when the
   * caller breaks out of the loop, or when the server ends the stream; a final `event: error`
   * throws its problem as a `WharfError`. Opening the stream follows the retry policy; a dropped
   * stream is not reopened (open a new one: delivery state lives in the subscription). A stream
   * silent for `idleTimeoutMs` (three heartbeats by default) throws `WharfNetworkError`.
   */
  async *stream(topic: string, sub: string, o: StreamOptions = {}): AsyncGenerator<ReceivedMessage, void, undefined> {
    const query: NonNullable<paths["/v1/topics/{topic}/subscriptions/{sub}/stream"]["get"]["parameters"]["query"]> = {};
    if (o.maxInFlight !== undefined) query.max_in_flight = o.maxInFlight;
    if (o.ackTimeoutMs !== undefined) query.ack_timeout_ms = o.ackTimeoutMs;
    if (o.heartbeatMs !== undefined) query.heartbeat_ms = o.heartbeatMs;
    const headers: Record<string, string> = { Accept: "text/event-stream" };
    if (o.lastEventId !== undefined) headers["Last-Event-ID"] = o.lastEventId;
    const idleMs = Math.max(1, o.idleTimeoutMs ?? IDLE_HEARTBEATS * (o.heartbeatMs ?? SERVER_HEARTBEAT_MS));
    // The stream's own signal: the caller's abort, or the watchdog's on silence.
    const watchdog = new IdleWatchdog(o.signal, idleMs);
    try {
      let body: ReadableStream<Uint8Array> | null;
      try {
        ({ data: body } = await this.call(
          (signal) =>
            this.api.GET("/v1/topics/{topic}/subscriptions/{sub}/stream", {
              params: { path: { topic, sub }, query },
              headers,
              parseAs: "stream",
              signal,
            }),
          watchdog.signal,
          true,
        ));
      } catch (e) {
        if (isAbort(e, o.signal)) return;
        throw e;
      }
      if (!body) return;
      watchdog.touch();
      try {
        for await (const ev of parseSse(body, () => watchdog.touch())) {
          if (ev.event === "message") {
            yield JSON.parse(ev.data) as ReceivedMessage;
          } else if (ev.event === "error") {
            let problem: unknown;
            try {
              problem = JSON.parse(ev.data);
            } catch {
              problem = { detail: ev.data };
            }
            const p = problem as { status?: number };
            throw errorFromResponse(new Response(null, { status: p.status && p.status >= 400 && p.status < 600 ? p.status : 500 }), problem);
          }
        }
      } catch (e) {
        if (watchdog.fired) {
          throw new WharfNetworkError(`the stream sent nothing, not even a heartbeat, for ${idleMs} ms`, { cause: e });
        }
        if (isAbort(e, o.signal)) return;
        throw e;
      }
    } finally {
      watchdog.stop();
    }
  }
}

/**
 * Ends a stream that went silent: `signal` aborts when the caller's does, or when `idleMs`
 * pass without a chunk of the body after the first `touch()` (each restarts the count). Time a
 * message spends with the caller between two reads counts too: the stream is not read then.
 */
class IdleWatchdog {
  private readonly controller: AbortController;
  private readonly detach: () => void;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Whether silence, not the caller, aborted the stream. */
  fired = false;

  constructor(
    outer: AbortSignal | undefined,
    private readonly idleMs: number,
  ) {
    ({ controller: this.controller, detach: this.detach } = following(outer));
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  touch(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.fired = true;
      this.controller.abort(new DOMException(`silent for ${this.idleMs} ms`, "TimeoutError"));
    }, this.idleMs);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.detach();
  }
}
