"""`marketarena view` served for the tests: the command itself on a free loopback port (its log
read once it stops), and plain HTTP GETs against it."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, method: str = "GET") -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@contextlib.contextmanager
def serving(root: Path):
    """(base URL, process) of `marketarena view --root <root>` on a free loopback port; the
    process's output (its log) is read once it is stopped."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "marketarena.cli", "view", "--root", str(root), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                if get(base + "/")[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise AssertionError(f"the viewer did not start:\n{proc.stdout.read()}")
            time.sleep(0.2)
        yield base, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)
