"""A daemon the program owns: started for it, stopped with it.

    import hostguard

    with hostguard.Daemon(state_dir="state") as hg:   # hg is a connected Client
        hg.items.add(["job-1"])
        for lease in hg.items.claim(1):
            hg.items.succeed(lease)

The daemon keeps its SQLite file and its log in ``state_dir``, listens on
free loopback ports with a token made for it, and stops (SIGTERM, then a
kill after ``stop_timeout``) when the block ends, on :meth:`Daemon.stop`,
when the interpreter exits, and, because it watches the pipe on its
standard input (``--exit-with-stdin``), when the program dies in any way,
``kill -9`` included.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from typing import IO, List, Mapping, Optional, Sequence

from ._client import Client

__all__ = [
    "Daemon",
    "DaemonError",
    "BinaryNotFound",
    "PortInUse",
    "StateDirInUse",
    "DaemonNotReady",
    "find_binary",
]

_EXE = "hostguard.exe" if os.name == "nt" else "hostguard"
# The tail of the log quoted in an error.
_TAIL_LINES = 20
# How many fresh ports a start tries when another process takes the one
# it chose between choosing it and the daemon binding it.
_PORT_ATTEMPTS = 3


class DaemonError(RuntimeError):
    """A daemon could not be started or did not become ready.

    ``log_file`` is where its log went, ``log_tail`` the last lines of it.
    """

    def __init__(self, message: str, *, log_file: Optional[str] = None, log_tail: str = "") -> None:
        if log_tail:
            message += "\nlast lines of %s:\n%s" % (log_file, log_tail)
        super().__init__(message)
        self.log_file = log_file
        self.log_tail = log_tail


class BinaryNotFound(DaemonError):
    """No hostguard binary: not given, not bundled, not on PATH."""


class PortInUse(DaemonError):
    """Other processes kept taking the free ports chosen for the daemon."""


class StateDirInUse(DaemonError):
    """Another daemon runs on this state directory, and sharing it is not safe."""


class DaemonNotReady(DaemonError):
    """The daemon exited, or did not answer ready in time."""


def find_binary(binary: Optional[str] = None) -> str:
    """The hostguard binary to run: ``binary`` when given, else
    ``HOSTGUARD_BIN``, else the one a platform wheel installed beside this
    interpreter's scripts, else the first on ``PATH``."""
    if binary:
        if os.path.isfile(binary) and os.access(binary, os.X_OK):
            return os.path.abspath(binary)
        found = shutil.which(binary)
        if found:
            return found
        raise BinaryNotFound("hostguard: the binary %r does not exist or is not executable" % binary)
    env = os.environ.get("HOSTGUARD_BIN")
    if env:
        return find_binary(env)
    dirs: List[str] = []
    for scheme in (None, "%s_user" % os.name):
        try:
            d = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if d and d not in dirs:
            dirs.append(d)
    for d in dirs:
        p = os.path.join(d, _EXE)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    found = shutil.which(_EXE)
    if found:
        return found
    raise BinaryNotFound(
        "hostguard: no hostguard binary found (looked in %s and on PATH): install a platform wheel "
        "(pip install hostguard), or put a release binary on PATH, or pass Daemon(binary=PATH) or "
        "HOSTGUARD_BIN" % ", ".join(dirs or ["the interpreter's scripts"])
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: str, start: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(start)
            lines = f.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-_TAIL_LINES:])


def _stop_at_exit(ref: "weakref.ReferenceType[Daemon]") -> None:
    d = ref()
    if d is not None:
        d.stop()


