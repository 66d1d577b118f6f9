"""is_fast_fail on what urllib, requests, httpx and aiohttp really hand
back from the real daemon's proxy, over http:// and over CONNECT."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import urllib.error
import urllib.request
import unittest
from typing import Any, Callable, Dict, Iterator
from unittest import mock

from hostguard import FastFail, is_fast_fail

from ._daemon import Daemon, dead_port
from ._targets import Cert, Upstream503, third_party

FF_HEADER = 'hostguard; error=destination_unavailable; details="endpoint http://h:1 is not answering"'


def setUpModule() -> None:
    global DAEMON, CERT, UP_HTTP, UP_TLS, PROXY
    DAEMON = Daemon()
    PROXY = "http://" + DAEMON.proxy
    CERT = Cert()
    UP_HTTP = Upstream503()
    UP_TLS = Upstream503(CERT)


def tearDownModule() -> None:
    UP_HTTP.close()
    UP_TLS.close()
    CERT.close()
    DAEMON.stop()


@contextlib.contextmanager
def proxy_env() -> Iterator[None]:
    """The environment the README tells a program to run with, minus
    no_proxy: the targets here are on loopback too."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "https_proxy", "all_proxy")}
    env.update(http_proxy=PROXY, https_proxy=PROXY)
    with mock.patch.dict(os.environ, env, clear=True):
        yield


def catch(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as e:  # the error is what is under test
        return e


class Answer:
    """A response-like object for the cases no real daemon can produce."""

    def __init__(self, status: int, headers: Dict[str, str]) -> None:
        self.status_code = status
        self.headers = headers


class RecognitionTest(unittest.TestCase):
    def test_answers_decide_by_the_daemons_header(self) -> None:
        self.assertTrue(is_fast_fail(Answer(503, {"Proxy-Status": FF_HEADER})))
        self.assertTrue(is_fast_fail(Answer(503, {"proxy-status": "hostguard; error=destination_unavailable"})))
        # Another proxy's member, the upstream's own 503, a 502.
        self.assertFalse(is_fast_fail(Answer(503, {"Proxy-Status": "squid; error=destination_unavailable"})))
        self.assertFalse(is_fast_fail(Answer(503, {"Retry-After": "30"})))
        self.assertFalse(is_fast_fail(Answer(502, {"Proxy-Status": "hostguard; error=connection_refused"})))
        self.assertTrue(is_fast_fail(FastFail("x", endpoint="http://h:1", retry_after=3.0, status=503)))

    def test_a_status_line_is_believed_only_without_an_answer(self) -> None:
        line = "503 endpoint https://h:443 is not answering; not contacted (fast-fail)"
        self.assertTrue(is_fast_fail(OSError("Tunnel connection failed: " + line)))
        wrapped = RuntimeError("wrapper")
        wrapped.__cause__ = OSError("Tunnel connection failed: " + line)
        self.assertTrue(is_fast_fail(wrapped))
        # An upstream chooses its own reason phrase; its answer decides.
        forged = RuntimeError(line)
        forged.response = Answer(503, {})  # type: ignore[attr-defined]
        self.assertFalse(is_fast_fail(forged))
        self.assertFalse(is_fast_fail(OSError("Tunnel connection failed: 502 upstream failed (refused)")))
        self.assertFalse(is_fast_fail(TimeoutError("timed out")))
        self.assertFalse(is_fast_fail(None))
        self.assertFalse(is_fast_fail("503"))


class LibraryCase:
    """One library against the real proxy: two requests to a refused port
    are the daemon's 502s (not fast-fails), the third is the fast-fail, and
    an upstream's own 503 is not one."""

    get: Callable[[str], Any]

    def run_scheme(self, scheme: str) -> Any:
        t: unittest.TestCase = self  # type: ignore[assignment]
        url = "%s://127.0.0.1:%d/x" % (scheme, dead_port())
        for i in range(2):
            x = self.get(url)
            t.assertFalse(is_fast_fail(x), "refused request %d: %r" % (i + 1, x))
        ff = self.get(url)
        t.assertTrue(is_fast_fail(ff), "fast-fail not recognised in %r" % (ff,))
        own = self.get(UP_HTTP.url if scheme == "http" else UP_TLS.url)
        t.assertFalse(is_fast_fail(own), "the upstream's own 503: %r" % (own,))
        return ff

    def test_http(self) -> None:
        ff = self.run_scheme("http")
        raised = self.raise_for_status(ff)
        if raised is not None:
            self.assertTrue(is_fast_fail(raised), repr(raised))  # type: ignore[attr-defined]

    def test_connect(self) -> None:
        self.run_scheme("https")

    def raise_for_status(self, answer: Any) -> Any:
        return None


class UrllibTest(LibraryCase, unittest.TestCase):
    """urllib reads http_proxy and https_proxy by itself."""

    def get(self, url: str) -> Any:
        with proxy_env():
            opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=CERT.client_context()))

        def go() -> Any:
            with opener.open(url, timeout=10) as r:
                r.read()
                return r

        return catch(go)

    def test_shapes(self) -> None:
        ff = self.run_scheme("http")
        self.assertIsInstance(ff, urllib.error.HTTPError)
        ff = self.run_scheme("https")
        self.assertIsInstance(ff, urllib.error.URLError)
        self.assertNotIsInstance(ff, urllib.error.HTTPError)


