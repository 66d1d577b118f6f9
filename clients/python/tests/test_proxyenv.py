"""proxy_env, which the side-by-side client tests share: one client's way
out must not take the proxy away from another still inside."""

from __future__ import annotations

import os
import threading
import unittest

from ._libs import proxy_env


class ProxyEnvTest(unittest.TestCase):
    def test_overlapping_users_keep_the_proxy_until_the_last_leaves(self) -> None:
        before = os.environ.get("http_proxy")
        proxy = "http://127.0.0.1:1"
        inside, go_on, left, seen = threading.Event(), threading.Event(), threading.Event(), []

        def first() -> None:
            with proxy_env(proxy):
                inside.set()
                go_on.wait(5)
            left.set()

        t = threading.Thread(target=first)
        t.start()
        inside.wait(5)
        with proxy_env(proxy):
            go_on.set()
            left.wait(5)  # the first user left while this one is inside
            seen.append(os.environ.get("http_proxy"))
        t.join(5)
        self.assertEqual(seen, [proxy], "the proxy after another user left")
        self.assertEqual(os.environ.get("http_proxy"), before, "the environment after the last user left")


if __name__ == "__main__":
    unittest.main()
