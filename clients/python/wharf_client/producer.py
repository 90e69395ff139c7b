"""`Producer`: batches messages by count, bytes and linger time, with idempotency ids and
retries, on a background thread."""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from concurrent.futures import Future
from typing import Any

from .client import Wharf
from .generated.models import ProducedMessage
from .retry import OnRetry, RetryPolicy, call_with_retries

#: Six attempts within about three seconds of backoff, or as long as `Retry-After` says.
PRODUCE_RETRY = RetryPolicy()


class Producer:
    """Sends messages to one topic in JSON batches.

    `send` queues a message and returns a `Future` of its `ProducedMessage`. A batch leaves
    when it holds `max_batch_messages` messages or `max_batch_bytes` of JSON, or `linger`
    seconds after its first message was queued. Every message gets an idempotency `id`
    (a random UUID unless given), so a batch retried after a lost answer is not stored twice:
    its repeats come back with `duplicate` set. 429 and 503 answers and transport errors are
    retried per `retry`, honouring `Retry-After`.
    """

    def __init__(
        self,
        wharf: Wharf,
        topic: str,
        *,
        max_batch_messages: int = 100,
        max_batch_bytes: int = 1024 * 1024,
        linger: float = 0.005,
        retry: RetryPolicy = PRODUCE_RETRY,
        on_retry: OnRetry | None = None,
    ):
        self.wharf, self.topic = wharf, topic
        self.max_batch_messages, self.max_batch_bytes, self.linger = max_batch_messages, max_batch_bytes, linger
        self.retry, self.on_retry = retry, on_retry
        self._queue: list[tuple[dict[str, Any], int, Future[ProducedMessage]]] = []
        self._queued_bytes = 0
        self._oldest = 0.0
        self._sending = 0
        self._flushers = 0
        self._closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"wharf-producer-{topic}", daemon=True)
        self._thread.start()

    def send(
        self,
        value: str | bytes,
        *,
        key: str | None = None,
        headers: dict[str, str] | None = None,
        tags: list[str] | None = None,
        delay_ms: int | None = None,
        id: str | None = None,
    ) -> Future[ProducedMessage]:
        """Queues one message: text as `value`, bytes as `value_base64`."""
        message: dict[str, Any] = {"id": id or uuid.uuid4().hex}
        if isinstance(value, bytes):
            message["value_base64"] = base64.b64encode(value).decode()
        else:
            message["value"] = value
        optional = {"key": key, "headers": headers, "tags": tags, "delay_ms": delay_ms}
        message.update({name: v for name, v in optional.items() if v is not None})
        size = len(json.dumps(message)) + 1
        future: Future[ProducedMessage] = Future()
        with self._changed:
            if self._closed:
                raise RuntimeError("the producer is closed")
            if not self._queue:
                self._oldest = time.monotonic()
            self._queue.append((message, size, future))
            self._queued_bytes += size
            self._changed.notify_all()
        return future

    def flush(self, timeout: float | None = None) -> bool:
        """Waits until every queued message is answered; False if `timeout` passed first."""
        with self._changed:
            self._flushers += 1
            self._changed.notify_all()
            try:
                return self._changed.wait_for(lambda: not self._queue and not self._sending, timeout)
            finally:
                self._flushers -= 1

    def close(self, timeout: float | None = None) -> None:
        """Sends what is queued, then stops the background thread."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._thread.join(timeout)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _batch_ready(self) -> bool:
        return (
            self._closed
            or self._flushers > 0
            or len(self._queue) >= self.max_batch_messages
            or self._queued_bytes >= self.max_batch_bytes
            or time.monotonic() >= self._oldest + self.linger
        )

    def _take_batch(self) -> list[tuple[dict[str, Any], int, Future[ProducedMessage]]]:
        taken, size = 0, 0
        for _, message_size, _ in self._queue:
            if taken >= self.max_batch_messages or (taken and size + message_size > self.max_batch_bytes):
                break
            taken, size = taken + 1, size + message_size
        batch, self._queue = self._queue[:taken], self._queue[taken:]
        self._queued_bytes -= size
        return batch

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._queue or self._closed)
                if not self._queue:
                    return
                while not self._batch_ready():
                    self._changed.wait(max(0.0, self._oldest + self.linger - time.monotonic()))
                batch = self._take_batch()
                self._sending += 1
            try:
                self._send(batch)
            finally:
                with self._changed:
                    self._sending -= 1
                    self._changed.notify_all()

    def _send(self, batch: list[tuple[dict[str, Any], int, Future[ProducedMessage]]]) -> None:
        messages = [message for message, _, _ in batch]
        try:
            produced = call_with_retries(lambda: self.wharf.produce(self.topic, messages), self.retry, self.on_retry)
        except Exception as error:
            for _, _, future in batch:
                future.set_exception(error)
            return
        if len(produced) != len(batch):
            mismatch = RuntimeError(f"{len(batch)} messages sent, {len(produced)} answered")
            for _, _, future in batch:
                future.set_exception(mismatch)
            return
        for (_, _, future), result in zip(batch, produced, strict=True):
            future.set_result(result)
