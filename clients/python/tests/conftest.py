"""Fixtures: real `wharf` processes on free ports, and fresh topics.

The binary is `$WHARF_BIN`, else the newer of `target/debug/wharf` and
`target/release/wharf` (build one with `cargo build --bin wharf`).
"""

from __future__ import annotations

import ctypes
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from wharf_client import Wharf

REPO = Path(__file__).resolve().parents[3]
PR_SET_PDEATHSIG = 1
LISTENING = re.compile(r"wharf listening on (http://\S+?),")


def wharf_binary() -> Path:
    if os.environ.get("WHARF_BIN"):
        return Path(os.environ["WHARF_BIN"])
    built = [REPO / "target" / profile / "wharf" for profile in ("debug", "release")]
    built = [path for path in built if path.exists()]
    if not built:
        pytest.fail("no wharf binary: run `cargo build --bin wharf` or set WHARF_BIN")
    return max(built, key=lambda path: path.stat().st_mtime)


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> object:
    """Polls `condition` until it returns something truthy; fails the test after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


@dataclass
class Server:
    """A running `wharf serve`: its base URL and, with auth on, its HS256 secret."""

    base_url: str
    process: subprocess.Popen[bytes]
    log: Path
    secret: str | None = None

    def token(self, sub: str, scope: str, ttl: str = "10m") -> str:
        """A token minted by `wharf token` from this server's secret."""
        assert self.secret is not None, "auth is off on this server"
        command = [str(wharf_binary()), "token", "--sub", sub, "--scope", scope, "--ttl", ttl]
        env = {**clean_env(), "WHARF_AUTH_HS256_SECRET": self.secret}
        return subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout.strip()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def die_with_parent() -> None:
    """In the child before exec, on Linux: SIGKILL it when pytest dies, however it dies."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def clean_env() -> dict[str, str]:
    """The environment without WHARF_* settings (flags here say all), logging at info."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("WHARF_")}
    env["RUST_LOG"] = "info"
    return env


def start_server(folder: Path, *args: str, secret: str | None = None) -> Server:
    """Starts `wharf serve` on 127.0.0.1:0 and waits for its address and readiness."""
    log = folder / "wharf.log"
    env = clean_env()
    if secret is not None:
        env["WHARF_AUTH_HS256_SECRET"] = secret
    command = [str(wharf_binary()), "serve", "--listen", "127.0.0.1:0", "--data-dir", str(folder / "data"), *args]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, preexec_fn=die_with_parent)

    def address() -> str | None:
        if process.poll() is not None:
            pytest.fail(f"wharf exited with {process.returncode}:\n{log.read_text()}")
        found = LISTENING.search(log.read_text())
        return found.group(1) if found else None

    base_url = str(wait_until(address, 30, "wharf to listen"))
    wait_until(lambda: httpx.get(f"{base_url}/readyz").status_code == 200, 30, "wharf to be ready")
    return Server(base_url, process, log, secret)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One anonymous Wharf (loopback, no keys) for the session."""
    running = start_server(tmp_path_factory.mktemp("wharf"))
    yield running
    running.stop()


@pytest.fixture(scope="session")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One Wharf with HS256 auth on for the session."""
    running = start_server(tmp_path_factory.mktemp("wharf-auth"), secret=secrets.token_urlsafe(48))
    yield running
    running.stop()


@pytest.fixture
def wharf(server: Server) -> Iterator[Wharf]:
    with Wharf(server.base_url) as client:
        yield client


@pytest.fixture
def topic(wharf: Wharf) -> str:
    """A fresh one-partition topic."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    wharf.create_topic(name, partitions=1)
    return name
