"""The one request path of both clients.

Everything but the I/O is written once: :func:`exchange` is a generator
that walks the addresses within the call's deadline, yielding what to do
(:class:`Send` a request, :class:`Wait` before the next round) and
receiving what happened (an ``httpx.Response`` or the exception); it
returns the call's result or raises its error. :class:`SyncTransport` and
:class:`AsyncTransport` only perform those steps with ``httpx.Client`` or
``httpx.AsyncClient``. :class:`Readiness` checks every call's required
commands against ``/v1/cluster/capabilities``, read on the first call.

Failover: an address that cannot be reached (the connection was refused
or not made in time: the request was not sent) is left for the next one,
for every call. Once a write was sent, a lost answer is an
:class:`~arbiter_client.errors.OutcomeUnknown` carrying its idempotency
key; a read is sent to the next address instead.
"""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass
from typing import Any, Generator, Mapping, Sequence, Union
from urllib.parse import urlencode

import httpx

from .call import Call
from .canonical import dumps, loads
from .errors import (
    ArbiterError,
    Internal,
    NotReady,
    OutcomeUnknown,
    Unavailable,
    from_response,
)
from .retry import retry, retry_async

__all__ = ["Send", "Wait", "exchange", "Readiness", "SyncTransport", "AsyncTransport"]

#: Attempts of one call across addresses (each bounded by the deadline).
MAX_ATTEMPTS = 32
#: Pause after every address failed once, doubling up to MAX_PAUSE.
FIRST_PAUSE = 0.05
MAX_PAUSE = 1.0
#: The server gets the deadline less this share (at most MAX_MARGIN s),
#: so that its own 503 arrives before the client gives up.
MARGIN_SHARE = 0.2
MAX_MARGIN = 0.5
#: The server's bounds of Request-Timeout, in milliseconds.
MAX_SERVER_TIMEOUT_MS = 60_000
#: Capabilities older than this are read again before a call is refused.
READINESS_REFRESH = 1.0

CAPABILITIES: Call[Any] = Call("GET", "/v1/cluster/capabilities")

# Errors raised before the request left: safe to send it elsewhere.
_UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class Send:
    """Send one HTTP request."""

    method: str
    url: str
    headers: Mapping[str, str]
    content: bytes | None
    timeout: httpx.Timeout


@dataclass(frozen=True)
class Wait:
    """Pause before the next round of addresses."""

    seconds: float


Step = Union[Send, Wait]
Reply = Union[httpx.Response, Exception, None]


class Addresses:
    """The cluster's API URLs and the one that answered last (sticky)."""

    def __init__(self, addrs: str | Sequence[str]) -> None:
        items = addrs.split(",") if isinstance(addrs, str) else list(addrs)
        self.urls = [a.strip().rstrip("/") for a in items if a.strip()]
        if not self.urls:
            raise ValueError("no cluster address given")
        for u in self.urls:
            if not u.startswith(("http://", "https://")):
                raise ValueError(f"address {u!r}: want http://host:port or https://host:port")
        self.current = 0


