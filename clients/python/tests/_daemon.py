"""Runs the real hostguard binary for the tests.

The binary is built once per test run from this repository (``go build``
into a temporary directory), or taken from ``HOSTGUARD_BIN``. Each daemon
listens on free loopback ports (port 0; the addresses come from its JSON
"listening" log line) over an SQLite file of its own.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parents[3]

_lock = threading.Lock()
_binary: Optional[str] = None


def binary() -> str:
    global _binary
    with _lock:
        if _binary:
            return _binary
        env = os.environ.get("HOSTGUARD_BIN")
        if env:
            _binary = env
            return env
        out = tempfile.mkdtemp(prefix="hostguard-bin-")
        atexit.register(shutil.rmtree, out, True)
        path = os.path.join(out, "hostguard")
        proc = subprocess.run(["go", "build", "-o", path, "./cmd/hostguard"], cwd=str(REPO),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            raise RuntimeError("go build failed:\n" + proc.stdout.decode(errors="replace"))
        _binary = path
        return path


def dead_port() -> int:
    """A loopback port nothing listens on: connecting to it is refused."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, *args: str, token: str = "", tuned: bool = True) -> None:
        """tuned=False runs the daemon with its defaults, as the README
        starts it, plus the ports, the file and --allow-private."""
        self.dir = tempfile.mkdtemp(prefix="hostguard-test-")
        self.token = token
        argv = [binary(), "serve", "--listen", "127.0.0.1:0", "--proxy-listen", "127.0.0.1:0",
                "--db", os.path.join(self.dir, "hostguard.db"), "--log-format", "json", "--allow-private"]
        if tuned:
            argv += ["--header-timeout", "2s"]
        argv += list(args)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTGUARD_")}
        if token:
            env["HOSTGUARD_TOKEN"] = token
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self.logs: List[str] = []
        found = threading.Event()
        self.api = ""
        self.proxy = ""

        def read() -> None:
            assert self.proc.stderr is not None
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace")
                self.logs.append(line)
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("msg") == "hostguard: listening":
                    self.api = "http://" + rec["api"]
                    self.proxy = rec.get("proxy", "")
                    found.set()
            found.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        if not found.wait(30) or not self.api:
            self.stop()
            raise RuntimeError("the daemon did not start:\n" + "".join(self.logs))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)
