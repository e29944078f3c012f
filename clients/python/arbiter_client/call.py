"""A call of the HTTP API, described as data, and the one way domains
declare their operations.

Each operation of a domain is written once, as a method that *builds* a
:class:`Call` (method, path, query, body, idempotency key, the commands it
needs) and decorated with :class:`endpoint`. Bound to a domain of a
:class:`~arbiter_client.Client` the method runs the call and returns its
result; bound to one of an :class:`~arbiter_client.AsyncClient` it returns
an awaitable of it. Type checkers see both (``Domain[Sync]`` and
``Domain[Async]``), so the sync and async surfaces cannot drift apart.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from typing import (
    Any,
    Awaitable,
    Callable,
    Concatenate,
    Generic,
    Mapping,
    ParamSpec,
    Protocol,
    TypeVar,
    overload,
)
from urllib.parse import quote

__all__ = ["Call", "Domain", "Sync", "Async", "endpoint", "new_key"]

P = ParamSpec("P")
T = TypeVar("T")
M = TypeVar("M", bound="Mode")


class Mode:
    """Marker of how a domain's calls run: :class:`Sync` or :class:`Async`."""


class Sync(Mode):
    """Calls return their results."""


class Async(Mode):
    """Calls return awaitables of their results."""


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request of the HTTP API and how to read its answer.

    ``write`` marks a mutation: a lost answer after sending it is an
    :class:`~arbiter_client.errors.OutcomeUnknown` carrying
    ``idempotency_key``; a read is tried on the next address instead.
    ``requires`` are the commands the cluster must enable
    (``domain.command[@version]``, as ``/readyz?require=`` takes them).
    ``extra_time`` adds seconds to the client's deadline (a long poll).
    ``raw`` returns the answer's bytes instead of its JSON; ``decode``, if
    set, maps the decoded JSON to the result.
    """

    method: str
    path: str
    query: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    write: bool = False
    idempotency_key: str | None = None
    key_header: bool = False
    requires: tuple[str, ...] = ()
    extra_time: float = 0.0
    raw: bool = False
    decode: Callable[[Any], T] | None = None


def new_key() -> str:
    """A fresh idempotency key (random, 128 bits)."""
    return "py-" + uuid.uuid4().hex


def path(*segments: str | int) -> str:
    """``/v1/...`` from segments, each escaped (a slug or an id may hold
    any character)."""
    return "/v1/" + "/".join(quote(str(s), safe="") for s in segments)


def fields(**values: Any) -> dict[str, Any]:
    """A JSON object of the values that are not ``None`` (absent fields
    keep the server's defaults)."""
    return {k: v for k, v in values.items() if v is not None}


def query(**values: Any) -> dict[str, str]:
    """Query parameters of the values that are not ``None``."""
    out: dict[str, str] = {}
    for k, v in values.items():
        if v is None:
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def read(
    route: str, *, requires: tuple[str, ...] = (), decode: Callable[[Any], Any] | None = None, **params: Any
) -> Call[Any]:
    """A GET of ``route`` with query parameters (``None`` ones left out)."""
    return Call("GET", route, query=query(**params), requires=requires, decode=decode)


def write(
    method: str,
    route: str,
    body: Any,
    *,
    requires: tuple[str, ...],
    key: str | None = None,
    key_header: bool = False,
) -> Call[Any]:
    """A mutation. ``key`` is the idempotency key the body (or, with
    ``key_header``, the ``Idempotency-Key`` header) carries."""
    return Call(method, route, body=body, write=True, idempotency_key=key,
                key_header=key_header, requires=requires)


def post_read(route: str, body: Any, *, requires: tuple[str, ...] = ()) -> Call[Any]:
    """A POST that changes nothing (a query with a JSON body): safe to
    send to another address when an answer is lost."""
    return Call("POST", route, body=body, requires=requires)


class Runner(Protocol):
    """Runs calls: the client's transport."""

    def run(self, call: Call[Any]) -> Any:
        """The result of ``call`` (an awaitable of it when asynchronous)."""


class Domain(Generic[M]):
    """Base of the domain services (``client.capacity_leases``, ...)."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner


class endpoint(Generic[P, T]):
    """Decorator of a domain method that builds a :class:`Call`.

    On a ``Domain[Sync]`` the method returns the result; on a
    ``Domain[Async]`` an awaitable of it. ``Cls.method.build(self, ...)``
    is the builder itself (for helpers that compose several calls).
    """

    def __init__(self, build: Callable[Concatenate[Any, P], Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__
        self.__name__ = build.__name__

    @overload
    def __get__(self, obj: None, owner: Any) -> endpoint[P, T]: ...

    @overload
    def __get__(self, obj: Domain[Sync], owner: Any) -> Callable[P, T]: ...

    @overload
    def __get__(self, obj: Domain[Async], owner: Any) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, obj: Domain[Any] | None, owner: Any) -> Any:
        if obj is None:
            return self
        build, runner = self.build, obj._runner

        @functools.wraps(build)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return runner.run(build(obj, *args, **kwargs))

        return bound
