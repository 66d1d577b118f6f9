"""The client against the real daemon, on loopback ports."""

from __future__ import annotations

import datetime as dt
import os
import socket
import threading
import time
import unittest
from unittest import mock

import hostguard
from hostguard import (
    BadRequest,
    BudgetExhausted,
    BudgetPaced,
    BudgetPaused,
    Client,
    DaemonUnreachable,
    FastFail,
    LeaseLost,
    NotFound,
    Unauthorized,
    UpstreamFailed,
)

from ._daemon import Daemon, dead_port
from ._targets import Upstream

TOKEN = "test-token-0123456789"


def setUpModule() -> None:
    global DAEMON
    DAEMON = Daemon("--budget-source", "tiny:10", "--budget-source", "big:1000", token=TOKEN)


def tearDownModule() -> None:
    DAEMON.stop()


def client() -> Client:
    return Client(DAEMON.api, token=TOKEN, timeout=10)


def refused(port: int) -> None:
    """A request of one's own to a dead port: raises ConnectionRefusedError."""
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


class GuardTest(unittest.TestCase):
    def test_acquire_twice_failed_then_fast_fail(self) -> None:
        hg = client()
        url = "http://down-%d.example/x?q=1" % time.monotonic_ns()
        for _ in range(2):
            t = hg.guard.acquire(url)
            self.assertFalse(t["trial"])
            hg.guard.report(t, "failed", "timeout")
        with self.assertRaises(FastFail) as cm:
            hg.guard.acquire(url)
        e = cm.exception
        self.assertEqual(e.status, 503)
        self.assertEqual(e.endpoint, url.split("/x")[0])
        self.assertIsNotNone(e.retry_after)
        self.assertGreater(e.retry_after, 0)
        open_eps = [ep["endpoint"] for ep in hg.guard.list("open")]
        self.assertIn(e.endpoint, open_eps)
        hg.guard.reset(url)
        hg.guard.report(hg.guard.acquire(url), "answered")
        self.assertNotIn(e.endpoint, [ep["endpoint"] for ep in hg.guard.list("open")])

    def test_extend_renews_the_lease_until_reported(self) -> None:
        hg = client()
        url = "http://extend-%d.example/x" % time.monotonic_ns()
        t = hg.guard.acquire(url)
        x = hg.guard.extend(t)
        self.assertEqual(x["ticket"], t["ticket"])
        self.assertEqual(x["endpoint"], url.split("/x")[0])
        self.assertEqual(x["lease_seconds"], t["lease_seconds"])
        self.assertIsInstance(x["expires_at"], str)
        self.assertEqual(hg.guard.extend(t["ticket"])["ticket"], t["ticket"])
        hg.guard.report(t, "answered")
        with self.assertRaises(NotFound) as cm:
            hg.guard.extend(t)
        self.assertEqual(cm.exception.field, "ticket")
        with self.assertRaises(BadRequest) as bad:
            hg.guard.extend("not-hex")
        self.assertEqual(bad.exception.field, "ticket")

    def test_guarded_counts_refusals_then_fails_fast_without_calling(self) -> None:
        hg = client()
        port = dead_port()
        url = "http://127.0.0.1:%d/feed" % port
        calls = []

        def request() -> None:
            calls.append(1)
            refused(port)

        for _ in range(2):
            with self.assertRaises(ConnectionRefusedError):
                hg.guarded(url, request)
        with self.assertRaises(FastFail) as cm:
            hg.guarded(url, request)
        self.assertEqual(len(calls), 2, "the third call must not reach fn")
        self.assertEqual(cm.exception.endpoint, "http://127.0.0.1:%d" % port)

    def test_guarded_passes_results_and_keeps_the_endpoint_closed(self) -> None:
        hg = client()
        url = "http://fine-%d.example/" % time.monotonic_ns()
        self.assertEqual(hg.guarded(url, lambda: 42), 42)

        def not_network() -> None:
            raise KeyError("a bug of the caller's, not the host's")

        for _ in range(3):
            with self.assertRaises(KeyError):
                hg.guarded(url, not_network)
        states = {ep["endpoint"]: ep["state"] for ep in hg.guard.list()}
        self.assertEqual(states[url.rstrip("/")], "closed")

    def test_bad_url_is_bad_request_naming_url(self) -> None:
        with self.assertRaises(BadRequest) as cm:
            client().guard.acquire("not a url")
        self.assertEqual(cm.exception.field, "url")
        self.assertEqual(cm.exception.status, 400)

    def test_unknown_ticket_is_not_found(self) -> None:
        with self.assertRaises(NotFound) as cm:
            client().guard.report("0" * 32, "answered")
        self.assertEqual(cm.exception.field, "ticket")

    def test_bad_outcome_is_bad_request(self) -> None:
        hg = client()
        t = hg.guard.acquire("http://outcome.example/")
        with self.assertRaises(BadRequest) as cm:
            hg.guard.report(t, "maybe")  # type: ignore[arg-type]
        self.assertEqual(cm.exception.field, "outcome")
        hg.guard.report(t, "inconclusive")


