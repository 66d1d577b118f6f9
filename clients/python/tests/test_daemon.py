"""hostguard.Daemon against the real binary: a daemon the program owns."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from pathlib import Path
from typing import Callable
from unittest import mock

import hostguard
from hostguard import daemon as daemon_mod

from ._daemon import binary

PKG = str(Path(__file__).resolve().parents[1])


def gone(pid: int) -> bool:
    """The process has exited (a zombie no one reaped yet counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def wait_until(cond: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """The one polling loop of these tests: for things only polling sees
    (another process's end), bounded in time."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %gs waiting for %s" % (timeout, what))
        time.sleep(0.05)


class DaemonTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="hostguard-daemon-test-")

    def tearDown(self) -> None:
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)

    def test_ready_and_stopped_when_the_block_ends(self) -> None:
        d = hostguard.Daemon(state_dir=self.dir, binary=binary())
        with d as hg:
            pid = d.pid
            self.assertIsNotNone(pid)
            self.assertTrue(d.addr.startswith("http://127.0.0.1:"))
            self.assertTrue(d.proxy.startswith("127.0.0.1:"))
            hg.items.add(["job-1"])
            leases = hg.items.claim(1, 60)
            self.assertEqual([lease["id"] for lease in leases], ["job-1"])
            hg.items.succeed(leases[0])
            # The token was made for this daemon: a client without it is refused.
            with self.assertRaises(hostguard.Unauthorized):
                hostguard.Client(d.addr, token="wrong").items.stats()
        assert pid is not None
        self.assertTrue(gone(pid), "the daemon still runs after the block")
        self.assertIsNone(d.pid)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "hostguard.db")))
        log = Path(self.dir, "hostguard.log").read_text()
        self.assertIn("hostguard: listening", log)
        self.assertIn("server: stopped", log)
        # Stopped twice is stopped.
        d.stop()

    def test_state_survives_a_restart_and_the_log_goes_where_named(self) -> None:
        log = os.path.join(self.dir, "elsewhere.log")
        with hostguard.Daemon(state_dir=self.dir, binary=binary(), log_file=log, proxy=False) as hg:
            hg.items.add(["kept"])
        with hostguard.Daemon(state_dir=self.dir, binary=binary(), log_file=log, proxy=False) as hg:
            self.assertEqual([lease["id"] for lease in hg.items.claim(5, 60)], ["kept"])
        self.assertEqual(Path(log).read_text().count("hostguard: listening"), 2)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "hostguard.log")))

    def test_a_killed_parent_leaves_no_daemon(self) -> None:
        prog = textwrap.dedent(
            """
            import sys, time, hostguard
            d = hostguard.Daemon(state_dir=sys.argv[1], binary=sys.argv[2])
            d.start()
            print(d.pid, flush=True)
            time.sleep(600)
            """
        )
        env = dict(os.environ, PYTHONPATH=PKG)
        child = subprocess.Popen([sys.executable, "-c", prog, self.dir, binary()], env=env,
                                 stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            self.assertTrue(line.strip(), "the child did not start its daemon")
            pid = int(line)
            self.assertFalse(gone(pid))
            child.send_signal(signal.SIGKILL)
            child.wait()
            wait_until(lambda: gone(pid), "the daemon of a killed parent to stop")
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            if child.stdout:
                child.stdout.close()
        log = Path(self.dir, "hostguard.log").read_text()
        self.assertIn("standard input closed", log)
        self.assertIn("server: stopped", log)

    def test_missing_binary(self) -> None:
        missing = os.path.join(self.dir, "no-such-hostguard")
        with self.assertRaises(hostguard.BinaryNotFound) as cm:
            hostguard.Daemon(state_dir=self.dir, binary=missing).start()
        self.assertIn(missing, str(cm.exception))
        with mock.patch.dict(os.environ, {"PATH": self.dir, "HOSTGUARD_BIN": ""}), \
                mock.patch.object(daemon_mod.sysconfig, "get_path", return_value=self.dir):
            with self.assertRaises(hostguard.BinaryNotFound) as cm:
                hostguard.Daemon(state_dir=self.dir).start()
        self.assertIn("pip install hostguard", str(cm.exception))

    def test_two_daemons_on_one_state_dir(self) -> None:
        with hostguard.Daemon(state_dir=self.dir, binary=binary(), proxy=False) as hg:
            with self.assertRaises(hostguard.StateDirInUse) as cm:
                hostguard.Daemon(state_dir=self.dir, binary=binary(), proxy=False).start()
            self.assertIn(self.dir, str(cm.exception))
            self.assertIn("another daemon", str(cm.exception))
            # The first one is untouched.
            hg.items.add(["still-here"])
            self.assertEqual(hg.items.stats()["total"], 1)

    def test_port_race(self) -> None:
        # Every free port the helper picks is taken before the daemon binds it.
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        try:
            port = taken.getsockname()[1]
            with mock.patch.object(daemon_mod, "_free_port", return_value=port):
                with self.assertRaises(hostguard.PortInUse) as cm:
                    hostguard.Daemon(state_dir=self.dir, binary=binary(), proxy=False).start()
        finally:
            taken.close()
        self.assertIn("127.0.0.1:%d" % port, str(cm.exception))
        self.assertIn("address already in use", cm.exception.log_tail)

    @unittest.skipIf(os.name == "nt", "a shell script stands in for the binary")
    def test_not_ready(self) -> None:
        fake = os.path.join(self.dir, "fake-hostguard")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho 'opening the store' >&2\nexec sleep 600\n")
        os.chmod(fake, 0o755)
        d = hostguard.Daemon(state_dir=self.dir, binary=fake, ready_timeout=2, stop_timeout=1)
        with self.assertRaises(hostguard.DaemonNotReady) as cm:
            d.start()
        self.assertIn("did not become ready within 2s", str(cm.exception))
        self.assertIn("opening the store", cm.exception.log_tail)
        self.assertIsNone(d.pid)

        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho 'hostguard serve: bad flag' >&2\nexit 2\n")
        with self.assertRaises(hostguard.DaemonNotReady) as cm:
            hostguard.Daemon(state_dir=self.dir, binary=fake).start()
        self.assertIn("exited with status 2", str(cm.exception))
        self.assertIn("bad flag", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