class Daemon:
    """A private hostguard daemon, started by :meth:`start` (or ``with``).

    ``state_dir`` holds its SQLite file (``hostguard.db``) and, unless
    ``log_file`` names another, its log (``hostguard.log``); without one a
    temporary directory is used and removed on stop. ``binary`` is the
    program to run (see :func:`find_binary`). ``proxy`` also starts the
    forward proxy, on a port of its own (:attr:`proxy`). ``args`` are more
    ``hostguard serve`` flags; ``env`` replaces the environment it runs in.

    Two daemons on one state directory are refused by the second one, with
    :class:`StateDirInUse`; a daemon given a shared store (``args=["--db",
    "postgres://..."]``) may share it.
    """

    def __init__(
        self,
        state_dir: Optional[str] = None,
        *,
        binary: Optional[str] = None,
        log_file: Optional[str] = None,
        proxy: bool = True,
        args: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        ready_timeout: float = 30.0,
        stop_timeout: float = 15.0,
    ) -> None:
        self._state_arg = state_dir
        self._binary_arg = binary
        self._log_arg = log_file
        self._proxy = proxy
        self._args = list(args)
        self._env = dict(env) if env is not None else None
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.state_dir = ""
        self.log_file = ""
        self.binary = ""
        #: The API's URL, the proxy's host:port ("" without one), the token.
        self.addr = ""
        self.proxy = ""
        self.token = ""
        self.client: Optional[Client] = None
        self._proc: Optional[subprocess.Popen] = None
        self._log: Optional[IO[bytes]] = None
        self._temp = False

    @property
    def pid(self) -> Optional[int]:
        """The daemon's process id while it runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def __enter__(self) -> Client:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Client:
        """Starts the daemon, waits until it is ready and returns a client
        connected to it. Raises a :class:`DaemonError` naming what to do."""
        if self._proc is not None:
            raise DaemonError("hostguard: this Daemon is already started; stop() it first")
        self.binary = find_binary(self._binary_arg)
        if self._state_arg:
            self.state_dir = os.path.abspath(self._state_arg)
            os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        else:
            self.state_dir = tempfile.mkdtemp(prefix="hostguard-")
            self._temp = True
        self.log_file = os.path.abspath(self._log_arg or os.path.join(self.state_dir, "hostguard.log"))
        self.token = secrets.token_urlsafe(32)
        try:
            for attempt in range(_PORT_ATTEMPTS):
                if self._launch(last=attempt == _PORT_ATTEMPTS - 1):
                    break
        except BaseException:
            self.stop()
            raise
        atexit.register(_stop_at_exit, weakref.ref(self))
        self.client = Client(self.addr, token=self.token)
        return self.client

    def _launch(self, last: bool) -> bool:
        api = _free_port()
        argv = [self.binary, "serve", "--listen", "127.0.0.1:%d" % api,
                "--db", os.path.join(self.state_dir, "hostguard.db"), "--exit-with-stdin"]
        proxy = ""
        if self._proxy:
            proxy = "127.0.0.1:%d" % _free_port()
        argv += ["--proxy-listen", proxy] + self._args
        env = dict(self._env if self._env is not None else os.environ)
        # In the environment, the token stays out of the process list.
        env["HOSTGUARD_TOKEN"] = self.token
        log = open(self.log_file, "ab")
        start = log.tell()
        kwargs = {}
        if os.name == "nt":
            kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        else:
            # Its own session: a Ctrl-C meant for the program does not stop
            # the daemon under it; the program stops it.
            kwargs["start_new_session"] = True
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log, stderr=log, env=env,
                                    close_fds=True, **kwargs)
        except OSError as e:
            log.close()
            raise BinaryNotFound("hostguard: cannot run %s: %s" % (self.binary, e)) from e
        self._proc, self._log = proc, log
        deadline = time.monotonic() + self.ready_timeout
        while True:
            code = proc.poll()
            if code is not None:
                self._reap()
                tail = _tail(self.log_file, start)
                if "address already in use" in tail.lower() or "only one usage of each socket address" in tail.lower():
                    if not last:
                        return False
                    raise PortInUse("hostguard: the daemon could not listen on %s: other processes took "
                                    "%d free loopback ports in a row; try again" % (argv[3], _PORT_ATTEMPTS),
                                    log_file=self.log_file, log_tail=tail)
                if " is in use by " in tail:
                    raise StateDirInUse("hostguard: another daemon runs on the state directory %s and "
                                        "sharing it is not safe: stop that one, use its address instead "
                                        "of starting a second, or give this one another state_dir"
                                        % self.state_dir, log_file=self.log_file, log_tail=tail)
                raise DaemonNotReady("hostguard: the daemon exited with status %d before it was ready"
                                     % code, log_file=self.log_file, log_tail=tail)
            if self._ready(api):
                break
            if time.monotonic() > deadline:
                tail = _tail(self.log_file, start)
                raise DaemonNotReady("hostguard: the daemon did not become ready within %gs; raise "
                                     "ready_timeout, or see its log" % self.ready_timeout,
                                     log_file=self.log_file, log_tail=tail)
            time.sleep(0.05)
        self.addr = "http://127.0.0.1:%d" % api
        self.proxy = proxy
        return True

    def _ready(self, port: int) -> bool:
        # /readyz answers 200 once the store answers; a refused connection
        # means the daemon is still opening it.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open("http://127.0.0.1:%d/readyz" % port, timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        """Stops the daemon: SIGTERM (on Windows, its stdin closing), then a
        kill after ``stop_timeout`` seconds. Safe to call more than once."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                if os.name == "nt":
                    # --exit-with-stdin: closing the pipe is the graceful stop.
                    if proc.stdin:
                        proc.stdin.close()
                else:
                    proc.send_signal(signal.SIGTERM)
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            except OSError:
                pass
        self._reap()
        self.client = None
        if self._temp and self.state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)
            self._temp = False

    def _reap(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdin:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def __repr__(self) -> str:
        return "Daemon(state_dir=%r, addr=%r, pid=%r)" % (self.state_dir, self.addr, self.pid)
