"""Loopback hosts for the proxy tests: one that answers its own 503 (over
http:// or TLS), one that accepts connections and never says a word, and
the third-party HTTP libraries, which are optional outside CI."""

from __future__ import annotations

import http.server
import importlib
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
from typing import Any, Callable, Dict, List, Optional


def third_party(name: str) -> Any:
    """Imports requests, httpx or aiohttp, or skips the test without it;
    under CI=true a missing library fails instead (clients/test.sh picks an
    interpreter that has them)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        raise unittest.SkipTest("%s is not installed for this Python (Debian: python3-%s)" % (name, name))


class Cert:
    """A self-signed certificate for 127.0.0.1, made with openssl."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="hostguard-cert-")
        self.cert = os.path.join(self.dir, "cert.pem")
        self.key = os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", self.key, "-out", self.cert],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.cert)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class Upstream:
    """A host answering every GET with a fixed status, body and headers,
    over http:// or, given a certificate, TLS. With 503 and Retry-After it
    is what an overloaded site sends: no Proxy-Status."""

    def __init__(self, status: int, body: bytes, content_type: str = "text/plain",
                 headers: Optional[Dict[str, str]] = None, cert: Optional[Cert] = None) -> None:
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a: object) -> None:
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        scheme = "http"
        if cert is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert.cert, cert.key)
            self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
            scheme = "https"
        self.url = "%s://127.0.0.1:%d" % (scheme, self.srv.server_address[1])
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


class SilentHost:
    """Accepts connections, reads what comes and never answers; counts the
    connections it accepted, which is how a test sees whether a request
    reached the host."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self._lock = threading.Lock()
        self._accepted = 0
        self._held: List[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._accepted += 1
                self._held.append(conn)

    @property
    def accepted(self) -> int:
        with self._lock:
            return self._accepted

    def close(self) -> None:
        with self._lock:
            self._closed = True
            held, self._held = self._held, []
        self.sock.close()
        for c in held:
            c.close()


class ComebackHost:
    """Answers every GET with 200 after delay seconds; down() stops it
    listening (connections are refused) and up() listens again on the same
    port. It logs "in" and "out" for each request it answers, so a test
    sees which requests overlapped."""

    def __init__(self, delay: float) -> None:
        host = self
        self._lock = threading.Lock()
        self.log: List[str] = []

        # HTTP/1.0, the handler's default: every request is a connection
        # of its own, so after down() none is left open to answer on.
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                host._note("in")
                time.sleep(delay)
                host._note("out")
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *a: object) -> None:
                pass

        self._handler = H
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def _note(self, what: str) -> None:
        with self._lock:
            self.log.append(what)

    def events(self) -> List[str]:
        with self._lock:
            return list(self.log)

    def forget(self) -> None:
        with self._lock:
            self.log = []

    def down(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()

    def up(self) -> None:
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self._handler)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.down()


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Polls cond until it holds; the one polling helper of these tests,
    for state only the daemon knows (its guard's view of an endpoint)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)
