"""The README's Python example, run as written (between the markers), and kept in step."""

from __future__ import annotations

import inspect
import re
import textwrap

from conftest import REPO, wait_until


def test_readme_producer_and_consumer(server, monkeypatch) -> None:
    monkeypatch.setenv("WHARF_URL", server.base_url)
    # README:start
    import os

    from wharf_client import Consumer, Producer, Wharf, payload

    wharf = Wharf(os.environ.get("WHARF_URL", "http://127.0.0.1:8080"))  # token=... when auth is on
    wharf.create_topic("orders", partitions=3)
    wharf.create_subscription("orders", "billing", start="earliest")

    with Producer(wharf, "orders") as producer:  # batches, ids, retries
        for n in range(3):
            producer.send(f"order {n}", key=f"customer-{n}")

    consumer = Consumer(wharf, "orders", "billing")
    handled = []

    def handle(message):  # returns: acked; raises: nacked, redelivered later
        handled.append(payload(message).decode())
        if len(handled) == 3:
            consumer.stop()

    consumer.run(handle)
    # README:end
    assert sorted(handled) == ["order 0", "order 1", "order 2"]
    wait_until(lambda: wharf.describe_subscription("orders", "billing").stats.acked == 3, 5, "three acks")


def test_readme_shows_the_example_exactly() -> None:
    source = inspect.getsource(test_readme_producer_and_consumer)
    example = textwrap.dedent(source.split("# README:start\n")[1].split("    # README:end")[0])
    readme = (REPO / "README.md").read_text()
    python = readme.split("### Python", 1)[1]
    block = re.search(r"```python\n(.*?)```", python, re.S)
    assert block is not None, "README has no Python example under ### Python"
    assert block.group(1) == example
