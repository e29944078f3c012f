"""Python client of Arbiter, sync and asyncio.

>>> from arbiter_client import Client
>>> with Client("http://127.0.0.1:8001,http://127.0.0.1:8002") as client:  # doctest: +SKIP
...     client.nodes.create("RMDD-27", labels=["concept"], properties={"owner": "host-a"})

One service per domain (``client.nodes``, ``client.concepts``,
``client.capacity_leases``, ``client.work_items``, ``client.reservations``,
``client.allocation``, ``client.projection``, ``client.cluster``), one
exception class per error code (:mod:`arbiter_client.errors`), sealing
helpers computed as the server computes them (:mod:`arbiter_client.sealing`,
on the canonical JSON rule of :mod:`arbiter_client.canonical`).
"""

from .call import Call
from .canonical import CanonicalError, jcs, jcs_text
from .capacity import lease_ref, lease_refs
from .client import AsyncClient, Client
from .errors import (
    AllocationConflict,
    ArbiterError,
    Backpressure,
    Conflict,
    CursorExpired,
    Exhausted,
    Expired,
    Forbidden,
    IdempotencyConflict,
    Internal,
    Invalid,
    MethodNotAllowed,
    NotFound,
    NotReady,
    OutcomeUnknown,
    StaleEpoch,
    StaleFence,
    StaleWatermark,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from .projection import Held
from .retry import retry, retry_async, retryable
from .sealing import digest, file_digest, fingerprint, json_digest, owner_digest, seal_reservation

__version__ = "0.1.0"

__all__ = [
    "Client",
    "AsyncClient",
    "Call",
    "Held",
    "ArbiterError",
    "Invalid",
    "NotFound",
    "Conflict",
    "AllocationConflict",
    "IdempotencyConflict",
    "StaleFence",
    "StaleEpoch",
    "Expired",
    "Exhausted",
    "Backpressure",
    "Unavailable",
    "OutcomeUnknown",
    "NotReady",
    "Unauthorized",
    "Forbidden",
    "Internal",
    "CursorExpired",
    "TooLarge",
    "StaleWatermark",
    "MethodNotAllowed",
    "CanonicalError",
    "jcs",
    "jcs_text",
    "digest",
    "file_digest",
    "json_digest",
    "owner_digest",
    "fingerprint",
    "seal_reservation",
    "lease_ref",
    "lease_refs",
    "retry",
    "retry_async",
    "retryable",
]