def exchange(
    call: Call[Any],
    addrs: Addresses,
    headers: Mapping[str, str],
    timeout: float,
    connect_timeout: float,
) -> Generator[Step, Reply, Any]:
    """Run ``call`` within ``timeout`` seconds: yields steps, receives
    their outcomes, returns the result or raises the call's error."""
    deadline = time.monotonic() + timeout + call.extra_time
    content = None if call.body is None else dumps(call.body)
    tried: list[str] = []
    pause = FIRST_PAUSE
    for attempt in range(MAX_ATTEMPTS):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        index = (addrs.current + attempt) % len(addrs.urls)
        base = addrs.urls[index]
        reply = yield Send(
            call.method,
            _url(base, call),
            _headers(call, headers, remaining),
            content,
            httpx.Timeout(remaining, connect=min(connect_timeout, remaining)),
        )
        if isinstance(reply, httpx.Response):
            addrs.current = index
            return interpret(call, reply.status_code, reply.headers, reply.content)
        if call.write and not isinstance(reply, _UNSENT):
            raise OutcomeUnknown(
                f"{call.method} {call.path} to {base}: the answer was lost ({reply!r}); "
                + _advice(call.idempotency_key),
                idempotency_key=call.idempotency_key,
                detail={"idempotency_key": call.idempotency_key or ""},
            )
        tried.append(f"{base}: {reply!r}")
        if (attempt + 1) % len(addrs.urls) == 0:
            wait = min(pause, deadline - time.monotonic())
            if wait > 0:
                yield Wait(wait)
            pause = min(2 * pause, MAX_PAUSE)
    raise Unavailable(
        f"{call.method} {call.path}: no node answered within {timeout + call.extra_time:g} s"
        + (f" ({'; '.join(tried[-len(addrs.urls):])})" if tried else "")
    )


def interpret(call: Call[Any], status: int, headers: Mapping[str, str], content: bytes) -> Any:
    """The result of an answer, or its error raised."""
    if 200 <= status < 300:
        if call.raw:
            return content
        try:
            value = loads(content) if content else None
        except ValueError as exc:
            raise Internal(f"{call.method} {call.path}: answer is not JSON: {exc}", status=status) from None
        return call.decode(value) if call.decode else value
    try:
        body = loads(content) if content else None
    except ValueError:
        body = None
    raise from_response(
        status,
        body,
        retry_after=_retry_after(headers),
        idempotency_key=call.idempotency_key if call.write else None,
    )


def _url(base: str, call: Call[Any]) -> str:
    return base + call.path + ("?" + urlencode(call.query) if call.query else "")


def _headers(call: Call[Any], base: Mapping[str, str], remaining: float) -> dict[str, str]:
    out = dict(base)
    margin = min(MAX_MARGIN, remaining * MARGIN_SHARE)
    out["Request-Timeout"] = str(max(1, min(MAX_SERVER_TIMEOUT_MS, int((remaining - margin) * 1000))))
    if call.body is not None:
        out["Content-Type"] = "application/json"
    if call.key_header and call.idempotency_key:
        out["Idempotency-Key"] = call.idempotency_key
    return out


def _retry_after(headers: Mapping[str, str]) -> float | None:
    try:
        return float(headers["Retry-After"])
    except (KeyError, ValueError):
        return None


def _advice(key: str | None) -> str:
    if key:
        return f"retry with the same idempotency key {key!r} to learn the outcome"
    return "send the same request again to learn the outcome"


class Readiness:
    """The cluster's enabled commands, read once and checked per call.

    A requirement is ``domain``, ``domain.command`` or
    ``domain.command@version``; a command matches by its full name or
    without its first word (``capacity_acquire`` is ``acquire``), as
    ``/readyz?require=`` judges it.
    """

    def __init__(self) -> None:
        self.enabled: dict[str, dict[str, int]] | None = None
        self.read_at = 0.0

    def needs_read(self, requires: Sequence[str]) -> bool:
        """Whether capabilities must be read (again) before the call."""
        if not requires:
            return False
        if self.enabled is None:
            return True
        return bool(self.missing(requires)) and time.monotonic() - self.read_at > READINESS_REFRESH

    def update(self, caps: Any) -> None:
        """Take a ``/v1/cluster/capabilities`` answer."""
        enabled: dict[str, dict[str, int]] = {}
        for d in caps.get("enabled", {}).get("domains", []) or []:
            cmds = enabled.setdefault(d["name"], {})
            for c in d.get("commands", []) or []:
                for name in {c["name"], c["name"].split("_", 1)[-1]}:
                    cmds[name] = max(cmds.get(name, 0), int(c["version"]))
        self.enabled, self.read_at = enabled, time.monotonic()

    def missing(self, requires: Sequence[str]) -> list[str]:
        """The requirements the enabled set does not meet."""
        enabled = self.enabled or {}
        out = []
        for req in requires:
            name, _, version = req.partition("@")
            domain, _, command = name.partition(".")
            cmds = enabled.get(domain)
            if cmds is None or command and cmds.get(command, 0) < int(version or 1):
                out.append(req)
        return out

    def check(self, requires: Sequence[str]) -> None:
        """Raise :class:`NotReady` naming what the cluster lacks."""
        missing = self.missing(requires)
        if missing:
            raise NotReady(
                "incompatible deployment: the cluster does not enable "
                + ", ".join(missing)
                + " (GET /v1/cluster/capabilities lists what it enables)",
                detail={"missing": missing},
            )


