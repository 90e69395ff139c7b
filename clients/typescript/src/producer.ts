import { newId, toWire, type AckLevel, type MessageInput, type ProduceMessage, type ProducedMessage, type WharfClient } from "./client.js";

export interface ProducerOptions {
  /** Messages per request, 1..=1000 (default 100). */
  maxBatchMessages?: number;
  /** Serialized message bytes per request (default 1 MiB; the server takes bodies up to 8 MiB). */
  maxBatchBytes?: number;
  /** How long a partial batch waits for more messages (default 5 ms). */
  lingerMs?: number;
  ack?: AckLevel;
}

interface Pending {
  message: ProduceMessage;
  resolve: (r: ProducedMessage) => void;
  reject: (e: unknown) => void;
}

const encoder = new TextEncoder();

/**
 * Batches messages into JSON produce requests: a batch is sent when it holds `maxBatchMessages`,
 * when the next message would take it past `maxBatchBytes`, or `lingerMs` after its first
 * message. Every message gets an idempotency `id` (a random one unless the caller gave one), so
 * the client's retries (429/503 after `Retry-After`, network errors with backoff) never store a
 * message twice within the topic's dedup window. Batches go out one at a time, in order.
 */
export class Producer {
  readonly topic: string;
  private readonly client: WharfClient;
  private readonly maxBatchMessages: number;
  private readonly maxBatchBytes: number;
  private readonly lingerMs: number;
  private readonly ack: AckLevel | undefined;
  private batch: Pending[] = [];
  private batchBytes = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  /** Requests sent and messages acknowledged so far. */
  readonly stats = { requests: 0, messages: 0 };

  constructor(client: WharfClient, topic: string, options: ProducerOptions = {}) {
    this.client = client;
    this.topic = topic;
    this.maxBatchMessages = Math.min(1000, Math.max(1, options.maxBatchMessages ?? 100));
    this.maxBatchBytes = Math.max(1, options.maxBatchBytes ?? 1024 * 1024);
    this.lingerMs = Math.max(0, options.lingerMs ?? 5);
    this.ack = options.ack;
  }

  /** Queues one message; resolves with where it was stored once its batch is acknowledged. */
  send(message: MessageInput): Promise<ProducedMessage> {
    if (this.closed) return Promise.reject(new Error("Producer is closed"));
    const wire = toWire(message.id == null ? { ...message, id: newId() } : message);
    const bytes = encoder.encode(JSON.stringify(wire)).length + 1;
    if (this.batch.length > 0 && this.batchBytes + bytes > this.maxBatchBytes) this.seal();
    return new Promise<ProducedMessage>((resolve, reject) => {
      this.batch.push({ message: wire, resolve, reject });
      this.batchBytes += bytes;
      if (this.batch.length >= this.maxBatchMessages) this.seal();
      else if (this.timer === undefined) this.timer = setTimeout(() => this.seal(), this.lingerMs);
    });
  }

  /** Sends what is queued and resolves once every batch so far is settled. */
  async flush(): Promise<void> {
    this.seal();
    await this.chain;
  }

  /** Flushes, then refuses further sends. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private seal(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    this.chain = this.chain.then(() => this.sendBatch(batch));
  }

  private async sendBatch(batch: Pending[]): Promise<void> {
    try {
      this.stats.requests++;
      const opts = this.ack ? { ack: this.ack } : {};
      const results = await this.client.produceWire(
        this.topic,
        batch.map((p) => p.message),
        opts,
      );
      batch.forEach((p, i) => {
        const r = results[i];
        if (r) p.resolve(r);
        else p.reject(new Error(`produce reply lacks message ${i}`));
      });
      this.stats.messages += batch.length;
    } catch (e) {
      for (const p of batch) p.reject(e);
    }
  }
}
