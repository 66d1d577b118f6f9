"""Typed errors built from the daemon's answers.

Every 4xx and 5xx the daemon makes itself is a JSON object
``{"error": ..., "field": ...}`` (plus ``endpoint``/``retry_after_seconds``
for a fast-fail and ``class`` for an upstream failure), and the answers of
the fetch route and the proxy may carry an RFC 9209 ``Proxy-Status`` header
naming ``hostguard``. The classes below are chosen from the status, the
route, the JSON fields and that header, never from the message text, which
is for people.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import json
from typing import Any, Dict, Mapping, Optional

__all__ = [
    "HostguardError",
    "DaemonUnreachable",
    "BadRequest",
    "RequestTooLarge",
    "Unauthorized",
    "NotFound",
    "Conflict",
    "LeaseLost",
    "FastFail",
    "TooManyTickets",
    "BudgetRefused",
    "BudgetExhausted",
    "BudgetPaced",
    "BudgetPaused",
    "BudgetDisabled",
    "UpstreamFailed",
    "PolicyRefused",
    "NotConfigured",
    "parse_proxy_status",
    "error_from_response",
]


class HostguardError(Exception):
    """An answer of the daemon that is not a success.

    ``status`` is the HTTP status (0 when no answer arrived), ``message``
    the daemon's text (for people: branch on the class and ``field``),
    ``field`` the input to blame when one is, ``body`` the decoded JSON
    error object and ``headers`` the answer's headers, lower-cased.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        field: Optional[str] = None,
        body: Optional[Dict[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field
        self.body: Dict[str, Any] = dict(body or {})
        self.headers: Dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}

    def __repr__(self) -> str:
        return "%s(status=%d, field=%r, message=%r)" % (type(self).__name__, self.status, self.field, self.message)


class DaemonUnreachable(HostguardError):
    """The daemon could not be reached, or its answer was cut short."""


class BadRequest(HostguardError):
    """400: the daemon refused the input; ``field`` names it when it can."""


class RequestTooLarge(BadRequest):
    """413: the JSON body is over the daemon's limit (1 MiB by default)."""


class Unauthorized(HostguardError):
    """401 (or 407 from the proxy): a missing or wrong token."""


class NotFound(HostguardError):
    """404: an unknown ticket, item, host, grant, source, feed or route."""


class Conflict(HostguardError):
    """409: the request conflicts with what is stored (see ``field``)."""


class LeaseLost(Conflict):
    """409 on a lease: the item was claimed again or settled another way.

    Drop the work; another worker owns the item now.
    """


class FastFail(HostguardError):
    """The endpoint is open: the daemon refused without any network work.

    ``endpoint`` is the origin the guard keys (``https://host:port``),
    ``retry_after`` the seconds until a trial request may go.
    """

    def __init__(self, message: str, *, endpoint: str, retry_after: Optional[float], **kw: Any) -> None:
        super().__init__(message, **kw)
        self.endpoint = endpoint
        self.retry_after = retry_after


class TooManyTickets(HostguardError):
    """429 from acquire: the daemon holds as many remote tickets as it allows."""

    def __init__(self, message: str, *, retry_after: Optional[float], **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class BudgetRefused(HostguardError):
    """The budget refused an admission; nothing was charged.

    ``retry_after`` is the seconds until the answer can change, when the
    daemon said.
    """

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class BudgetExhausted(BudgetRefused):
    """429: today's allowance for this work is used up.

    ``resets_at`` is when it resets (an aware UTC datetime: the next UTC
    midnight).
    """

    def __init__(self, message: str, *, resets_at: _dt.datetime, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.resets_at = resets_at


class BudgetPaced(BudgetRefused):
    """429: the source was asked too recently; ``retry_after`` is the wait."""


class BudgetPaused(BudgetRefused):
    """503: the owner paused all background work."""


class BudgetDisabled(BudgetRefused):
    """403: the allowance for this kind of work is zero."""


class UpstreamFailed(HostguardError):
    """No upstream answer (fetch or proxy): 502, 504, or a refused address.

    ``error_class`` is the failure class (``timeout``, ``refused``, ...),
    ``proxy_error`` the RFC 9209 error type when the daemon sent one.
    """

    def __init__(self, message: str, *, error_class: Optional[str], proxy_error: Optional[str], **kw: Any) -> None:
        super().__init__(message, **kw)
        self.error_class = error_class
        self.proxy_error = proxy_error


class PolicyRefused(UpstreamFailed):
    """403: the destination policy refused the address (see --allow-private)."""


class NotConfigured(HostguardError):
    """501: the daemon runs without the capability this route needs."""


def parse_proxy_status(value: Optional[str], proxy: str = "hostguard") -> Optional[Dict[str, str]]:
    """Returns the parameters of ``proxy``'s member of a Proxy-Status value.

    ``Proxy-Status: hostguard; error=destination_unavailable; details="..."``
    gives ``{"error": "destination_unavailable", "details": "..."}``. None
    when the header is absent or names no such proxy (an upstream's own
    answer passes through without it).
    """
    if not value:
        return None
    for member in _split_outside_quotes(value, ","):
        parts = _split_outside_quotes(member, ";")
        if not parts:
            continue
        name = _unquote(parts[0].strip())
        if name != proxy:
            continue
        params: Dict[str, str] = {}
        for p in parts[1:]:
            key, sep, val = p.strip().partition("=")
            if key:
                params[key.strip().lower()] = _unquote(val.strip()) if sep else "?1"
        return params
    return None


def _split_outside_quotes(s: str, sep: str) -> list:
    out, cur, quoted, escaped = [], [], False, False
    for ch in s:
        if escaped:
            cur.append(ch)
            escaped = False
        elif ch == "\\" and quoted:
            cur.append(ch)
            escaped = True
        elif ch == '"':
            cur.append(ch)
            quoted = not quoted
        elif ch == sep and not quoted:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p for p in out if p.strip()]


def _unquote(s: str) -> str:
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return s


def _retry_after(body: Mapping[str, Any], headers: Mapping[str, str]) -> Optional[float]:
    v = body.get("retry_after_seconds")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    h = headers.get("retry-after")
    if not h:
        return None
    h = h.strip()
    if h.isdigit():
        return float(h)
    try:
        when = email.utils.parsedate_to_datetime(h)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())


def _next_utc_midnight(now: _dt.datetime) -> _dt.datetime:
    day = now.astimezone(_dt.timezone.utc).date() + _dt.timedelta(days=1)
    return _dt.datetime(day.year, day.month, day.day, tzinfo=_dt.timezone.utc)


def _parse_time(v: Any) -> Optional[_dt.datetime]:
    if not isinstance(v, str):
        return None
    try:
        t = _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)


