from __future__ import annotations

import base64
import errno
import http.client
import json
import os
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    cast,
)

from .errors import (
    DaemonUnreachable,
    HostguardError,
    NotFound,
    BadRequest,
    error_from_response,
    parse_proxy_status,
)
from .types import (
    AddResult,
    Endpoint,
    Extension,
    Grant,
    GrantSettlement,
    Host,
    HostPage,
    Item,
    ItemPage,
    Lease,
    NewItem,
    ObserveResult,
    Outcome,
    QueueStats,
    ReportResult,
    SettleOutcome,
    SettleResult,
    Ticket,
    TicketExtension,
    TouchResult,
)

DEFAULT_ADDR = "http://127.0.0.1:7411"
DEFAULT_TIMEOUT = 30.0

T = TypeVar("T")
LeaseLike = Union[str, Mapping[str, Any]]


def _normalize_addr(addr: str) -> str:
    raw = addr.strip()
    if "://" not in raw:
        raw = "http://" + raw
    u = urllib.parse.urlsplit(raw)
    if u.scheme not in ("http", "https") or not u.netloc:
        raise ValueError("hostguard: address %r is not http(s)://host:port" % addr)
    return "%s://%s%s" % (u.scheme, u.netloc, u.path.rstrip("/"))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # The fetch route returns an upstream's redirect as it is; following it
    # here would leave the guard.
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[override]
        return None


class FetchResponse:
    """An upstream's answer through the fetch route: status, headers, body."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers: Dict[str, str] = {k.lower(): v for k, v in headers.items()}
        self.body = body

    def text(self, encoding: str = "utf-8") -> str:
        return self.body.decode(encoding, errors="replace")

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        return "FetchResponse(status=%d, %d bytes)" % (self.status, len(self.body))


class Client:
    """A client of one hostguard daemon.

    ``addr`` defaults to ``HOSTGUARD_ADDR`` (a URL, or host:port), else
    ``http://127.0.0.1:7411``; ``token`` to ``HOSTGUARD_TOKEN``. ``timeout``
    bounds every call but a blocking claim, whose wait is added to it.

    The client never goes through ``HTTP_PROXY``: the daemon is usually
    that proxy, and local calls to it must not loop back into it.

    The capabilities are grouped: ``client.guard``, ``client.hosts``,
    ``client.items``, ``client.budget``; ``client.fetch`` and
    ``client.guarded`` are at the top. Every failure raises a subclass of
    :class:`hostguard.HostguardError`.
    """

    def __init__(self, addr: Optional[str] = None, token: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.addr = _normalize_addr(addr or os.environ.get("HOSTGUARD_ADDR") or DEFAULT_ADDR)
        self.token = token if token is not None else os.environ.get("HOSTGUARD_TOKEN", "")
        self.timeout = timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
        self.guard = GuardAPI(self)
        self.hosts = HostsAPI(self)
        self.items = ItemsAPI(self)
        self.budget = BudgetAPI(self)

    # -- transport -----------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, str]] = None,
        data: Optional[bytes] = None,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> Tuple[int, Dict[str, str], bytes]:
        url = self.addr + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        req = urllib.request.Request(url, data=data, method=method)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            resp = self._opener.open(req, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as e:
            with e:
                return e.code, dict(e.headers.items()), e.read()
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise DaemonUnreachable("hostguard: the daemon at %s did not answer: %s" % (self.addr, reason)) from e
        with resp:
            try:
                return resp.status, dict(resp.headers.items()), resp.read()
            except (OSError, http.client.HTTPException) as e:
                raise DaemonUnreachable("hostguard: the daemon's answer was cut short: %s" % e) from e

    def _call(
        self,
        method: str,
        path: str,
        body: Optional[Mapping[str, Any]] = None,
        *,
        query: Optional[Mapping[str, str]] = None,
        route: str = "",
        timeout: Optional[float] = None,
    ) -> Any:
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        status, hdrs, raw = self._send(method, path, query=query, data=data, headers=headers, timeout=timeout)
        if status >= 400:
            raise error_from_response(status, hdrs, raw, route=route)
        if status == 204 or not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise HostguardError("hostguard: the daemon's answer is not JSON", status=status, headers=hdrs) from e

    # -- top level -----------------------------------------------------

    def healthz(self) -> Dict[str, Any]:
        return cast(Dict[str, Any], self._call("GET", "/healthz"))

    def status(self) -> Dict[str, Any]:
        """The status page's figures (``GET /v1/status``)."""
        return cast(Dict[str, Any], self._call("GET", "/v1/status"))

    def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        body: Optional[bytes] = None,
        headers: Optional[Mapping[str, str]] = None,
        exempt: bool = False,
        upstream_timeout: Optional[float] = None,
        timeout: Optional[float] = None,
    ) -> FetchResponse:
        """Performs one request through the daemon's guard (``/v1/fetch``).

        Any upstream answer is returned, a 5xx included. When there is none
        the daemon's own answer raises: :class:`FastFail` (the endpoint is
        open; nothing was sent), :class:`PolicyRefused`, or
        :class:`UpstreamFailed` with the failure class. ``upstream_timeout``
        is the daemon's header timeout for this request (the ``timeout``
        hint); ``timeout`` bounds this client's wait.
        """
        if method not in ("GET", "POST"):
            raise ValueError("hostguard: fetch sends GET or POST, not %r" % method)
        query = {"url": url}
        if exempt:
            query["exempt"] = "1"
        if upstream_timeout is not None:
            query["timeout"] = _seconds(upstream_timeout)
        wait = timeout or max(self.timeout, (upstream_timeout or 0) + 5)
        status, hdrs, raw = self._send(method, "/v1/fetch", query=query, data=body if method == "POST" else None,
                                       headers=headers, timeout=wait)
        if _daemon_made(status, hdrs, raw):
            raise error_from_response(status, hdrs, raw, route="fetch")
        return FetchResponse(status, hdrs, raw)

    def guarded(
        self,
        url: str,
        fn: Callable[[], T],
        *,
        exempt: bool = False,
        classify: Optional[Callable[[BaseException], Optional[str]]] = None,
    ) -> T:
        """Runs ``fn`` (your own request to ``url``) under a guard ticket.

        It acquires a ticket first (raising :class:`FastFail` without calling
        ``fn`` when the endpoint is open), keeps the ticket's lease alive
        while ``fn`` runs, and reports how it went: ``answered`` when ``fn``
        returns or raises an HTTP error (any HTTP answer means the host is
        there), ``failed`` with the class of a network error (timeouts,
        refusals, DNS failures count against the endpoint), ``inconclusive``
        for anything else. ``classify`` may override the class of an
        exception: return a failure class, ``"answered"``, or None for
        inconclusive. ``fn``'s result or exception is passed on.
        """
        return self.guard.run(url, fn, exempt=exempt, classify=classify)