@dataclass
class Settings:
    """What both transports are configured with."""

    addrs: Addresses
    headers: dict[str, str]
    timeout: float
    connect_timeout: float
    retry_timeout: float = 0.0


class SyncTransport:
    """Runs calls with an ``httpx.Client`` (keep-alive connections)."""

    def __init__(self, settings: Settings, http: httpx.Client, readiness: Readiness) -> None:
        self.settings, self.http, self.readiness = settings, http, readiness

    def run(self, call: Call[Any]) -> Any:
        """The call's result; its error raised (and, with a retry
        timeout, the same call sent again while :func:`retryable`)."""
        if not self.settings.retry_timeout:
            return self._once(call)
        return retry(functools.partial(self._once, call), timeout=self.settings.retry_timeout)

    def _once(self, call: Call[Any]) -> Any:
        try:
            if self.readiness.needs_read(call.requires):
                self.readiness.update(self._execute(CAPABILITIES))
            self.readiness.check(call.requires)
            return self._execute(call)
        except ArbiterError as err:
            err.call = call
            raise

    def _execute(self, call: Call[Any]) -> Any:
        s = self.settings
        steps = exchange(call, s.addrs, s.headers, s.timeout, s.connect_timeout)
        reply: Reply = None
        while True:  # ends when exchange does: at most MAX_ATTEMPTS sends
            try:
                step = steps.send(reply)
            except StopIteration as done:
                return done.value
            if isinstance(step, Wait):
                time.sleep(step.seconds)
                reply = None
                continue
            try:
                reply = self.http.request(
                    step.method, step.url, headers=step.headers, content=step.content, timeout=step.timeout
                )
            except httpx.RequestError as exc:
                reply = exc


class AsyncTransport:
    """Runs calls with an ``httpx.AsyncClient`` (keep-alive connections)."""

    def __init__(self, settings: Settings, http: httpx.AsyncClient, readiness: Readiness) -> None:
        self.settings, self.http, self.readiness = settings, http, readiness

    async def run(self, call: Call[Any]) -> Any:
        """The call's result; its error raised (and, with a retry
        timeout, the same call sent again while :func:`retryable`)."""
        if not self.settings.retry_timeout:
            return await self._once(call)
        return await retry_async(functools.partial(self._once, call), timeout=self.settings.retry_timeout)

    async def _once(self, call: Call[Any]) -> Any:
        try:
            if self.readiness.needs_read(call.requires):
                self.readiness.update(await self._execute(CAPABILITIES))
            self.readiness.check(call.requires)
            return await self._execute(call)
        except ArbiterError as err:
            err.call = call
            raise

    async def _execute(self, call: Call[Any]) -> Any:
        s = self.settings
        steps = exchange(call, s.addrs, s.headers, s.timeout, s.connect_timeout)
        reply: Reply = None
        while True:  # ends when exchange does: at most MAX_ATTEMPTS sends
            try:
                step = steps.send(reply)
            except StopIteration as done:
                return done.value
            if isinstance(step, Wait):
                await asyncio.sleep(step.seconds)
                reply = None
                continue
            try:
                reply = await self.http.request(
                    step.method, step.url, headers=step.headers, content=step.content, timeout=step.timeout
                )
            except httpx.RequestError as exc:
                reply = exc