def _budget_error(status: int, message: str, body: Mapping[str, Any], retry: Optional[float], kw: Dict[str, Any]) -> HostguardError:
    if status == 503:
        return BudgetPaused(message, retry_after=retry, **kw)
    if status == 403:
        return BudgetDisabled(message, retry_after=retry, **kw)
    # An exhausted allowance and a paced source are both 429; the body's
    # reason says which, and resets_at when an exhausted one comes back.
    # Without a reason nothing is guessed from Retry-After: the refusal is
    # treated as paced, and honouring Retry-After is right either way.
    reason = body.get("reason")
    if reason == "exhausted":
        resets_at = _parse_time(body.get("resets_at")) or _next_utc_midnight(_dt.datetime.now(_dt.timezone.utc))
        return BudgetExhausted(message, resets_at=resets_at, retry_after=retry, **kw)
    return BudgetPaced(message, retry_after=retry, **kw)


def error_from_response(
    status: int,
    headers: Mapping[str, str],
    raw: bytes,
    *,
    route: str = "",
) -> HostguardError:
    """Builds the typed error for one non-success answer of the daemon.

    ``route`` names the kind of call (``"budget"`` for admissions, ``"item"``
    for lease operations, ``"fetch"`` for the fetch route), because some
    statuses mean different things on different routes.
    """
    hdrs = {k.lower(): v for k, v in headers.items()}
    body: Dict[str, Any] = {}
    try:
        decoded = json.loads(raw.decode("utf-8")) if raw else {}
        if isinstance(decoded, dict):
            body = decoded
    except (UnicodeDecodeError, ValueError):
        pass
    message = body.get("error") if isinstance(body.get("error"), str) else ""
    if not message:
        message = "hostguard: HTTP status %d" % status
    field = body.get("field") if isinstance(body.get("field"), str) else None
    kw: Dict[str, Any] = {"status": status, "field": field, "body": body, "headers": hdrs}
    retry = _retry_after(body, hdrs)
    ps = parse_proxy_status(hdrs.get("proxy-status"))
    ps_error = ps.get("error") if ps else None

    if body.get("fast_fail") is True or ps_error == "destination_unavailable" or (
        status == 503 and isinstance(body.get("endpoint"), str)
    ):
        return FastFail(message, endpoint=str(body.get("endpoint", "")), retry_after=retry, **kw)
    if route == "budget" and status in (403, 429, 503):
        return _budget_error(status, message, body, retry, kw)
    if status in (401, 407):
        return Unauthorized(message, **kw)
    if status == 413:
        return RequestTooLarge(message, **kw)
    if status == 400:
        return BadRequest(message, **kw)
    if status == 404:
        return NotFound(message, **kw)
    if status == 409:
        if field == "lease":
            return LeaseLost(message, **kw)
        return Conflict(message, **kw)
    if status == 429 and route == "acquire":
        return TooManyTickets(message, retry_after=retry, **kw)
    if status == 501:
        return NotConfigured(message, **kw)
    cls = body.get("class") if isinstance(body.get("class"), str) else None
    if status == 403 and (cls == "policy" or ps_error == "destination_ip_prohibited"):
        return PolicyRefused(message, error_class=cls, proxy_error=ps_error, **kw)
    if status in (502, 504) or (ps_error and status >= 400):
        return UpstreamFailed(message, error_class=cls, proxy_error=ps_error, **kw)
    return HostguardError(message, **kw)
