"""``Client`` and ``AsyncClient``: the same surface, sync and asyncio.

Both hold one pool of keep-alive connections (httpx) to the cluster's
addresses, send every call through the one request path
(:mod:`arbiter_client.transport`) with a deadline, and expose a typed
service per domain.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import replace
from typing import Any, Awaitable, Generic, Sequence, TypeVar

import httpx

from .allocation import Allocation
from .call import Async, Call, Sync
from .capacity import CapacityLeases
from .cluster import Cluster
from .concepts import Concepts
from .errors import ArbiterError
from .nodes import Nodes
from .projection import Projection
from .reservations import Reservations
from .retry import DEFAULT_RETRY_TIMEOUT
from .transport import CAPABILITIES, Addresses, AsyncTransport, Readiness, Settings, SyncTransport
from .work_items import WorkItems

__all__ = ["Client", "AsyncClient", "DEFAULT_ADDR", "DEFAULT_TIMEOUT"]

DEFAULT_ADDR = "http://127.0.0.1:8000"
#: Seconds a call may take by default (the server's own default wait).
DEFAULT_TIMEOUT = 10.0
#: Seconds to wait for a connection before trying the next address.
DEFAULT_CONNECT_TIMEOUT = 2.0
USER_AGENT = "arbiter-client-python/0.1"

Tr = TypeVar("Tr", SyncTransport, AsyncTransport)


class _Base(Generic[Tr]):
    """What both clients share: configuration and views."""

    _transport: Tr
    nodes: Nodes[Any]
    concepts: Concepts[Any]
    capacity_leases: CapacityLeases[Any]
    work_items: WorkItems[Any]
    reservations: Reservations[Any]
    allocation: Allocation[Any]
    projection: Projection[Any]
    cluster: Cluster[Any]

    @staticmethod
    def _settings(
        addrs: str | Sequence[str] | None,
        token: str | None,
        ca: str | None,
        cert: str | tuple[str, str] | None,
        timeout: float,
        connect_timeout: float,
        trust_env: bool,
    ) -> tuple[Settings, dict[str, Any]]:
        if timeout <= 0 or connect_timeout <= 0:
            raise ValueError("timeout and connect_timeout must be positive: every call has a deadline")
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if token:
            headers["Authorization"] = "Bearer " + token
        settings = Settings(Addresses(addrs or DEFAULT_ADDR), headers, timeout, connect_timeout)
        http: dict[str, Any] = {"verify": _tls(ca, cert), "trust_env": trust_env, "timeout": timeout}
        return settings, http

    @staticmethod
    def _env() -> dict[str, Any]:
        key = os.environ.get("ARBITER_KEY")
        cert = os.environ.get("ARBITER_CERT")
        token = os.environ.get("ARBITER_TOKEN")
        if not token and os.environ.get("ARBITER_TOKEN_FILE"):
            with open(os.environ["ARBITER_TOKEN_FILE"], encoding="utf-8") as f:
                token = f.read().strip()
        return {
            "addrs": os.environ.get("ARBITER_ADDR") or DEFAULT_ADDR,
            "token": token,
            "ca": os.environ.get("ARBITER_CACERT"),
            "cert": (cert, key) if cert and key else cert,
        }

    def _attach(self, transport: Tr) -> None:
        self._transport = transport
        self.nodes = Nodes[Any](transport)
        self.concepts = Concepts[Any](transport)
        self.capacity_leases = CapacityLeases[Any](transport)
        self.work_items = WorkItems[Any](transport)
        self.reservations = Reservations[Any](transport)
        self.allocation = Allocation[Any](transport)
        self.projection = Projection[Any](transport)
        self.cluster = Cluster[Any](transport)

    def _require_call(self, names: Sequence[str]) -> Call[None]:
        readiness = self._transport.readiness

        def check(caps: Any) -> None:
            readiness.update(caps)
            readiness.check(names)

        return Call(CAPABILITIES.method, CAPABILITIES.path, decode=check)

    def _replay_call(self, err: ArbiterError) -> Call[Any]:
        if err.call is None:
            raise ValueError("this error carries no request to replay") from err
        call: Call[Any] = err.call
        return call


def _tls(ca: str | None, cert: str | tuple[str, str] | None) -> ssl.SSLContext | bool:
    """The TLS configuration of the connections: an SSLContext trusting
    ``ca`` (else the system's CAs) and presenting ``cert``, which every
    httpx from 0.23 on takes as ``verify``."""
    if not ca and not cert:
        return True
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        certfile, keyfile = (cert, None) if isinstance(cert, str) else cert
        ctx.load_cert_chain(certfile, keyfile)
    return ctx


class Client(_Base[SyncTransport]):
    """A synchronous client of an Arbiter cluster.

    ``addrs`` are the nodes' API URLs (a list or a comma-separated string;
    the next is tried while one cannot be reached). ``token`` is a
    principal's bearer token; ``ca`` the CA file of the nodes'
    certificates; ``cert`` a client certificate file (or ``(cert, key)``).
    Every call has a deadline of ``timeout`` seconds. Use it as a context
    manager, or :meth:`close` it.
    """

    nodes: Nodes[Sync]
    concepts: Concepts[Sync]
    capacity_leases: CapacityLeases[Sync]
    work_items: WorkItems[Sync]
    reservations: Reservations[Sync]
    allocation: Allocation[Sync]
    projection: Projection[Sync]
    cluster: Cluster[Sync]

    def __init__(
        self,
        addrs: str | Sequence[str] | None = None,
        *,
        token: str | None = None,
        ca: str | None = None,
        cert: str | tuple[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        trust_env: bool = False,
    ) -> None:
        settings, http = self._settings(addrs, token, ca, cert, timeout, connect_timeout, trust_env)
        self._http = httpx.Client(**http)
        self._owner = True
        self._attach(SyncTransport(settings, self._http, Readiness()))

    @classmethod
    def from_env(cls, **overrides: Any) -> Client:
        """A client configured as the ``arbiter`` command line is:
        ``ARBITER_ADDR``, ``ARBITER_TOKEN`` (or ``ARBITER_TOKEN_FILE``),
        ``ARBITER_CACERT``, ``ARBITER_CERT`` and ``ARBITER_KEY``."""
        return cls(**{**cls._env(), **overrides})

    def _view(self, **changes: Any) -> Client:
        view = Client.__new__(Client)
        view._http, view._owner = self._http, False
        t = self._transport
        view._attach(SyncTransport(replace(t.settings, **changes), self._http, t.readiness))
        return view

    def with_timeout(self, seconds: float) -> Client:
        """A view of this client (same connections) whose calls have a
        deadline of ``seconds``."""
        if seconds <= 0:
            raise ValueError("a deadline must be positive")
        return self._view(timeout=seconds)

    def with_retry(self, timeout: float = DEFAULT_RETRY_TIMEOUT) -> Client:
        """A view of this client whose calls are sent again, the same
        request with the same idempotency key, while the outcome is unknown
        or the cluster unavailable, for up to ``timeout`` seconds."""
        return self._view(retry_timeout=timeout)

    def replay(self, err: ArbiterError, *, timeout: float = DEFAULT_RETRY_TIMEOUT) -> Any:
        """Send the request that failed with ``err`` (an
        :class:`~arbiter_client.OutcomeUnknown`) again, with the same
        idempotency key, until its outcome is known: its result."""
        return self.with_retry(timeout)._transport.run(self._replay_call(err))

    def require(self, *names: str) -> None:
        """Read the cluster's capabilities now and raise
        :class:`~arbiter_client.NotReady` unless it enables every command
        named (``capacity.acquire``, ``workitem.submit@3``, ``projection``)."""
        self._transport.run(self._require_call(names))

    def close(self) -> None:
        """Close the connections (a view leaves them to its client)."""
        if self._owner:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Base[AsyncTransport]):
    """The asyncio client: the same surface as :class:`Client`, every call
    awaitable (``async with AsyncClient(...) as client``)."""

    nodes: Nodes[Async]
    concepts: Concepts[Async]
    capacity_leases: CapacityLeases[Async]
    work_items: WorkItems[Async]
    reservations: Reservations[Async]
    allocation: Allocation[Async]
    projection: Projection[Async]
    cluster: Cluster[Async]

    def __init__(
        self,
        addrs: str | Sequence[str] | None = None,
        *,
        token: str | None = None,
        ca: str | None = None,
        cert: str | tuple[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        trust_env: bool = False,
    ) -> None:
        settings, http = self._settings(addrs, token, ca, cert, timeout, connect_timeout, trust_env)
        self._http = httpx.AsyncClient(**http)
        self._owner = True
        self._attach(AsyncTransport(settings, self._http, Readiness()))

    @classmethod
    def from_env(cls, **overrides: Any) -> AsyncClient:
        """As :meth:`Client.from_env`."""
        return cls(**{**cls._env(), **overrides})

    def _view(self, **changes: Any) -> AsyncClient:
        view = AsyncClient.__new__(AsyncClient)
        view._http, view._owner = self._http, False
        t = self._transport
        view._attach(AsyncTransport(replace(t.settings, **changes), self._http, t.readiness))
        return view

    def with_timeout(self, seconds: float) -> AsyncClient:
        """As :meth:`Client.with_timeout`."""
        if seconds <= 0:
            raise ValueError("a deadline must be positive")
        return self._view(timeout=seconds)

    def with_retry(self, timeout: float = DEFAULT_RETRY_TIMEOUT) -> AsyncClient:
        """As :meth:`Client.with_retry`."""
        return self._view(retry_timeout=timeout)

    def replay(self, err: ArbiterError, *, timeout: float = DEFAULT_RETRY_TIMEOUT) -> Awaitable[Any]:
        """As :meth:`Client.replay`."""
        result: Awaitable[Any] = self.with_retry(timeout)._transport.run(self._replay_call(err))
        return result

    async def require(self, *names: str) -> None:
        """As :meth:`Client.require`."""
        await self._transport.run(self._require_call(names))

    async def aclose(self) -> None:
        """Close the connections (a view leaves them to its client)."""
        if self._owner:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
