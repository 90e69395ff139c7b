"""Python client for Wharf.

- `Wharf`: one server; typed methods over the generated client (`wharf_client.generated`,
  made by openapi-python-client from openapi/openapi.json; never edit it by hand).
- `Producer`: batching, idempotency ids, retries that honour `Retry-After`.
- `Consumer`: receive loop with ack, nack on error and lease extension.
- `Wharf.stream`: Server-Sent Events delivery.
- `WharfError` and its subclasses: problem+json answers as exceptions.
"""

from .client import Wharf, payload
from .consumer import Consumer
from .errors import Conflict, Forbidden, NotFound, RateLimited, Unauthorized, Unavailable, WharfError
from .producer import Producer
from .retry import RetryPolicy
from .sse import ServerSentEvent, parse_events

__all__ = [
    "Conflict",
    "Consumer",
    "Forbidden",
    "NotFound",
    "Producer",
    "RateLimited",
    "RetryPolicy",
    "ServerSentEvent",
    "Unauthorized",
    "Unavailable",
    "Wharf",
    "WharfError",
    "parse_events",
    "payload",
]