def _seconds(v: float) -> str:
    return ("%.3f" % v).rstrip("0").rstrip(".")


def _daemon_made(status: int, headers: Mapping[str, str], raw: bytes) -> bool:
    """Tells the daemon's own error answers from an upstream's answers."""
    if status < 400:
        return False
    hdrs = {k.lower(): v for k, v in headers.items()}
    ps = parse_proxy_status(hdrs.get("proxy-status"))
    if ps is not None and "error" in ps:
        return True
    # Daemons that predate Proxy-Status: their error bodies are JSON
    # objects of a known shape, with an "error" text and, on a fast-fail,
    # the endpoint and seconds to wait, on a failure the class.
    if "json" not in hdrs.get("content-type", ""):
        return False
    try:
        body = json.loads(raw)
    except ValueError:
        return False
    if not isinstance(body, dict) or not isinstance(body.get("error"), str):
        return False
    if body.get("fast_fail") is True:
        return True
    if status == 503:
        return "endpoint" in body and "retry_after_seconds" in body
    if status in (403, 502, 504):
        return isinstance(body.get("class"), str)
    return status in (400, 401, 405, 413) and body["error"].startswith("server: ")


# -- exceptions into failure classes ------------------------------------

_ERRNO_CLASS = {
    errno.ECONNREFUSED: "refused",
    errno.EHOSTUNREACH: "host_unreachable",
    errno.ENETUNREACH: "network_unreachable",
    errno.ECONNABORTED: "aborted",
    errno.ECONNRESET: "reset",
    errno.ETIMEDOUT: "timeout",
    errno.EPIPE: "reset",
}


