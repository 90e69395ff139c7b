"""A Server-Sent Events parser (the WHATWG event-stream format) for `GET .../stream`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSentEvent:
    """One dispatched event: its type, its data (lines joined by `\\n`) and its id."""

    event: str
    data: str
    id: str | None


def parse_events(lines: Iterable[str]) -> Iterator[ServerSentEvent]:
    """Turns the stream's lines (without line endings) into events.

    A blank line dispatches the event gathered so far; `:` lines are comments (Wharf's
    heartbeats); an event without data is dropped, as browsers do.
    """
    event, event_id = "", None
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield ServerSentEvent(event or "message", "\n".join(data), event_id)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif field == "id" and "\0" not in value:
            event_id = value
