"""The clients hostguard is for, each with a 2 s timeout, against a host
that accepts connections and never answers, through a daemon started with
its default settings (as the README starts it, plus --allow-private for a
loopback host): four requests each, over http:// and https://. The guard
must trip on the give-ups, so that the later requests fail fast without
reaching the host, and is_fast_fail must say so."""

from __future__ import annotations

import unittest
from typing import Any, Callable, Dict, List, Tuple

from hostguard import Client, is_fast_fail

from ._daemon import Daemon
from ._libs import available_clients, side_by_side
from ._targets import SilentHost, wait_for

TIMEOUT = 2.0
REQUESTS = 4



class SilentHostTest(unittest.TestCase):
    def test_short_timeouts_trip_the_guard_under_the_defaults(self) -> None:
        available = available_clients()
        daemon = Daemon(tuned=False)
        self.addCleanup(daemon.stop)
        proxy = "http://" + daemon.proxy
        hg = Client(daemon.api, timeout=10)

        def settled(endpoint: str) -> bool:
            return all(e.get("tickets_out", 0) == 0 for e in hg.guard.list() if e["endpoint"] == endpoint)

        results: Dict[Tuple[str, str], Tuple[List[Any], int]] = {}

        def run(name: str, get: Callable[[str, str, float], Any], scheme: str) -> None:
            host = SilentHost()
            try:
                endpoint = "%s://127.0.0.1:%d" % (scheme, host.port)
                got = []
                for _ in range(REQUESTS):
                    got.append(get(endpoint + "/live/1.ts", proxy, TIMEOUT))
                    # The daemon learns of a give-up when the client's
                    # connection closes; the next request must find it
                    # counted.
                    wait_for(lambda: settled(endpoint), "%s %s: the daemon to settle the request" % (name, scheme))
                results[(name, scheme)] = (got, host.accepted)
            finally:
                host.close()

        # Each client and scheme has a silent host of its own, so they run
        # side by side: four give-ups would otherwise cost 8 s each.
        side_by_side(run, [(n, g, s) for n, g in available.items() for s in ("http", "https")])
        for (name, scheme), (got, accepted) in sorted(results.items()):
            with self.subTest(client=name, scheme=scheme):
                verdicts = [is_fast_fail(x) for x in got]
                self.assertEqual(verdicts, [False, False, True, True],
                                 "%s %s: fast-fails per request; got %r" % (name, scheme, got))
                self.assertEqual(accepted, 2, "%s %s: connections the silent host accepted" % (name, scheme))
        self.assertEqual(len(results), 2 * len(available))


if __name__ == "__main__":
    unittest.main()