def classify_exception(exc: BaseException) -> Optional[str]:
    """The failure class of an exception raised by an HTTP request.

    Returns ``"answered"`` for an HTTP error answer (``urllib.error.HTTPError``
    or any exception carrying an integer ``status_code``/``code`` and a
    response), a class such as ``timeout`` or ``refused`` for network
    errors (found anywhere on the exception's cause chain, so requests',
    httpx's and aiohttp's wrappers work too), and None when it is not a
    network error at all.
    """
    seen = set()
    stack: List[BaseException] = [exc]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, urllib.error.HTTPError):
            return "answered"
        resp = getattr(e, "response", None)
        if resp is not None and isinstance(getattr(resp, "status_code", getattr(resp, "status", None)), int):
            return "answered"
        if isinstance(e, (socket.timeout, TimeoutError)):
            return "timeout"
        if isinstance(e, socket.gaierror):
            if e.errno in (socket.EAI_AGAIN,):
                return "dns_temporary"
            return "dns_not_found"
        if isinstance(e, ssl.SSLError):
            return "tls"
        if isinstance(e, ConnectionRefusedError):
            return "refused"
        if isinstance(e, ConnectionResetError):
            return "reset"
        if isinstance(e, ConnectionAbortedError):
            return "aborted"
        if isinstance(e, OSError) and e.errno in _ERRNO_CLASS:
            return _ERRNO_CLASS[e.errno]
        name = type(e).__name__.lower()
        if "timeout" in name:
            return "timeout"
        for nxt in (e.__cause__, e.__context__, getattr(e, "reason", None)):
            if isinstance(nxt, BaseException):
                stack.append(nxt)
        for a in getattr(e, "args", ()):
            if isinstance(a, BaseException):
                stack.append(a)
    return None


class GuardAPI:
    """The daemon's connectivity guard: ask before each request, report after."""

    def __init__(self, c: Client) -> None:
        self._c = c

    def acquire(self, url: str, *, exempt: bool = False) -> Ticket:
        """Takes a ticket for ``url``'s endpoint; :class:`FastFail` when it is open."""
        body: Dict[str, Any] = {"url": url}
        if exempt:
            body["exempt"] = True
        return cast(Ticket, self._c._call("POST", "/v1/guard/acquire", body, route="acquire"))

    def report(self, ticket: Union[str, Mapping[str, Any]], outcome: Outcome, error_class: Optional[str] = None) -> ReportResult:
        """Says how the ticket's request went: answered, failed (with a class) or inconclusive."""
        body: Dict[str, Any] = {"ticket": _ticket_id(ticket), "outcome": outcome}
        if error_class:
            body["error_class"] = error_class
        return cast(ReportResult, self._c._call("POST", "/v1/guard/report", body))

    def extend(self, ticket: Union[str, Mapping[str, Any]]) -> TicketExtension:
        """Renews a ticket's lease, by the daemon's lease length, while its request still runs."""
        path = "/v1/guard/tickets/%s/extend" % _seg(_ticket_id(ticket))
        return cast(TicketExtension, self._c._call("POST", path))

    def reset(self, url: str) -> None:
        """Forgets the failures of ``url``'s endpoint."""
        self._c._call("POST", "/v1/guard/reset", {"url": url})

    def list(self, state: Optional[str] = None) -> List[Endpoint]:
        """Endpoints the guard knows, optionally only those in ``state``."""
        q = {"state": state} if state else None
        return cast(List[Endpoint], self._c._call("GET", "/v1/guard", query=q)["endpoints"])

    def run(
        self,
        url: str,
        fn: Callable[[], T],
        *,
        exempt: bool = False,
        classify: Optional[Callable[[BaseException], Optional[str]]] = None,
    ) -> T:
        """See :meth:`Client.guarded`."""
        t = self.acquire(url, exempt=exempt)
        keeper = _Keeper(self, t)
        try:
            result = fn()
        except BaseException as e:
            keeper.stop()
            cls = (classify or classify_exception)(e) if isinstance(e, Exception) else None
            self._settle(t, cls, e)
            raise
        keeper.stop()
        self._settle(t, "answered", None)
        return result

    def _settle(self, t: Ticket, cls: Optional[str], exc: Optional[BaseException]) -> None:
        try:
            if cls is None:
                self.report(t, "inconclusive")
            elif cls == "answered":
                self.report(t, "answered")
            else:
                self.report(t, "failed", cls)
        except HostguardError:
            # A report that cannot be delivered leaves the ticket to its
            # lease, which releases it as inconclusive; the caller's own
            # result or error matters more than this one.
            if exc is None:
                raise


