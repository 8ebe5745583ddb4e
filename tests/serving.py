"""Start `specpilot serve` as a real process for tests: --port 0, the port read from its log."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import specpilot

READY = re.compile(r"serving (\S+) .* at (http://127\.0\.0\.1:\d+)")


@dataclass
class Server:
    proc: subprocess.Popen
    url: str = ""
    model: str = ""
    log: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Signal the server, wait for it to exit and for its log to be read to the end."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=30)
        if self.reader is not None:
            self.reader.join(timeout=10)
        return code


def start_server(*args: str, timeout: float = 60.0) -> Server:
    """`specpilot serve --port 0 ARGS` on CPU in fp32; returns once it answers /health."""
    env = dict(os.environ)
    src = str(Path(specpilot.__file__).parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "specpilot.cli", "serve", "--port", "0", "--device", "cpu"]
    cmd += ["--dtype", "float32", "--shutdown-timeout", "5", *args]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    server = Server(proc)
    found = threading.Event()

    def read() -> None:  # keeps draining stderr so that the server never blocks on its pipe
        for line in proc.stderr:
            server.log.append(line)
            match = READY.search(line)
            if match and not found.is_set():
                server.model, server.url = match.group(1), match.group(2)
                found.set()

    server.reader = threading.Thread(target=read, daemon=True)
    server.reader.start()
    deadline = time.monotonic() + timeout
    while not found.wait(0.1):
        if proc.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError("server did not start:\n" + "".join(server.log))
    while time.monotonic() < deadline:
        try:
            if request(server.url + "/health")[0] == 200:
                return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError("server did not answer /health:\n" + "".join(server.log))


def request(
    url: str,
    body: bytes | dict | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """(status, parsed JSON or text) of a GET (body None) or POST, errors included."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    text = raw.decode()
    try:
        return status, json.loads(text)
    except json.JSONDecodeError:
        return status, text


def metric(url: str, name: str) -> float:
    """The value of an unlabelled (or the first labelled) sample of /metrics."""
    status, text = request(url + "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise KeyError(name)
