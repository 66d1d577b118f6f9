"""The clients hostguard is for, each with a 2 s timeout, against a host
that answers in 300 ms, refuses two requests (the guard opens) and comes
back, through a daemon with its default settings but a 1 s open period
(the default 30 s would make the test wait 30 s). After the period each
client sends four requests at once: one is the half-open trial, and the
other three wait for its answer (guard.trial_wait) and go out, instead of
being refused while it was out. The host hears the trial alone first."""

from __future__ import annotations

import threading
import unittest
from typing import Any, Callable, Dict, List, Tuple

from hostguard import Client, is_fast_fail

from ._daemon import Daemon
from ._libs import available_clients, side_by_side
from ._targets import ComebackHost, wait_for

TIMEOUT = 2.0
FAN_OUT = 4



def status(x: Any) -> Any:
    """The status of a response, or the error itself."""
    for attr in ("status_code", "status"):
        if isinstance(getattr(x, attr, None), int):
            return getattr(x, attr)
    code = getattr(x, "code", None)  # urllib's HTTPError
    return code if isinstance(code, int) else x


class ComebackTest(unittest.TestCase):
    def test_a_fan_out_to_a_host_that_came_back_waits_for_the_trial(self) -> None:
        available = available_clients()
        daemon = Daemon("--guard-open-for", "1s", tuned=False)
        self.addCleanup(daemon.stop)
        proxy = "http://" + daemon.proxy
        hg = Client(daemon.api, timeout=10)

        def state(endpoint: str) -> str:
            for e in hg.guard.list():
                if e["endpoint"] == endpoint:
                    return str(e["state"])
            return ""

        results: Dict[str, Tuple[List[Any], List[Any], List[str]]] = {}

        def run(name: str, get: Callable[[str, str, float], Any]) -> None:
            host = ComebackHost(0.3)
            try:
                url = "http://127.0.0.1:%d/catalogue" % host.port
                before = [get(url, proxy, TIMEOUT)]
                host.down()
                before += [get(url, proxy, TIMEOUT) for _ in range(2)]
                host.up()
                endpoint = "http://127.0.0.1:%d" % host.port
                wait_for(lambda: state(endpoint) == "half-open", "%s: the open period to end" % name)
                host.forget()
                got: List[Any] = [None] * FAN_OUT

                def one(i: int) -> None:
                    got[i] = get(url, proxy, TIMEOUT)

                fan = [threading.Thread(target=one, args=(i,)) for i in range(FAN_OUT)]
                for t in fan:
                    t.start()
                for t in fan:
                    t.join(30)
                results[name] = (before, got, host.events())
            finally:
                host.close()

        side_by_side(run, list(available.items()))
        for name, (before, got, events) in sorted(results.items()):
            with self.subTest(client=name):
                self.assertEqual([status(x) for x in before], [200, 502, 502],
                                 "%s: answered, then refused twice; got %r" % (name, before))
                self.assertEqual([status(x) for x in got], [200] * FAN_OUT,
                                 "%s: the fan-out after the period; got %r (fast-fails: %r)"
                                 % (name, got, [is_fast_fail(x) for x in got]))
                self.assertEqual(events[:2], ["in", "out"], "%s: the host heard %r; want the trial alone first" % (name, events))
        self.assertEqual(len(results), len(available))


if __name__ == "__main__":
    unittest.main()
