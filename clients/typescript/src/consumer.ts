import { newId, sleep, type ReceivedMessage, type WharfClient } from "./client.js";
import { ForbiddenError, NotFoundError, UnauthorizedError } from "./errors.js";

/** Handles one message; return (or resolve) to ack it, throw (or reject) to nack it. */
export type MessageHandler = (message: ReceivedMessage, context: { signal: AbortSignal }) => unknown;

export interface ConsumerOptions {
  /** Messages per receive, 1..=1000 (default 10); a batch's messages are handled concurrently. */
  maxMessages?: number;
  /** Long-poll time of a receive (default 20000 ms, at most 60000). */
  waitMs?: number;
  /** Lease asked for each message (default 30000 ms, at least 1000). */
  ackTimeoutMs?: number;
  /** While a handler runs, its lease is extended this often (default ackTimeoutMs / 2). */
  extendEveryMs?: number;
  /** Redelivery delay of a nacked message (default: the subscription's retry backoff). */
  nackDelayMs?: number | null;
  /** Errors that do not stop the consumer: receive failures, failed acks, nacks and extends. */
  onError?: (error: unknown, message?: ReceivedMessage) => void;
}

/**
 * A long-poll consumer: receives, calls the handler once per message, acks on success, nacks
 * with the error's message on an exception (so a dead letter carries it in `wharf-dlq-error`),
 * and extends the lease of a message whose handler is still running. `stop()` aborts the pending
 * receive and resolves once the running handlers have finished and been acked or nacked. A 401,
 * 403 or 404 from a receive stops the consumer and rejects `done`; other receive errors are
 * reported to `onError` and retried with backoff.
 */
export class Consumer {
  readonly topic: string;
  readonly subscription: string;
  /** Settles when the loop ends: resolves after `stop()`, rejects on a fatal error. */
  readonly done: Promise<void>;
  readonly stats = { received: 0, acked: 0, nacked: 0, extended: 0 };
  private readonly client: WharfClient;
  private readonly handler: MessageHandler;
  private readonly controller = new AbortController();
  private readonly opts: Required<Omit<ConsumerOptions, "onError" | "nackDelayMs" | "extendEveryMs">> & {
    extendEveryMs: number;
    nackDelayMs: number | null;
    onError: (error: unknown, message?: ReceivedMessage) => void;
  };

  constructor(client: WharfClient, topic: string, subscription: string, handler: MessageHandler, options: ConsumerOptions = {}) {
    this.client = client;
    this.topic = topic;
    this.subscription = subscription;
    this.handler = handler;
    const ackTimeoutMs = Math.max(1000, options.ackTimeoutMs ?? 30_000);
    this.opts = {
      maxMessages: options.maxMessages ?? 10,
      waitMs: options.waitMs ?? 20_000,
      ackTimeoutMs,
      extendEveryMs: options.extendEveryMs ?? ackTimeoutMs / 2,
      nackDelayMs: options.nackDelayMs ?? null,
      onError: options.onError ?? (() => {}),
    };
    this.done = this.run();
    // `done` may never be awaited by a caller that only calls stop(); keep a rejection handled.
    this.done.catch(() => {});
  }

  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  /** Stops receiving; resolves when in-flight handlers are done and their messages settled. */
  async stop(): Promise<void> {
    this.controller.abort(new DOMException("Consumer stopped", "AbortError"));
    await this.done.catch(() => {});
  }

  private async run(): Promise<void> {
    const signal = this.controller.signal;
    let failures = 0;
    while (!signal.aborted) {
      let messages: ReceivedMessage[];
      try {
        messages = await this.client.receive(
          this.topic,
          this.subscription,
          {
            max_messages: this.opts.maxMessages,
            wait_ms: this.opts.waitMs,
            ack_timeout_ms: this.opts.ackTimeoutMs,
            // The client's retries of this receive (a lost answer, a 503) carry the same
            // attempt id, so the server hands back the same leases instead of new ones.
            attempt_id: newId(),
          },
          { signal },
        );
        failures = 0;
      } catch (e) {
        if (signal.aborted) break;
        if (e instanceof UnauthorizedError || e instanceof ForbiddenError || e instanceof NotFoundError) throw e;
        this.opts.onError(e);
        failures++;
        await sleep(this.client.backoffMs(Math.min(failures, 8)), signal).catch(() => {});
        continue;
      }
      this.stats.received += messages.length;
      await Promise.all(messages.map((m) => this.handle(m, signal)));
    }
  }

  private async handle(message: ReceivedMessage, signal: AbortSignal): Promise<void> {
    const { topic, subscription: sub } = this;
    const timer = setInterval(() => {
      this.client
        .extend(topic, sub, [message.receipt], this.opts.ackTimeoutMs)
        .then((r) => {
          if (r.extended > 0) this.stats.extended++;
          for (const f of r.failed) this.opts.onError(new Error(`extend failed: ${f.code}`), message);
        })
        .catch((e) => this.opts.onError(e, message));
    }, this.opts.extendEveryMs);
    let failure: unknown;
    let ok = false;
    try {
      await this.handler(message, { signal });
      ok = true;
    } catch (e) {
      failure = e;
    } finally {
      clearInterval(timer);
    }
    // Settling goes on after stop(): the handler's work is done and should not be redone.
    try {
      if (ok) {
        const r = await this.client.ack(topic, sub, [message.receipt]);
        this.stats.acked += r.acked;
        for (const f of r.failed) this.opts.onError(new Error(`ack failed: ${f.code}`), message);
      } else {
        const error = failure instanceof Error ? failure.message : String(failure);
        const r = await this.client.nack(topic, sub, [message.receipt], { delayMs: this.opts.nackDelayMs, error });
        this.stats.nacked += r.nacked;
        for (const f of r.failed) this.opts.onError(new Error(`nack failed: ${f.code}`), message);
      }
    } catch (e) {
      this.opts.onError(e, message);
    }
  }
}