class _Keeper:
    """Extends a ticket's lease in the background while its request runs."""

    def __init__(self, guard: GuardAPI, t: Ticket) -> None:
        self._guard = guard
        self._id = t["ticket"]
        lease = float(t.get("lease_seconds") or 120)
        self._every = max(0.5, lease / 3)
        self._done = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._thread = threading.Thread(target=self._loop, name="hostguard-ticket", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._done.wait(self._every):
            try:
                self._guard.extend(self._id)
            except (NotFound, BadRequest):
                return  # the ticket is gone, or this daemon cannot extend
            except HostguardError:
                continue

    def stop(self) -> None:
        self._done.set()


def _ticket_id(t: Union[str, Mapping[str, Any]]) -> str:
    return t if isinstance(t, str) else str(t["ticket"])


def _seg(s: str) -> str:
    return urllib.parse.quote(s, safe="")


class HostsAPI:
    """Durable per-host backoff."""

    def __init__(self, c: Client) -> None:
        self._c = c

    def touch(self, name: str, ok: bool) -> TouchResult:
        """Records one outcome for a host: ``ok`` is True if it answered."""
        return cast(TouchResult, self._c._call("POST", "/v1/hosts/%s/touch" % _seg(name), {"ok": bool(ok)}))

    def get(self, name: str) -> Host:
        return cast(Host, self._c._call("GET", "/v1/hosts/%s" % _seg(name)))

    def reset(self, name: str) -> bool:
        """Forgets the host's failures, ending its backoff; False when the daemon held no record of it."""
        return bool(self._c._call("POST", "/v1/hosts/%s/reset" % _seg(name))["reset"])

    def list(self, view: Optional[str] = None, *, limit: Optional[int] = None, after: Optional[str] = None) -> HostPage:
        """One page of hosts in ``view`` (all, healthy, available, unhealthy, backoff)."""
        q: Dict[str, str] = {}
        if view:
            q["view"] = view
        if limit is not None:
            q["limit"] = str(limit)
        if after:
            q["after"] = after
        return cast(HostPage, self._c._call("GET", "/v1/hosts", query=q or None))

    def filter(self, view: str, *, page_size: int = 1000) -> Iterator[Host]:
        """Every host in ``view``, reading page after page."""
        after: Optional[str] = None
        while True:
            page = self.list(view, limit=page_size, after=after)
            for h in page.get("hosts", []):
                yield h
            after = page.get("next")
            if not after:
                return


class ItemsAPI:
    """The durable retry queue."""

    def __init__(self, c: Client) -> None:
        self._c = c
        self._wait_unsupported = False

    def add(self, items: Iterable[Union[str, NewItem]]) -> AddResult:
        """Adds items (ids, or dicts with id, priority, payload, not_before, host)."""
        out = []
        for it in items:
            if isinstance(it, str):
                out.append({"id": it})
                continue
            d = dict(it)
            if "payload" in d and d["payload"] is not None:
                d["payload"] = _b64(d["payload"])
            out.append(d)
        return cast(AddResult, self._c._call("POST", "/v1/items", {"items": out}))

    def claim(
        self,
        n: int,
        lease_seconds: float,
        *,
        worker: Optional[str] = None,
        wait_seconds: Optional[float] = None,
    ) -> List[Lease]:
        """Leases up to ``n`` due items for ``lease_seconds``.

        With ``wait_seconds`` the call waits that long for work when none is
        due (the daemon's blocking claim); against a daemon without it, the
        client polls for the same time instead.
        """
        body: Dict[str, Any] = {"n": n, "lease_seconds": lease_seconds}
        if worker:
            body["worker"] = worker
        if not wait_seconds or wait_seconds <= 0:
            return self._claim(body)
        if not self._wait_unsupported:
            try:
                return self._claim(dict(body, wait_seconds=wait_seconds), timeout=self._c.timeout + wait_seconds)
            except BadRequest as e:
                if e.field != "wait_seconds":
                    raise
                self._wait_unsupported = True
        deadline = time.monotonic() + wait_seconds
        while True:
            leases = self._claim(body)
            left = deadline - time.monotonic()
            if leases or left <= 0:
                return leases
            time.sleep(min(1.0, left))

    def _claim(self, body: Dict[str, Any], timeout: Optional[float] = None) -> List[Lease]:
        return cast(List[Lease], self._c._call("POST", "/v1/items/claim", body, route="item", timeout=timeout)["leases"])

    def _op(self, item: LeaseLike, lease: Optional[str], op: str, extra: Optional[Dict[str, Any]] = None) -> Any:
        item_id, token = _lease_ref(item, lease)
        body: Dict[str, Any] = {"lease": token}
        body.update({k: v for k, v in (extra or {}).items() if v is not None})
        return self._c._call("POST", "/v1/items/%s/%s" % (_seg(item_id), op), body, route="item")

    def succeed(self, item: LeaseLike, lease: Optional[str] = None) -> Item:
        """The work is done. Pass the lease from claim, or an id and its token."""
        return cast(Item, self._op(item, lease, "succeed"))

    def fail(self, item: LeaseLike, lease: Optional[str] = None, *, cls: str, note: Optional[str] = None,
             source: Optional[str] = None, host: Optional[str] = None) -> Item:
        """The attempt failed for reason ``cls`` (picks the delay ladder).

        ``host`` names the host the item depends on: when it answers again,
        an item that failed with a host-level class becomes due at once.
        """
        return cast(Item, self._op(item, lease, "fail", {"class": cls, "note": note, "source": source, "host": host}))

    def extend(self, item: LeaseLike, lease: Optional[str] = None, *, lease_seconds: float) -> Extension:
        """Holds the lease ``lease_seconds`` from now."""
        return cast(Extension, self._op(item, lease, "extend", {"lease_seconds": lease_seconds}))

    def release(self, item: LeaseLike, lease: Optional[str] = None) -> Item:
        """Gives the item back without counting an attempt."""
        return cast(Item, self._op(item, lease, "release"))

    def observe(self, item_id: str, *, boost: Optional[int] = None, add_if_missing: Optional[bool] = None,
                priority: Optional[int] = None, payload: Optional[Union[bytes, str]] = None,
                source: Optional[str] = None) -> ObserveResult:
        """Fresh evidence for an item: a waiting one becomes due soon."""
        body = {k: v for k, v in {"boost": boost, "add_if_missing": add_if_missing, "priority": priority,
                                   "payload": _b64(payload) if payload is not None else None,
                                   "source": source}.items() if v is not None}
        return cast(ObserveResult, self._c._call("POST", "/v1/items/%s/observe" % _seg(item_id), body, route="item"))

    def observe_many(self, ids: Sequence[str], *, boost: Optional[int] = None, add_if_missing: Optional[bool] = None,
                     priority: Optional[int] = None, source: Optional[str] = None) -> List[ObserveResult]:
        """Sightings of many ids in one call; unknown ids say ``unknown``."""
        body = {k: v for k, v in {"ids": list(ids), "boost": boost, "add_if_missing": add_if_missing,
                                   "priority": priority, "source": source}.items() if v is not None}
        return cast(List[ObserveResult], self._c._call("POST", "/v1/items/observe", body, route="item")["results"])

    def settle(self, outcomes: Sequence[Union[SettleOutcome, Mapping[str, Any]]]) -> List[SettleResult]:
        """Many leases' results in one call; each result says ok or why not."""
        outs = [{k: v for k, v in dict(o).items() if v is not None} for o in outcomes]
        return cast(List[SettleResult], self._c._call("POST", "/v1/items/settle", {"outcomes": outs}, route="item")["results"])

    def get(self, item_id: str) -> Item:
        return cast(Item, self._c._call("GET", "/v1/items/%s" % _seg(item_id)))

    def due_now(self, item_id: str) -> Dict[str, Any]:
        """Makes a pending or scheduled item due at once, without counting an attempt.

        The answer's ``moved`` is False for a leased, done or already due item."""
        return cast(Dict[str, Any], self._c._call("POST", "/v1/items/%s/due-now" % _seg(item_id), route="item"))

    def forget(self, item_id: str) -> None:
        """Deletes the item, whatever its state; a worker holding its lease loses it."""
        self._c._call("DELETE", "/v1/items/%s" % _seg(item_id), route="item")

    def stats(self) -> QueueStats:
        return cast(QueueStats, self._c._call("GET", "/v1/items/stats"))

    def list(self, *, state: Union[None, str, Sequence[str]] = None, item_class: Optional[str] = None,
             due_before: Optional[str] = None, limit: Optional[int] = None, after: Optional[str] = None) -> ItemPage:
        """One page of items in id order, without payloads. ``state`` is a
        state name or several; ``due_before`` an RFC 3339 time. A page may be
        short, even empty, and still have a ``next``."""
        q: Dict[str, str] = {}
        if state:
            q["state"] = state if isinstance(state, str) else ",".join(state)
        if item_class:
            q["class"] = item_class
        if due_before:
            q["due_before"] = due_before
        if limit is not None:
            q["limit"] = str(limit)
        if after:
            q["after"] = after
        return cast(ItemPage, self._c._call("GET", "/v1/items", query=q or None))

    def iter(self, *, page_size: int = 1000, **filters: Any) -> Iterator[Item]:
        """Every item matching ``filters`` (as ``list`` takes them), page after page."""
        after: Optional[str] = None
        while True:
            page = self.list(limit=page_size, after=after, **filters)
            for it in page.get("items", []):
                yield it
            after = page.get("next")
            if not after:
                return


def _lease_ref(item: LeaseLike, lease: Optional[str]) -> Tuple[str, str]:
    if isinstance(item, str):
        if lease is None:
            raise TypeError("hostguard: pass the lease token with the item id, or the lease from claim")
        return item, lease
    return str(item["id"]), str(lease if lease is not None else item["lease"])


def _b64(p: Union[bytes, bytearray, str]) -> str:
    if isinstance(p, str):
        p = p.encode("utf-8")
    return base64.b64encode(bytes(p)).decode("ascii")


def decode_payload(lease: Mapping[str, Any]) -> bytes:
    """The bytes of a lease's or item's payload (empty when it has none)."""
    p = lease.get("payload")
    return base64.b64decode(p) if p else b""


class BudgetAPI:
    """Admission of background work: daily allowances and pacing."""

    def __init__(self, c: Client) -> None:
        self._c = c

    def admit(self, kind: str, *, source: Optional[str] = None, cost: Optional[int] = None, wait: bool = False) -> Grant:
        """May this request go now? Raises a :class:`BudgetRefused` subclass if not.

        ``wait`` waits for the source's next pacing slot instead of
        :class:`BudgetPaced`; an exhausted day is never waited for.
        """
        body: Dict[str, Any] = {"kind": kind}
        if source:
            body["source"] = source
        if cost is not None:
            body["cost"] = cost
        if wait:
            body["wait"] = True
        return cast(Grant, self._c._call("POST", "/v1/budget/admit", body, route="budget",
                                         timeout=self._c.timeout * 4 if wait else None))

    def settle(self, grant: Union[str, Mapping[str, Any]], actual: int) -> GrantSettlement:
        """Settles a bytes reservation to what the transfer really used."""
        gid = grant if isinstance(grant, str) else str(grant["id"])
        return cast(GrantSettlement, self._c._call("POST", "/v1/budget/grants/%s/settle" % _seg(gid),
                                                   {"actual": actual}, route="budget"))

    def report(self) -> Dict[str, Any]:
        """Today's usage against the allowances (``GET /v1/budget``)."""
        return cast(Dict[str, Any], self._c._call("GET", "/v1/budget"))

    def set_source(self, name: str, **settings: Any) -> Dict[str, Any]:
        """Adds or changes a source (owner_daily_limit, share, pace_seconds, ...)."""
        return cast(Dict[str, Any], self._c._call("PUT", "/v1/budget/sources/%s" % _seg(name), settings))

    def remove_source(self, name: str) -> None:
        self._c._call("DELETE", "/v1/budget/sources/%s" % _seg(name))

    def pause(self, paused: bool = True) -> Dict[str, Any]:
        """Pauses (or resumes) every background admission on every node."""
        return cast(Dict[str, Any], self._c._call("POST", "/v1/budget/pause", {"paused": bool(paused)}))

    def pause_source(self, name: str, paused: bool = True) -> Dict[str, Any]:
        """Pauses (or resumes) the background admissions of one source on
        every node; the other sources go on. An unknown source raises
        NotFound."""
        return cast(Dict[str, Any], self._c._call("POST", "/v1/budget/sources/%s/pause" % _seg(name),
                                                  {"paused": bool(paused)}))