class FetchTest(unittest.TestCase):
    def test_refusals_then_fast_fail(self) -> None:
        hg = client()
        port = dead_port()
        url = "http://127.0.0.1:%d/x?a=1&b=2" % port
        for _ in range(2):
            with self.assertRaises(UpstreamFailed) as cm:
                hg.fetch(url)
            self.assertEqual(cm.exception.error_class, "refused")
            self.assertEqual(cm.exception.status, 502)
        start = time.monotonic()
        with self.assertRaises(FastFail) as ff:
            hg.fetch(url)
        self.assertLess(time.monotonic() - start, 1.0)
        self.assertEqual(ff.exception.endpoint, "http://127.0.0.1:%d" % port)

    def test_upstream_answers_pass_through_an_upstream_503_included(self) -> None:
        hg = client()
        up = Upstream(503, b'{"error":"busy"}', "application/json")
        try:
            for _ in range(3):
                r = hg.fetch(up.url + "/busy?x=1")
                self.assertEqual(r.status, 503)
                self.assertEqual(r.json(), {"error": "busy"})
        finally:
            up.close()
        ok = Upstream(200, b"hello")
        try:
            r = hg.fetch(ok.url + "/", exempt=True)
            self.assertEqual((r.status, r.text()), (200, "hello"))
        finally:
            ok.close()

    def test_unencoded_query_is_bad_request(self) -> None:
        hg = client()
        with self.assertRaises(BadRequest) as cm:
            hg._call("GET", "/v1/fetch?url=http://127.0.0.1:1/?a=1&b=2")
        self.assertEqual(cm.exception.field, "b")


