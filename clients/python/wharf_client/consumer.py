"""`Consumer`: a receive loop that acks handled messages, nacks failed ones with their error
and keeps the leases of slow ones alive."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from types import TracebackType

from .client import Wharf
from .generated.models import AckResponse, NackResponse, ReceivedMessage
from .retry import RetryPolicy, call_with_retries

log = logging.getLogger(__name__)

Handler = Callable[[ReceivedMessage], None]


def describe_error(error: BaseException | str) -> str:
    """The text a nack carries (and a dead letter's `wharf-dlq-error` header keeps)."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return text[:1024]


class _Stopped(Exception):
    """Raised out of a retry pause when `stop()` was called during it."""


#: A consumer keeps receiving through transient errors until it is stopped.
RECEIVE_RETRY = RetryPolicy(attempts=1_000_000, max_backoff=5.0)
#: An ack or nack is tried for a few seconds; past that its message comes back after its lease.
SETTLE_RETRY = RetryPolicy()


class Consumer:
    """Consumes one subscription: `run(handler)` or `for message in consumer`.

    Each receive long-polls up to `wait_ms` for up to `max_messages` messages, leased for
    `ack_timeout_ms`. While messages are held, a background thread extends their leases
    every `extend_every` seconds (a third of the lease by default), so a slow handler does not
    lose its message. A handled message is acked; one whose handler raised is nacked with the
    error's text, and comes back after the subscription's retry backoff. `stop()` ends the
    loop after the current receive and batch (within `wait_ms`), or at once while it waits to
    retry a receive. Transient receive errors are retried per `retry`; others (401, 404, ...)
    end the loop by raising.

    Receipts whose ack, nack or extend failed are kept in `lost` (a lease that had ended, or a
    server unreachable for a few seconds); those messages come back when their leases end.
    """

    def __init__(
        self,
        wharf: Wharf,
        topic: str,
        subscription: str,
        *,
        max_messages: int = 10,
        wait_ms: int = 5_000,
        ack_timeout_ms: int = 30_000,
        extend_every: float | None = None,
        retry: RetryPolicy = RECEIVE_RETRY,
    ):
        self.wharf, self.topic, self.subscription = wharf, topic, subscription
        self.max_messages, self.wait_ms, self.ack_timeout_ms = max_messages, wait_ms, ack_timeout_ms
        self.extend_every = extend_every if extend_every is not None else ack_timeout_ms / 3000
        self.retry = retry
        self.acked = self.nacked = self.extended = 0
        self.lost: list[str] = []
        self._held: dict[str, ReceivedMessage] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._current: ReceivedMessage | None = None

    def stop(self) -> None:
        """Asks the loop to end after the current receive and batch; safe from any thread."""
        self._stopping.set()

    def run(self, handler: Handler) -> None:
        """Hands each message to `handler` until `stop()`: acks when it returns, nacks if it raises."""
        for message in self._messages():
            try:
                handler(message)
            except Exception as error:
                self._nack(message, error)
            else:
                self._ack(message)

    def __iter__(self) -> Iterator[ReceivedMessage]:
        """Yields messages until `stop()`; each is acked when the loop asks for the next.

        Iterate inside the consumer's `with` block: when the loop ends early, its exit acks
        the last message if the loop body broke out normally, or nacks it with the error if
        the body raised. Without the block that message comes back when its lease ends.
        Messages received but not yet yielded are handed back at once.
        """
        for message in self._messages():
            self._current = message
            yield message
            self._current = None
            self._ack(message)

    def __enter__(self) -> Consumer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
        current, self._current = self._current, None
        if current is not None and error is None:
            self._ack(current)
        elif current is not None and error is not None:
            self._nack(current, error)

    def _messages(self) -> Iterator[ReceivedMessage]:
        done = threading.Event()
        keeper = threading.Thread(target=self._keep_leases, args=(done,), name="wharf-lease-keeper", daemon=True)
        keeper.start()
        try:
            while not self._stopping.is_set():
                try:
                    batch = call_with_retries(self._receive, self.retry, sleep=self._pause)
                except _Stopped:
                    return
                with self._lock:
                    self._held.update((message.receipt, message) for message in batch)
                yield from batch
        finally:
            done.set()
            keeper.join()
            self._release_unhandled()

    def _pause(self, seconds: float) -> None:
        if self._stopping.wait(seconds):
            raise _Stopped

    def _receive(self) -> list[ReceivedMessage]:
        return self.wharf.receive(
            self.topic,
            self.subscription,
            max_messages=self.max_messages,
            wait_ms=self.wait_ms,
            ack_timeout_ms=self.ack_timeout_ms,
        )

    def _settle(self, message: ReceivedMessage, call: Callable[[], AckResponse | NackResponse]) -> int:
        """Acks or nacks one message, retrying transient errors per `SETTLE_RETRY`. If that
        fails too, or the receipt is stale, the receipt goes to `lost` (the message comes
        back when its lease ends); a 401 or 403 ends the loop. Returns how many settled."""
        with self._lock:
            self._held.pop(message.receipt, None)
        try:
            answer = call_with_retries(call, SETTLE_RETRY)
        except Exception as error:
            if not SETTLE_RETRY.should_retry(error):
                raise
            log.warning("settling %s failed: %s", message.id, error)
            self.lost.append(message.receipt)
            return 0
        self.lost.extend(failed.receipt for failed in answer.failed)
        return answer.acked if isinstance(answer, AckResponse) else answer.nacked

    def _ack(self, message: ReceivedMessage) -> None:
        self.acked += self._settle(message, lambda: self.wharf.ack(self.topic, self.subscription, [message.receipt]))

    def _nack(self, message: ReceivedMessage, error: BaseException | str) -> None:
        text = describe_error(error)
        self.nacked += self._settle(
            message, lambda: self.wharf.nack(self.topic, self.subscription, [message.receipt], error=text)
        )

    def _keep_leases(self, done: threading.Event) -> None:
        while not done.wait(self.extend_every):
            with self._lock:
                receipts = list(self._held)
            if not receipts:
                continue
            try:
                answer = self.wharf.extend(self.topic, self.subscription, receipts, self.ack_timeout_ms)
            except Exception as error:
                log.warning("extending %d leases failed: %s", len(receipts), error)
                continue
            self.extended += answer.extended
            with self._lock:
                for failed in answer.failed:
                    self._held.pop(failed.receipt, None)
                    self.lost.append(failed.receipt)

    def _release_unhandled(self) -> None:
        """Hands back messages received but never handed out, for other consumers to take."""
        with self._lock:
            receipts = [r for r in self._held if self._current is None or r != self._current.receipt]
        if receipts:
            self.wharf.nack(self.topic, self.subscription, receipts, delay_ms=0, error="released unhandled")
            with self._lock:
                for receipt in receipts:
                    self._held.pop(receipt, None)
