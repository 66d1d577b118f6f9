"""The daemon's JSON answers, as TypedDicts.

They are plain dicts at run time, so fields a newer daemon adds are kept
and nothing breaks; the names follow docs/openapi.yaml.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, TypedDict

__all__ = [
    "Outcome",
    "Ticket",
    "ReportResult",
    "TicketExtension",
    "Endpoint",
    "Host",
    "HostPage",
    "TouchResult",
    "NewItem",
    "AddResult",
    "Lease",
    "Item",
    "ItemPage",
    "Extension",
    "ObserveResult",
    "SettleOutcome",
    "SettleResult",
    "Schedule",
    "QueueStats",
    "Grant",
    "GrantSettlement",
]

Outcome = Literal["answered", "failed", "inconclusive"]


class _TicketBase(TypedDict):
    ticket: str
    endpoint: str
    trial: bool
    exempt: bool
    expires_at: str
    lease_seconds: float


class Ticket(_TicketBase, total=False):
    """A guard ticket from acquire: report it once, before ``expires_at``."""


class ReportResult(TypedDict):
    endpoint: str
    state: str


class TicketExtension(TypedDict, total=False):
    ticket: str
    expires_at: str
    lease_seconds: float


class Endpoint(TypedDict, total=False):
    endpoint: str
    state: str
    failures: int
    retry_after_seconds: float
    open_until: str
    tickets_out: int
    trial_out: bool
    last_failure: str
    last_failure_at: str


class Host(TypedDict, total=False):
    name: str
    display: str
    consecutive_fails: int
    backoff_until: str
    last_failure: str
    last_success: str
    successes: int
    failures: int
    ignored_failures: int
    known: bool
    healthy: bool
    available: bool
    retry_in_seconds: float


class TouchResult(Host, total=False):
    counted: bool


class HostPage(TypedDict, total=False):
    hosts: List[Host]
    next: str


class _NewItemBase(TypedDict):
    id: str


class NewItem(_NewItemBase, total=False):
    """One item to add. ``payload`` may be bytes; the client base64-encodes it."""

    priority: int
    payload: Any
    not_before: str
    host: str


class AddResult(TypedDict):
    added: int
    existing: int


class _LeaseBase(TypedDict):
    id: str
    lease: str
    until: str


class Lease(_LeaseBase, total=False):
    """A claimed item: settle it with succeed, fail or release before ``until``."""

    attempt: int
    failures: int
    priority: int
    payload: str
    last_class: str


class Item(TypedDict, total=False):
    id: str
    priority: int
    state: str
    next_at: str
    attempts: int
    failures: int
    expiries: int
    last_class: str
    host: str
    history: List[Dict[str, Any]]
    observations: int
    last_seen: str
    created_at: str
    updated_at: str
    payload: str


class ItemPage(TypedDict, total=False):
    """One page of ``items.list``: ``next`` is absent on the last page."""

    items: List[Item]
    next: str


class Extension(TypedDict):
    id: str
    until: str


class ObserveResult(TypedDict, total=False):
    id: str
    unknown: bool
    added: bool
    state: str
    priority: int
    next_at: str


class _SettleOutcomeBase(TypedDict):
    id: str
    lease: str
    op: Literal["succeed", "fail", "release"]


class SettleOutcome(_SettleOutcomeBase, total=False):
    """One lease's result for items.settle; ``class``, ``note`` and ``host`` go with ``fail``."""


class SettleResult(TypedDict, total=False):
    id: str
    ok: bool
    error: str  # "lease_lost" or "not_found"


class Schedule(TypedDict, total=False):
    """The ``retry`` settings a node applies; durations are Go strings."""

    default: List[str]
    classes: Dict[str, Any]
    reactivate_within: str
    keep_done: str
    sync_sightings: bool
    wake_jitter: str


class QueueStats(TypedDict, total=False):
    total: int
    by_state: Dict[str, int]
    by_class: Dict[str, int]
    due_now: int
    leases_expired: int
    host_wakes: int
    host_woken: int
    host_woken_at: str
    oldest_due_lag_seconds: float
    schedule: Schedule


class Grant(TypedDict, total=False):
    """An admission: ``id`` is set for a bytes reservation, to settle."""

    id: str
    source: str
    kind: str
    cost: int
    day: str
    at: str


class GrantSettlement(TypedDict):
    id: str
    actual: int