class ItemsTest(unittest.TestCase):
    def test_every_operation(self) -> None:
        hg = client()
        p = "it-%d-" % time.monotonic_ns()
        res = hg.items.add([{"id": p + "a", "priority": 2, "payload": b"\x00data"}, p + "b", p + "c", p + "d"])
        self.assertEqual(res, {"added": 4, "existing": 0})
        leases = hg.items.claim(4, 60, worker="py")
        mine = {l["id"]: l for l in leases if l["id"].startswith(p)}
        self.assertEqual(len(mine), 4)
        self.assertEqual(hostguard.decode_payload(mine[p + "a"]), b"\x00data")
        self.assertEqual(hg.items.succeed(mine[p + "a"])["state"], "done")
        failed = hg.items.fail(mine[p + "b"], cls="not_found", note="404", host="Files.Example", source="tracker-a")
        self.assertEqual((failed["state"], failed["last_class"], failed["host"]), ("scheduled", "not_found", "files.example"))
        self.assertEqual([(s["source"], s.get("class")) for s in failed["sources"]], [("tracker-a", "not_found")])
        ext = hg.items.extend(p + "c", mine[p + "c"]["lease"], lease_seconds=300)
        self.assertEqual(ext["id"], p + "c")
        self.assertEqual(hg.items.release(mine[p + "d"])["state"], "pending")
        self.assertEqual(hg.items.observe(p + "b", source="dht-1")["state"], "scheduled")
        self.assertEqual([s["source"] for s in hg.items.get(p + "b")["sources"]], ["tracker-a", "dht-1"])
        many = hg.items.observe_many([p + "b", p + "zz"])
        self.assertTrue(many[1].get("unknown"))
        self.assertEqual(hg.items.get(p + "b")["observations"], 2)
        results = hg.items.settle([{"id": p + "c", "lease": mine[p + "c"]["lease"], "op": "succeed"},
                                   {"id": p + "a", "lease": "0" * 32, "op": "release"}])
        self.assertEqual([r["ok"] for r in results], [True, False])
        self.assertEqual(results[1]["error"], "lease_lost")
        self.assertGreaterEqual(hg.items.stats()["by_state"]["done"], 2)

    def test_lost_lease(self) -> None:
        hg = client()
        iid = "lost-%d" % time.monotonic_ns()
        hg.items.add([iid])
        (lease,) = [l for l in hg.items.claim(1000, 60) if l["id"] == iid]
        hg.items.release(lease)
        with self.assertRaises(LeaseLost) as cm:
            hg.items.succeed(lease)
        e = cm.exception
        self.assertEqual((e.status, e.field), (409, "lease"))
        with self.assertRaises(LeaseLost):
            hg.items.fail(lease, cls="timeout")

    def test_bad_request_names_the_field(self) -> None:
        hg = client()
        with self.assertRaises(BadRequest) as cm:
            hg.items.claim(0, 30)
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "n"))
        with self.assertRaises(BadRequest) as cm:
            hg.items.add([{"id": "ok"}, {"id": ""}])
        self.assertEqual(cm.exception.field, "items[1].id")

    def test_unknown_item_is_not_found(self) -> None:
        with self.assertRaises(NotFound):
            client().items.get("never-added-%d" % time.monotonic_ns())

    def test_list_pages(self) -> None:
        hg = client()
        p = "ls-%d-" % time.monotonic_ns()
        hg.items.add([p + str(i) for i in range(5)] + [{"id": p + "later", "not_before": "2099-01-01T00:00:00Z"}])
        ids = [it["id"] for it in hg.items.iter(page_size=2) if it["id"].startswith(p)]
        self.assertEqual(ids, sorted(p + s for s in ["0", "1", "2", "3", "4", "later"]))
        self.assertTrue(all("payload" not in it for it in hg.items.list(limit=10)["items"]))
        due = [it["id"] for it in hg.items.iter(state=["pending", "scheduled"], due_before="2098-01-01T00:00:00Z")
               if it["id"].startswith(p)]
        self.assertEqual(len(due), 5)
        page = hg.items.list(limit=1)
        self.assertEqual(len(page["items"]), 1)
        self.assertIn("next", page)
        with self.assertRaises(BadRequest) as cm:
            hg.items.list(state="sleeping")
        self.assertEqual(cm.exception.field, "state")

    def test_claim_waits_for_work(self) -> None:
        hg = client()
        # Drain what other tests left due, so the wait below is real.
        while hg.items.claim(1000, 600):
            pass
        start = time.monotonic()
        self.assertEqual(hg.items.claim(5, 30, wait_seconds=0.6), [])
        self.assertGreaterEqual(time.monotonic() - start, 0.5)
        iid = "woken-%d" % time.monotonic_ns()
        timer = threading.Timer(0.3, lambda: client().items.add([iid]))
        timer.start()
        try:
            leases = hg.items.claim(5, 30, wait_seconds=10)
        finally:
            timer.join()
        self.assertEqual([l["id"] for l in leases], [iid])


class BudgetTest(unittest.TestCase):
    def test_exhausted_allowance(self) -> None:
        hg = client()
        # tiny's daily limit of 10 leaves searches no allowance at all.
        with self.assertRaises(BudgetExhausted) as cm:
            hg.budget.admit("search", source="tiny")
        e = cm.exception
        self.assertEqual(e.status, 429)
        now = dt.datetime.now(dt.timezone.utc)
        midnight = dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time(), dt.timezone.utc)
        self.assertEqual(e.resets_at, midnight)
        self.assertGreater(e.retry_after, 0)

    def test_paced_source(self) -> None:
        hg = client()
        g = hg.budget.admit("head_poll", source="big")
        self.assertEqual(g["source"], "big")
        with self.assertRaises(BudgetPaced) as cm:
            hg.budget.admit("head_poll", source="big")
        self.assertGreaterEqual(cm.exception.retry_after, 1)

    def test_paused(self) -> None:
        hg = client()
        hg.budget.pause(True)
        try:
            with self.assertRaises(BudgetPaused):
                hg.budget.admit("validation")
        finally:
            hg.budget.pause(False)
        hg.budget.admit("validation")

    def test_paused_source(self) -> None:
        hg = client()
        self.assertEqual(hg.budget.pause_source("tiny"), {"name": "tiny", "paused": True})
        try:
            with self.assertRaises(BudgetPaused):
                hg.budget.admit("search", source="tiny")
            paused = {s["name"]: s["paused"] for s in hg.budget.report()["sources"]}
            self.assertEqual(paused, {"tiny": True, "big": False})
            hg.budget.admit("validation")
        finally:
            self.assertEqual(hg.budget.pause_source("tiny", False), {"name": "tiny", "paused": False})
        with self.assertRaises(NotFound) as cm:
            hg.budget.pause_source("nowhere")
        self.assertEqual(cm.exception.field, "name")

    def test_bytes_grant(self) -> None:
        hg = client()
        g = hg.budget.admit("bytes", cost=4096)
        self.assertTrue(g["id"])
        self.assertEqual(hg.budget.settle(g, 1024), {"id": g["id"], "actual": 1024})
        self.assertIn("total", hg.budget.report())

    def test_unknown_source_and_kind(self) -> None:
        hg = client()
        with self.assertRaises(NotFound) as cm:
            hg.budget.admit("search", source="nowhere")
        self.assertEqual(cm.exception.field, "source")
        with self.assertRaises(BadRequest) as cm2:
            hg.budget.admit("lunch")
        self.assertEqual(cm2.exception.field, "kind")


