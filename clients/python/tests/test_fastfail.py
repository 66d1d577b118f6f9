"""is_fast_fail on what urllib, requests, httpx and aiohttp really hand
back from the real daemon's proxy, over http:// and over CONNECT."""

from __future__ import annotations

import asyncio
import urllib.error
import unittest
from typing import Any, Callable

from hostguard import FastFail, is_fast_fail

from ._daemon import Daemon, dead_port
from ._libs import Answer, aiohttp_get, catch, curl_get, httpx_get, proxy_env, requests_get, urllib_get
from ._targets import Cert, Upstream, third_party

FF_HEADER = 'hostguard; error=destination_unavailable; details="endpoint http://h:1 is not answering"'


def setUpModule() -> None:
    global DAEMON, CERT, UP_HTTP, UP_TLS, PROXY
    DAEMON = Daemon()
    PROXY = "http://" + DAEMON.proxy
    CERT = Cert()
    UP_HTTP = Upstream(503, b"busy", headers={"Retry-After": "30"})
    UP_TLS = Upstream(503, b"busy", headers={"Retry-After": "30"}, cert=CERT)


def tearDownModule() -> None:
    UP_HTTP.close()
    UP_TLS.close()
    CERT.close()
    DAEMON.stop()


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
        own = self.get((UP_HTTP.url if scheme == "http" else UP_TLS.url) + "/")
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
    def get(self, url: str) -> Any:
        return urllib_get(url, PROXY, 10, CERT.client_context())

    def test_shapes(self) -> None:
        ff = self.run_scheme("http")
        self.assertIsInstance(ff, urllib.error.HTTPError)
        ff = self.run_scheme("https")
        self.assertIsInstance(ff, urllib.error.URLError)
        self.assertNotIsInstance(ff, urllib.error.HTTPError)


class CurlTest(LibraryCase, unittest.TestCase):
    """What `curl -s -D -` prints, the headers of a refused CONNECT too."""

    def get(self, url: str) -> Any:
        return curl_get(url, PROXY, 10, CERT.cert)


class RequestsTest(LibraryCase, unittest.TestCase):
    def get(self, url: str) -> Any:
        return requests_get(url, PROXY, 10, CERT.cert)

    def raise_for_status(self, answer: Any) -> Any:
        return catch(answer.raise_for_status)

    def test_shapes(self) -> None:
        self.assertIsInstance(self.run_scheme("https"), third_party("requests").exceptions.ProxyError)


class HttpxTest(LibraryCase, unittest.TestCase):
    def get(self, url: str) -> Any:
        return httpx_get(url, PROXY, 10, CERT.cert)

    def raise_for_status(self, answer: Any) -> Any:
        return catch(answer.raise_for_status)

    def test_shapes(self) -> None:
        self.assertIsInstance(self.run_scheme("https"), third_party("httpx").ProxyError)


class AiohttpTest(LibraryCase, unittest.TestCase):
    def setUp(self) -> None:
        self.aiohttp = third_party("aiohttp")

    def get(self, url: str) -> Any:
        return aiohttp_get(url, PROXY, 10, CERT.client_context())

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

        with proxy_env(PROXY):
            got = asyncio.run(go())
        # Refused by the port itself, not answered by the proxy.
        self.assertIsInstance(got, self.aiohttp.ClientConnectorError)


if __name__ == "__main__":
    unittest.main()