class RequestsTest(LibraryCase, unittest.TestCase):
    def setUp(self) -> None:
        self.requests = third_party("requests")

    def get(self, url: str) -> Any:
        return catch(lambda: self.requests.get(url, proxies={"http": PROXY, "https": PROXY}, verify=CERT.cert, timeout=10))

    def raise_for_status(self, answer: Any) -> Any:
        return catch(answer.raise_for_status)

    def test_shapes(self) -> None:
        self.assertIsInstance(self.run_scheme("https"), self.requests.exceptions.ProxyError)


class HttpxTest(LibraryCase, unittest.TestCase):
    def setUp(self) -> None:
        self.httpx = third_party("httpx")

    def get(self, url: str) -> Any:
        # httpx 0.26 renamed proxies= to proxy=, and 0.28 removed the old one.
        key = "proxy" if "proxy" in inspect.signature(self.httpx.Client).parameters else "proxies"
        with self.httpx.Client(verify=CERT.cert, timeout=10, **{key: PROXY}) as c:
            return catch(lambda: c.get(url))

    def raise_for_status(self, answer: Any) -> Any:
        return catch(answer.raise_for_status)

    def test_shapes(self) -> None:
        self.assertIsInstance(self.run_scheme("https"), self.httpx.ProxyError)


class AiohttpTest(LibraryCase, unittest.TestCase):
    """aiohttp reads the proxy variables only with trust_env=True."""

    def setUp(self) -> None:
        self.aiohttp = third_party("aiohttp")

    def get(self, url: str) -> Any:
        async def go() -> Any:
            async with self.aiohttp.ClientSession(trust_env=True) as s:
                try:
                    async with s.get(url, ssl=CERT.client_context(), timeout=self.aiohttp.ClientTimeout(total=10)) as r:
                        await r.read()
                        self.last = r
                        return r
                except Exception as e:
                    return e

        with proxy_env():
            return asyncio.run(go())

    def raise_for_status(self, answer: Any) -> Any:
        return catch(answer.raise_for_status)

    def test_shapes(self) -> None:
        self.assertIsInstance(self.run_scheme("https"), self.aiohttp.ClientHttpProxyError)

    def test_without_trust_env_it_goes_direct(self) -> None:
        silent_port = dead_port()

        async def go() -> Any:
            async with self.aiohttp.ClientSession() as s:
                try:
                    async with s.get("http://127.0.0.1:%d/" % silent_port) as r:
                        return r
                except Exception as e:
                    return e

        with proxy_env():
            got = asyncio.run(go())
        # Refused by the port itself, not answered by the proxy.
        self.assertIsInstance(got, self.aiohttp.ClientConnectorError)


if __name__ == "__main__":
    unittest.main()
