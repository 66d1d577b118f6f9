"""One request through the proxy with each client, pointed at it the way
the README says; each returns the answer or the exception, which is what
the tests look at."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import shutil
import ssl
import subprocess
import threading
import unittest
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from ._targets import third_party


_PROXY_VARS = ("no_proxy", "http_proxy", "https_proxy", "all_proxy")
_env_lock = threading.Lock()
_env_users = 0
_env_saved: Dict[str, str] = {}


@contextlib.contextmanager
def proxy_env(proxy: str) -> Iterator[None]:
    """http_proxy and https_proxy as the README exports them, without
    no_proxy: the targets here are on loopback too. Clients running side by
    side use it at once, so the first one in sets the environment and the
    last one out puts it back: with a save and restore each, one client's
    restore would take the proxy away from another still reading it (and
    send its request around the daemon)."""
    global _env_users, _env_saved
    with _env_lock:
        if _env_users == 0:
            _env_saved = dict(os.environ)
            for k in [k for k in os.environ if k.lower() in _PROXY_VARS]:
                del os.environ[k]
            os.environ.update(http_proxy=proxy, https_proxy=proxy)
        elif os.environ.get("http_proxy") != proxy:
            raise AssertionError("proxy_env: %s asked for while %s is set" % (proxy, os.environ.get("http_proxy")))
        _env_users += 1
    try:
        yield
    finally:
        with _env_lock:
            _env_users -= 1
            if _env_users == 0:
                os.environ.clear()
                os.environ.update(_env_saved)


def catch(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as e:  # the error is what is under test
        return e


class Answer:
    """A response-like object: a status and headers."""

    def __init__(self, status: int, headers: Dict[str, str]) -> None:
        self.status_code = status
        self.headers = headers


def urllib_get(url: str, proxy: str, timeout: float, ctx: Optional[ssl.SSLContext] = None) -> Any:
    """urllib reads http_proxy and https_proxy by itself."""
    with proxy_env(proxy):
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))

    def go() -> Any:
        with opener.open(url, timeout=timeout) as r:
            r.read()
            return r

    return catch(go)


def requests_get(url: str, proxy: str, timeout: float, cafile: Optional[str] = None) -> Any:
    requests = third_party("requests")
    return catch(lambda: requests.get(url, proxies={"http": proxy, "https": proxy}, verify=cafile or True, timeout=timeout))


def httpx_get(url: str, proxy: str, timeout: float, cafile: Optional[str] = None) -> Any:
    httpx = third_party("httpx")
    # httpx 0.26 renamed proxies= to proxy=, and 0.28 removed the old one.
    key = "proxy" if "proxy" in inspect.signature(httpx.Client).parameters else "proxies"
    with httpx.Client(verify=cafile or True, timeout=timeout, **{key: proxy}) as c:
        return catch(lambda: c.get(url))


def aiohttp_get(url: str, proxy: str, timeout: float, ctx: Optional[ssl.SSLContext] = None) -> Any:
    """aiohttp reads the proxy variables only with trust_env=True."""
    aiohttp = third_party("aiohttp")

    async def go() -> Any:
        async with aiohttp.ClientSession(trust_env=True) as s:
            try:
                async with s.get(url, ssl=ctx if ctx is not None else True, timeout=aiohttp.ClientTimeout(total=timeout)) as r:
                    await r.read()
                    return r
            except Exception as e:
                return e

    with proxy_env(proxy):
        return asyncio.run(go())


def curl_get(url: str, proxy: str, timeout: float, cafile: Optional[str] = None) -> Any:
    """curl -D - shows the answer's headers, a refused CONNECT's too; the
    result is an Answer of the last status line and its headers, or a
    TimeoutError for exit 28."""
    if not shutil.which("curl"):
        if os.environ.get("CI") == "true":
            raise AssertionError("curl is not installed")
        raise unittest.SkipTest("curl is not installed")
    argv = ["curl", "-s", "-m", str(timeout), "-D", "-", "-o", os.devnull]
    if cafile:
        argv += ["--cacert", cafile]
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "https_proxy", "all_proxy")}
    env.update(http_proxy=proxy, https_proxy=proxy)
    out = subprocess.run(argv + [url], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=timeout + 10)
    if out.returncode == 28:
        return TimeoutError("curl gave up after %ss" % timeout)
    status, headers = 0, {}  # type: int, Dict[str, str]
    for line in out.stdout.decode("latin-1").splitlines():
        if line.startswith("HTTP/"):
            status, headers = int(line.split()[1]), {}
        elif ":" in line:
            k, _, v = line.partition(":")
            headers[k.strip()] = v.strip()
    if status == 0:
        return OSError("curl exited %d without an answer" % out.returncode)
    return Answer(status, headers)


# The clients the proxy tests drive, each as get(url, proxy, timeout).
CLIENTS: Dict[str, Callable[[str, str, float], Any]] = {
    "curl": curl_get,
    "urllib": urllib_get,
    "requests": requests_get,
    "httpx": httpx_get,
    "aiohttp": aiohttp_get,
}


def available_clients() -> Dict[str, Callable[[str, str, float], Any]]:
    """CLIENTS without the third-party libraries this Python lacks (which
    fail instead under CI=true; see third_party)."""
    available = {}
    for name, get in CLIENTS.items():
        if name in ("requests", "httpx", "aiohttp"):
            try:
                third_party(name)
            except unittest.SkipTest:
                continue
        available[name] = get
    return available


def side_by_side(fn: Callable[..., None], calls: List[Tuple[Any, ...]], timeout: float = 120) -> None:
    """Runs fn(*args) for every args in calls at once, each on a thread of
    its own, and raises in the calling thread the first exception any of
    them raised."""
    errors: List[BaseException] = []

    def one(args: Tuple[Any, ...]) -> None:
        try:
            fn(*args)
        except BaseException as e:  # reported from the calling thread
            errors.append(e)

    threads = [threading.Thread(target=one, args=(a,)) for a in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    if errors:
        raise errors[0]
