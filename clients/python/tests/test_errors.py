"""Error bodies and Proxy-Status headers into typed errors, without a daemon."""

from __future__ import annotations

import datetime as dt
import json
import unittest

from hostguard import (
    BadRequest,
    BudgetExhausted,
    BudgetPaced,
    FastFail,
    HostguardError,
    LeaseLost,
    PolicyRefused,
    UpstreamFailed,
    error_from_response,
    parse_proxy_status,
)
from hostguard._client import _daemon_made


def body(**kw: object) -> bytes:
    return json.dumps(kw).encode()


JSON = {"Content-Type": "application/json"}


class ProxyStatusTest(unittest.TestCase):
    def test_parse(self) -> None:
        self.assertEqual(parse_proxy_status('hostguard; error=destination_unavailable; details="open, 30 s; wait"'),
                         {"error": "destination_unavailable", "details": "open, 30 s; wait"})
        self.assertEqual(parse_proxy_status('cdn; error=http_response_timeout, "hostguard"; error=dns_error'),
                         {"error": "dns_error"})
        self.assertIsNone(parse_proxy_status("othercache; error=dns_error"))
        self.assertIsNone(parse_proxy_status(None))
        self.assertIsNone(parse_proxy_status(""))


class ErrorFromResponseTest(unittest.TestCase):
    def test_fast_fail_today(self) -> None:
        e = error_from_response(503, {"Retry-After": "30"},
                                body(error="server: endpoint x (fast-fail)", endpoint="https://a.example", retry_after_seconds=30))
        self.assertIsInstance(e, FastFail)
        assert isinstance(e, FastFail)
        self.assertEqual((e.endpoint, e.retry_after), ("https://a.example", 30.0))

    def test_fast_fail_with_marker_and_proxy_status(self) -> None:
        for status in (503, 502):
            e = error_from_response(status, {"Proxy-Status": "hostguard; error=destination_unavailable", "Retry-After": "7"},
                                    body(error="...", endpoint="https://a.example:8443", fast_fail=True))
            self.assertIsInstance(e, FastFail)
            assert isinstance(e, FastFail)
            self.assertEqual((e.endpoint, e.retry_after), ("https://a.example:8443", 7.0))
        # Proxy-Status alone (a CONNECT answer whose body a client lost).
        e = error_from_response(503, {"Proxy-Status": "hostguard; error=destination_unavailable", "Retry-After": "5"}, b"")
        self.assertIsInstance(e, FastFail)

    def test_budget_refusals(self) -> None:
        e = error_from_response(429, {"Retry-After": "3"}, body(error="paced", retry_after_seconds=3), route="budget")
        self.assertIsInstance(e, BudgetPaced)
        e = error_from_response(429, {}, body(error="x", reason="exhausted", resets_at="2026-12-02T00:00:00Z"), route="budget")
        self.assertIsInstance(e, BudgetExhausted)
        assert isinstance(e, BudgetExhausted)
        self.assertEqual(e.resets_at.isoformat(), "2026-12-02T00:00:00+00:00")
        # No reason: a Retry-After that happens to end at midnight is not
        # taken for an exhausted day.
        now = dt.datetime.now(dt.timezone.utc)
        midnight = dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time(), dt.timezone.utc)
        secs = str(int((midnight - now).total_seconds()))
        e = error_from_response(429, {"Retry-After": secs}, body(error="x"), route="budget")
        self.assertIsInstance(e, BudgetPaced)
        e = error_from_response(429, {}, body(error="x", reason="paced", retry_after_seconds=2), route="budget")
        self.assertIsInstance(e, BudgetPaced)

    def test_lease_and_field(self) -> None:
        self.assertIsInstance(error_from_response(409, {}, body(error="lost", field="lease"), route="item"), LeaseLost)
        e = error_from_response(400, {}, body(error="bad", field="items[3].id"))
        self.assertIsInstance(e, BadRequest)
        self.assertEqual(e.field, "items[3].id")

    def test_upstream_and_policy(self) -> None:
        e = error_from_response(504, {"Proxy-Status": "hostguard; error=http_response_timeout"}, body(error="x", **{"class": "timeout"}))
        self.assertIsInstance(e, UpstreamFailed)
        assert isinstance(e, UpstreamFailed)
        self.assertEqual((e.error_class, e.proxy_error), ("timeout", "http_response_timeout"))
        self.assertIsInstance(error_from_response(403, {}, body(error="x", **{"class": "policy"})), PolicyRefused)

    def test_not_json(self) -> None:
        e = error_from_response(500, {}, b"<html>")
        self.assertIs(type(e), HostguardError)
        self.assertEqual(e.status, 500)


class DaemonMadeTest(unittest.TestCase):
    def test_upstream_answers_are_not_the_daemons(self) -> None:
        self.assertFalse(_daemon_made(503, JSON, body(error="busy")))
        self.assertFalse(_daemon_made(503, {"Content-Type": "text/html"}, b"<h1>503</h1>"))
        self.assertFalse(_daemon_made(502, {"Proxy-Status": "nginx; error=connection_refused"}, b""))
        self.assertFalse(_daemon_made(404, JSON, body(error="server: not here")))

    def test_daemon_answers(self) -> None:
        self.assertTrue(_daemon_made(503, {"Proxy-Status": "hostguard; error=destination_unavailable"}, b""))
        self.assertTrue(_daemon_made(503, JSON, body(error="x", endpoint="http://a", retry_after_seconds=30)))
        self.assertTrue(_daemon_made(502, JSON, body(error="x", **{"class": "refused"})))
        self.assertTrue(_daemon_made(400, JSON, body(error="server: url is missing", field="url")))


if __name__ == "__main__":
    unittest.main()
