"""Errors: one exception class per error code of the server.

Every JSON error the server answers is ``{"error": {"code", "message",
"detail"?, "outcome_unknown"?}}`` with one HTTP status per code
(``errs/errs.go``); :func:`from_response` turns it into the class of its
code, which carries the server's ``detail``. Allocation's conflict body is
flat (``{"error": "allocation_conflict", "code": ..., "winner": ...}``) and
becomes an :class:`AllocationConflict`, a :class:`Conflict` carrying the
whole body.

:class:`OutcomeUnknown` (an :class:`Unavailable`) says a write may or may
not have been applied: a timeout or a lost connection after the request
was sent, or the server's ``outcome_unknown``. It carries the idempotency
key that learns the outcome: send the same request again with it
(:func:`arbiter_client.retry`).
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = [
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
    "from_response",
]


class ArbiterError(Exception):
    """An error the cluster answered, or that the client met reaching it.

    ``code`` is the server's error code, ``message`` its text for people,
    ``detail`` its structured context (``{}`` when none), ``status`` the
    HTTP status (0 when no answer came) and ``retry_after`` the seconds a
    ``Retry-After`` header asked for (``None`` when absent).
    """

    code = "internal"

    def __init__(
        self,
        message: str,
        *,
        detail: Mapping[str, Any] | None = None,
        status: int = 0,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.detail: dict[str, Any] = dict(detail or {})
        self.status = status
        self.retry_after = retry_after
        #: The request that failed (set by the client): what
        #: ``client.replay(err)`` sends again.
        self.call: Any = None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message else self.code

    @property
    def result(self) -> Any:
        """The result a refusal explains itself with (``detail.result``:
        a capacity denial's decision and availability), or ``None``."""
        return self.detail.get("result")


class Invalid(ArbiterError):
    """422: malformed input or a bound exceeded (``detail.field`` names it)."""

    code = "invalid"


class NotFound(ArbiterError):
    """404: no such record (also another tenant's)."""

    code = "not_found"


class Conflict(ArbiterError):
    """409 ``conflict``: the state does not allow the change."""

    code = "conflict"


class AllocationConflict(Conflict):
    """Allocation's flat 409: ``body`` is the whole answer (``error``,
    ``code``, ``conflict_key``, ``outcome``, ``winner``,
    ``write_occurred``, ...), also in ``detail``."""

    @property
    def body(self) -> dict[str, Any]:
        """The flat conflict body, as the server wrote it."""
        return self.detail


class IdempotencyConflict(ArbiterError):
    """409: the idempotency key was used for another request."""

    code = "idempotency_conflict"


class StaleFence(ArbiterError):
    """409: the fence presented is not the current one."""

    code = "stale_fence"


class StaleEpoch(ArbiterError):
    """409: the expected epoch is not the current one."""

    code = "stale_epoch"


class Expired(ArbiterError):
    """409: the lease, claim or envelope expired (by the log's clock)."""

    code = "expired"


class Exhausted(ArbiterError):
    """409: no capacity, candidate or room left."""

    code = "exhausted"


class Backpressure(ArbiterError):
    """429: too much in flight; retry after ``retry_after`` seconds."""

    code = "backpressure"


class Unavailable(ArbiterError):
    """503, or no node reachable: nothing was applied unless this is an
    :class:`OutcomeUnknown`."""

    code = "unavailable"


class OutcomeUnknown(Unavailable):
    """A write that may or may not have been applied.

    ``idempotency_key`` is the key the request carried (``None`` for a
    route whose request identifies itself: a transition's fence, a
    proposal id, a watermark); sending the same request again learns the
    outcome and never applies it twice.
    """

    def __init__(
        self,
        message: str,
        *,
        idempotency_key: str | None,
        detail: Mapping[str, Any] | None = None,
        status: int = 0,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, detail=detail, status=status, retry_after=retry_after)
        self.idempotency_key = idempotency_key


class NotReady(Unavailable):
    """The cluster does not enable a command this call needs (an
    incompatible deployment: the spec's readiness failure, which callers
    must reject before submitting work). ``missing`` lists them as
    ``domain.command@version``."""

    @property
    def missing(self) -> list[str]:
        """The requirements the cluster does not meet."""
        return list(self.detail.get("missing", []))


class Unauthorized(ArbiterError):
    """401: no valid credential."""

    code = "unauthorized"


class Forbidden(ArbiterError):
    """403: the principal lacks the tenant or the role."""

    code = "forbidden"


class Internal(ArbiterError):
    """500, or an answer the client cannot read."""

    code = "internal"


class CursorExpired(ArbiterError):
    """410: the cursor was pruned (``detail.last_seq``: where to resume
    after resyncing)."""

    code = "cursor_expired"


class TooLarge(ArbiterError):
    """413: the request body is over its bound."""

    code = "too_large"


class StaleWatermark(ArbiterError):
    """409: a projection producer's watermark is below its channel's."""

    code = "stale_watermark"


class MethodNotAllowed(ArbiterError):
    """405: the path takes another method."""

    code = "method_not_allowed"


_BY_CODE: dict[str, type[ArbiterError]] = {
    cls.code: cls
    for cls in (
        Invalid,
        NotFound,
        Conflict,
        IdempotencyConflict,
        StaleFence,
        StaleEpoch,
        Expired,
        Exhausted,
        Backpressure,
        Unavailable,
        Unauthorized,
        Forbidden,
        Internal,
        CursorExpired,
        TooLarge,
        StaleWatermark,
        MethodNotAllowed,
    )
}

_BY_STATUS: dict[int, type[ArbiterError]] = {
    422: Invalid,
    404: NotFound,
    409: Conflict,
    429: Backpressure,
    503: Unavailable,
    401: Unauthorized,
    403: Forbidden,
    410: CursorExpired,
    413: TooLarge,
    405: MethodNotAllowed,
}


def from_response(
    status: int,
    body: Any,
    *,
    retry_after: float | None = None,
    idempotency_key: str | None = None,
) -> ArbiterError:
    """The exception of an error answer: ``body`` is its decoded JSON
    (anything else, such as ``None`` for a body that is not JSON, falls
    back to the status)."""
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, str):  # allocation's flat conflict body
        return AllocationConflict(
            f"{err}: {body.get('code', '')}".rstrip(": "),
            detail=body,
            status=status,
            retry_after=retry_after,
        )
    if not isinstance(err, dict):
        cls = _BY_STATUS.get(status, Internal)
        return cls(f"HTTP {status} without an error body", status=status, retry_after=retry_after)
    code = str(err.get("code", ""))
    message = str(err.get("message", ""))
    detail = err.get("detail") if isinstance(err.get("detail"), dict) else None
    if err.get("outcome_unknown"):
        key = (detail or {}).get("idempotency_key") or idempotency_key
        return OutcomeUnknown(
            message,
            idempotency_key=key or None,
            detail=detail,
            status=status,
            retry_after=retry_after,
        )
    if code == "unavailable" and detail and "missing" in detail:
        return NotReady(message, detail=detail, status=status, retry_after=retry_after)
    cls = _BY_CODE.get(code, Internal)
    return cls(message or code, detail=detail, status=status, retry_after=retry_after)
