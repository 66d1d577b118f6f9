"""A client for the hostguard daemon, standard library only.

    from hostguard import Client, FastFail

    hg = Client()  # HOSTGUARD_ADDR and HOSTGUARD_TOKEN, like the CLI
    for lease in hg.items.claim(10, lease_seconds=60, wait_seconds=30):
        ...
        hg.items.succeed(lease)

See README.md beside this package for the whole surface.
"""

from ._client import (
    DEFAULT_ADDR,
    BudgetAPI,
    Client,
    FetchResponse,
    GuardAPI,
    HostsAPI,
    ItemsAPI,
    classify_exception,
    decode_payload,
)
from .daemon import (
    BinaryNotFound,
    Daemon,
    DaemonError,
    DaemonNotReady,
    PortInUse,
    StateDirInUse,
    find_binary,
)
from .errors import (
    BadRequest,
    BudgetDisabled,
    BudgetExhausted,
    BudgetPaced,
    BudgetPaused,
    BudgetRefused,
    Conflict,
    DaemonUnreachable,
    FastFail,
    HostguardError,
    LeaseLost,
    NotConfigured,
    NotFound,
    PolicyRefused,
    RequestTooLarge,
    TooManyTickets,
    Unauthorized,
    UpstreamFailed,
    error_from_response,
    parse_proxy_status,
)
from .fastfail import is_fast_fail

__version__ = "0.1.0"

__all__ = [
    "BinaryNotFound",
    "Daemon",
    "DaemonError",
    "DaemonNotReady",
    "PortInUse",
    "StateDirInUse",
    "find_binary",
    "DEFAULT_ADDR",
    "BudgetAPI",
    "Client",
    "FetchResponse",
    "GuardAPI",
    "HostsAPI",
    "ItemsAPI",
    "classify_exception",
    "decode_payload",
    "BadRequest",
    "BudgetDisabled",
    "BudgetExhausted",
    "BudgetPaced",
    "BudgetPaused",
    "BudgetRefused",
    "Conflict",
    "DaemonUnreachable",
    "FastFail",
    "HostguardError",
    "LeaseLost",
    "NotConfigured",
    "NotFound",
    "PolicyRefused",
    "RequestTooLarge",
    "TooManyTickets",
    "Unauthorized",
    "UpstreamFailed",
    "error_from_response",
    "parse_proxy_status",
    "is_fast_fail",
]
