"""Learning the outcome of a write whose outcome is unknown.

A write that timed out, lost its connection after sending, or was
answered ``outcome_unknown`` (:class:`~arbiter_client.OutcomeUnknown`)
may or may not have been applied. Sending the *same request with the
same idempotency key* again is safe: the cluster answers the original
result (``replayed``) or runs it for the first time, never twice.

- ``client.with_retry()`` is a view of a client whose every call is
  built once (so its key is fixed) and sent again while it is unknown or
  the cluster is unavailable, within a deadline.
- ``client.replay(err)`` sends the request an ``OutcomeUnknown`` carries
  again, with the same key, until it knows.
- :func:`retry` and :func:`retry_async` do the same for any callable that
  sends the same request with an explicit ``idempotency_key`` each time.
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, Iterator, TypeVar

from .errors import Backpressure, NotReady, Unavailable

__all__ = ["retry", "retry_async", "retryable", "backoff", "DEFAULT_RETRY_TIMEOUT"]

T = TypeVar("T")

#: How long the helpers keep trying by default, in seconds.
DEFAULT_RETRY_TIMEOUT = 30.0
#: Waits between attempts: FIRST_WAIT doubling to MAX_WAIT; at most
#: MAX_ATTEMPTS attempts whatever the deadline.
FIRST_WAIT = 0.05
MAX_WAIT = 1.0
MAX_ATTEMPTS = 100


def retryable(err: BaseException) -> bool:
    """Whether sending the same request again is safe and may succeed: an
    unknown outcome, an unavailable cluster or backpressure (nothing was
    applied). A readiness failure needs another deployment, not a retry."""
    return isinstance(err, (Unavailable, Backpressure)) and not isinstance(err, NotReady)


def backoff(timeout: float) -> Iterator[float]:
    """The waits before each further attempt, ending at the deadline."""
    deadline = time.monotonic() + timeout
    wait = FIRST_WAIT
    for _ in range(MAX_ATTEMPTS - 1):
        left = deadline - time.monotonic()
        if left <= 0:
            return
        yield min(wait, left)
        wait = min(2 * wait, MAX_WAIT)


def retry(fn: Callable[[], T], *, timeout: float = DEFAULT_RETRY_TIMEOUT) -> T:
    """``fn()``, again while its error is :func:`retryable`, for up to
    ``timeout`` seconds; then its last error. ``fn`` must send the same
    request with the same idempotency key every time."""
    waits = backoff(timeout)
    while True:  # bounded by waits: it ends at the deadline or MAX_ATTEMPTS
        try:
            return fn()
        except Exception as err:
            wait = next(waits, None) if retryable(err) else None
            if wait is None:
                raise
        time.sleep(wait)


async def retry_async(fn: Callable[[], Awaitable[T]], *, timeout: float = DEFAULT_RETRY_TIMEOUT) -> T:
    """:func:`retry` for coroutines."""
    waits = backoff(timeout)
    while True:  # bounded by waits: it ends at the deadline or MAX_ATTEMPTS
        try:
            return await fn()
        except Exception as err:
            wait = next(waits, None) if retryable(err) else None
            if wait is None:
                raise
        await asyncio.sleep(wait)