class OperatorItemsTest(unittest.TestCase):
    def test_due_now_and_forget(self) -> None:
        hg = client()
        later = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).isoformat()
        iid = "due-now-%d" % time.monotonic_ns()
        hg.items.add([{"id": iid, "not_before": later}])
        r = hg.items.due_now(iid)
        self.assertTrue(r["moved"])
        self.assertFalse(hg.items.due_now(iid)["moved"])
        hg.items.forget(iid)
        with self.assertRaises(NotFound):
            hg.items.get(iid)
        with self.assertRaises(NotFound):
            hg.items.forget(iid)


class HostsTest(unittest.TestCase):
    def test_touch_filter_get(self) -> None:
        hg = client()
        hg.hosts.touch("good.example", True)
        r = hg.hosts.touch("bad.example", False)
        self.assertFalse(r["healthy"])
        self.assertIn("counted", r)
        backoff = [h["name"] for h in hg.hosts.filter("backoff")]
        self.assertIn("bad.example", backoff)
        self.assertNotIn("good.example", backoff)
        self.assertTrue(hg.hosts.get("good.example")["healthy"])
        with self.assertRaises(NotFound):
            hg.hosts.get("never-touched-%d.example" % time.monotonic_ns())
        page = hg.hosts.list("all", limit=1)
        self.assertEqual(len(page["hosts"]), 1)
        self.assertIn("next", page)

    def test_reset(self) -> None:
        hg = client()
        hg.hosts.touch("good.example", True)
        hg.hosts.touch("reset-me.example", False)
        self.assertTrue(hg.hosts.reset("reset-me.example"))
        with self.assertRaises(NotFound):
            hg.hosts.get("reset-me.example")
        self.assertFalse(hg.hosts.reset("reset-me.example"))

    def test_bad_name(self) -> None:
        with self.assertRaises(BadRequest) as cm:
            client().hosts.touch("bad\x07name.example", True)
        self.assertEqual(cm.exception.field, "name")
        with self.assertRaises(BadRequest) as cm:
            client().hosts.list("sideways")
        self.assertEqual(cm.exception.field, "view")


class ConfigTest(unittest.TestCase):
    def test_environment_gives_address_and_token(self) -> None:
        host = DAEMON.api[len("http://"):]
        with mock.patch.dict(os.environ, {"HOSTGUARD_ADDR": host, "HOSTGUARD_TOKEN": TOKEN}):
            hg = Client()
        self.assertEqual(hg.addr, DAEMON.api)
        self.assertIn("items", hg.status())

    def test_wrong_token(self) -> None:
        with self.assertRaises(Unauthorized) as cm:
            Client(DAEMON.api, token="wrong").items.stats()
        self.assertEqual(cm.exception.status, 401)

    def test_health_needs_no_token(self) -> None:
        self.assertEqual(Client(DAEMON.api, token="").healthz(), {"status": "ok"})

    def test_unreachable_daemon(self) -> None:
        with self.assertRaises(DaemonUnreachable):
            Client("127.0.0.1:%d" % dead_port(), timeout=2).items.stats()

    def test_proxy_environment_is_ignored(self) -> None:
        dead = "http://127.0.0.1:%d" % dead_port()
        with mock.patch.dict(os.environ, {"http_proxy": dead, "HTTP_PROXY": dead, "no_proxy": ""}):
            self.assertIn("total", client().items.stats())


if __name__ == "__main__":
    unittest.main()
