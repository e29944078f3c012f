"""The cluster itself: status, capabilities, members, readiness, who the
caller is, and the change feed (``/v1/changes``) as an iterator."""

from __future__ import annotations

import inspect
from typing import Any, AsyncIterator, Callable, Iterator, Sequence, overload

from .call import Async, Call, Domain, M, Sync, endpoint, read
from .types import CapabilitiesResult, ChangeEvent, ChangesPage, Member, Ready, Status, Whoami

__all__ = ["Cluster", "MAX_WAIT_MS", "MAX_PAGE"]

#: Bounds of one change-feed request (the server's).
MAX_WAIT_MS = 30_000
MAX_PAGE = 1024


def _members(status: Any) -> list[Member]:
    members: list[Member] = status["members"]
    return members


class Cluster(Domain[M]):
    """``client.cluster``: status, capabilities, members, ready, whoami,
    changes_page and changes."""

    @endpoint
    def status(self) -> Call[Status]:
        """The answering node's view: leader, term, indexes, members,
        enabled commands, storage, effects."""
        return read("/v1/cluster/status")

    @endpoint
    def capabilities(self, *, consistency: str | None = None) -> Call[CapabilitiesResult]:
        """What the cluster enables and what this node's binary serves."""
        return read("/v1/cluster/capabilities", consistency=consistency)

    @endpoint
    def members(self) -> Call[list[Member]]:
        """The members: id, raft and API address, voter, what each serves."""
        return read("/v1/cluster/status", decode=_members)

    @endpoint
    def ready(self, require: Sequence[str] = ()) -> Call[Ready]:
        """``/readyz`` of a node: raises :class:`~arbiter_client.NotReady`
        naming what the cluster does not enable of ``require``
        (``domain.command[@version]``), or
        :class:`~arbiter_client.Unavailable` while the node is not caught
        up, has no leader or halted."""
        return read("/readyz", require=",".join(require) if require else None)

    @endpoint
    def whoami(self) -> Call[Whoami]:
        """The principal the caller's credential names and its
        ``owner_digest`` (what capacity's ``owner_digest`` must be)."""
        return read("/v1/auth/whoami")

    @endpoint
    def changes_page(
        self,
        *,
        after: int = 0,
        limit: int = 256,
        wait_ms: int = 0,
        include_values: bool = False,
        consistency: str | None = None,
    ) -> Call[ChangesPage]:
        """One page of the change feed after sequence ``after`` (at most
        ``limit``, 1..1024 events); with ``wait_ms`` (<= 30000) the
        server holds an empty page that long for a change. A pruned
        cursor is :class:`~arbiter_client.CursorExpired`."""
        c = read("/v1/changes", after=after, limit=limit, wait_ms=wait_ms or None,
                 include_values=include_values or None, consistency=consistency)
        return Call(c.method, c.path, query=c.query, extra_time=wait_ms / 1000)

    @overload
    def changes(
        self: Cluster[Sync], *, after: int = 0, limit: int = 256, wait_ms: int = 10_000,
        include_values: bool = False, follow: bool = True,
    ) -> Iterator[ChangeEvent]: ...

    @overload
    def changes(
        self: Cluster[Async], *, after: int = 0, limit: int = 256, wait_ms: int = 10_000,
        include_values: bool = False, follow: bool = True,
    ) -> AsyncIterator[ChangeEvent]: ...

    def changes(
        self, *, after: int = 0, limit: int = 256, wait_ms: int = 10_000,
        include_values: bool = False, follow: bool = True,
    ) -> Any:
        """Every committed change after sequence ``after``, in order: an
        iterator (``async for`` on an :class:`~arbiter_client.AsyncClient`).

        Pages hold at most ``limit`` events. With ``follow`` (the default)
        it is a stream: it long-polls ``wait_ms`` at a time for new
        changes until the caller stops iterating (``break``); without, it
        ends at the feed's end.
        """
        if not 1 <= limit <= MAX_PAGE or not 0 <= wait_ms <= MAX_WAIT_MS:
            raise ValueError(f"limit must be 1..{MAX_PAGE} and wait_ms 0..{MAX_WAIT_MS}")

        def page(cursor: int) -> Call[ChangesPage]:
            return Cluster.changes_page.build(self, after=cursor, limit=limit, wait_ms=wait_ms if follow else 0,
                                              include_values=include_values)

        if inspect.iscoroutinefunction(self._runner.run):
            return _follow_async(self._runner.run, page, after, follow)
        return _follow(self._runner.run, page, after, follow)


def _done(page: ChangesPage, cursor: int, follow: bool) -> bool:
    # Without follow: the end is reached once the cursor caught up with
    # the feed (or stopped moving: nothing more this caller may see).
    return not follow and (page["next"] >= page["last_seq"] or page["next"] == cursor)


def _follow(run: Callable[[Call[Any]], Any], page: Callable[[int], Call[ChangesPage]], after: int,
            follow: bool) -> Iterator[ChangeEvent]:
    while True:  # one bounded page per turn; ends at the feed's end unless following
        got: ChangesPage = run(page(after))
        yield from got["events"]
        done, after = _done(got, after, follow), got["next"]
        if done:
            return


async def _follow_async(run: Callable[[Call[Any]], Any], page: Callable[[int], Call[ChangesPage]], after: int,
                        follow: bool) -> AsyncIterator[ChangeEvent]:
    while True:  # one bounded page per turn; ends at the feed's end unless following
        got: ChangesPage = await run(page(after))
        for event in got["events"]:
            yield event
        done, after = _done(got, after, follow), got["next"]
        if done:
            return
