"""Telling the daemon's fast-fail apart in what an HTTP library hands back.

A program pointed at hostguard's forward proxy meets a fast-fail (the
endpoint is open, so the daemon answered at once without contacting the
host) in a different shape in each library:

- an answer: ``503`` with ``Proxy-Status: hostguard;
  error=destination_unavailable`` (urllib's ``HTTPError``, a requests or
  httpx ``Response`` or its ``raise_for_status`` error, an aiohttp
  ``ClientResponse``, ``ClientResponseError`` or ``ClientHttpProxyError``,
  an ``http.client`` response);
- for an ``https://`` URL, where the daemon refused the CONNECT, an error
  that keeps only the status line: urllib's ``URLError`` and requests'
  ``ProxyError`` hold ``OSError("Tunnel connection failed: 503 endpoint
  https://host:443 is not answering; not contacted (fast-fail)")`` on their
  cause chain, httpx's ``ProxyError`` says the same without the prefix.

``is_fast_fail`` takes any of these, by duck typing, so that this package
imports none of those libraries. An answer found on the chain decides by
its header alone, since an upstream chooses its own status line but never
the daemon's ``Proxy-Status`` member; the status-line sentence is believed
only where no answer exists, on a refused CONNECT, whose status line only
the proxy writes.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional

from .errors import FastFail, parse_proxy_status

__all__ = ["is_fast_fail"]

# The reason phrase of the daemon's CONNECT refusal for an open endpoint,
# as http.client ("Tunnel connection failed: " + it) and httpx (it alone)
# put it into their errors. The endpoint is an origin: no spaces.
_TUNNEL_REFUSAL = re.compile(r"(?:^|: )503 endpoint \S+ is not answering; not contacted \(fast-fail\)$")

# How far along causes, contexts and wrapped errors to look: the deepest
# real chain (requests: ProxyError, MaxRetryError, urllib3's ProxyError,
# OSError) is four.
_MAX_LINKS = 16


def is_fast_fail(error_or_response: Any) -> bool:
    """Whether this error or answer is hostguard's fast-fail.

    Accepts a response or an exception of urllib, http.client, requests,
    httpx or aiohttp (or this package's own ``FastFail``). False for
    anything else: an upstream's own 503, the daemon's other refusals (a
    connection refused upstream, a policy refusal), a timeout, ``None``.
    """
    links = _chain(error_or_response)
    for x in links:
        if isinstance(x, FastFail):
            return True
        verdict = _answer_verdict(x)
        if verdict is not None:
            return verdict
    for x in links:
        if isinstance(x, BaseException) and _TUNNEL_REFUSAL.search(str(x)):
            return True
    return False


def _chain(first: Any) -> List[Any]:
    """first and what it wraps: an error's response, reason, cause, context
    and the exceptions among its args, breadth first, each once."""
    out: List[Any] = []
    seen = set()
    queue = [first]
    while queue and len(out) < _MAX_LINKS:
        x = queue.pop(0)
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        out.append(x)
        if not isinstance(x, BaseException):
            continue
        for attr in ("response", "reason"):
            try:
                v = getattr(x, attr, None)
            except Exception:  # a property that raises (httpx's .request)
                v = None
            if v is not None and not isinstance(v, (str, bytes, int, float)):
                queue.append(v)
        queue.extend([x.__cause__, x.__context__])
        queue.extend(a for a in x.args if isinstance(a, BaseException))
    return out


def _answer_verdict(x: Any) -> Optional[bool]:
    """True or False for an HTTP answer (a status and headers), None when x
    is not one."""
    status = _status(x)
    headers = getattr(x, "headers", None)
    if status is None or headers is None or not hasattr(headers, "get"):
        return None
    if status != 503:
        return False
    for value in _header_values(headers, "Proxy-Status"):
        ps = parse_proxy_status(value)
        if ps is not None and ps.get("error") == "destination_unavailable":
            return True
    return False


def _status(x: Any) -> Optional[int]:
    # requests and httpx say status_code; aiohttp, http.client and urllib's
    # responses say status; urllib's HTTPError says code (and status).
    for attr in ("status_code", "status", "code"):
        try:
            v = getattr(x, attr, None)
        except Exception:
            continue
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def _header_values(headers: Any, name: str) -> List[str]:
    """Every value of a header, whatever the mapping: email.message (urllib,
    http.client), case-insensitive dicts (requests, httpx, aiohttp) or a
    plain dict with any case."""
    for method, default in (("get_all", None), ("getall", [])):
        get_all = getattr(headers, method, None)
        if callable(get_all):
            try:
                got = get_all(name, default)
            except Exception:
                got = None
            if got:
                return [str(v) for v in got]
    for key in (name, name.lower()):
        v = headers.get(key)
        if v is not None:
            return [str(v)]
    if isinstance(headers, dict):
        return [str(v) for k, v in headers.items() if isinstance(k, str) and k.lower() == name.lower()]
    return []
