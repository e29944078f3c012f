"""Allocation (``/v1/spaces``): the first writer of a conflict key (kind,
target, delivery mode) in a space, tasks and their lifecycle, windows of
proposals, reservations of keys, post-review notes, supersession.

A loser is :class:`~arbiter_client.AllocationConflict` (a
:class:`~arbiter_client.Conflict`) carrying the spec's flat body
(``err.body["winner"]``, ``["code"]``, ``["write_occurred"]``). Creates,
notes and windows carry an ``Idempotency-Key`` (generated unless given):
a retry answers the original body.
"""

from __future__ import annotations

from typing import Sequence

from .call import Call, Domain, M, endpoint, fields, new_key, path, post_read, read, write
from .types import (
    AllocationReservationPage,
    AllocationReservationResult,
    BindResult,
    CatalogRow,
    DropResult,
    DuplicatePage,
    NotePage,
    NoteResult,
    Occupancy,
    OccupancyPage,
    Proposal,
    SpacePage,
    SpaceResult,
    TaskPage,
    TaskResult,
    WindowResult,
    Winner,
)

__all__ = ["Allocation"]


class Allocation(Domain[M]):
    """``client.allocation``: spaces, tasks, bind, windows, reservations,
    notes and supersede."""

    # ---- spaces ----

    @endpoint
    def put_space(
        self,
        slug: str,
        *,
        catalog: Sequence[CatalogRow],
        delivery_modes: Sequence[str] | None = None,
        window_ms: int | None = None,
        adhoc_slots: bool | None = None,
        tenant_ref: str | None = None,
        expected_version: int | None = None,
    ) -> Call[SpaceResult]:
        """Create or replace a space (controller role); its live tasks are
        rebound to the new catalog in the same command."""
        body = fields(tenant_ref=tenant_ref, catalog=[dict(r) for r in catalog],
                      delivery_modes=list(delivery_modes) if delivery_modes is not None else None,
                      window_ms=window_ms, adhoc_slots=adhoc_slots, expected_version=expected_version)
        return write("PUT", path("spaces", slug), body, requires=("allocation.put_space",))

    @endpoint
    def get_space(self, slug: str, *, consistency: str | None = None) -> Call[SpaceResult]:
        """``{"space": ...}``; another tenant's is :class:`~arbiter_client.NotFound`."""
        return read(path("spaces", slug), requires=("allocation",), consistency=consistency)

    @endpoint
    def list_spaces(
        self, *, after: str | None = None, limit: int | None = None, consistency: str | None = None
    ) -> Call[SpacePage]:
        """One page of the caller's tenants' spaces, by slug."""
        return read(path("spaces"), requires=("allocation",), after=after, limit=limit, consistency=consistency)

    @endpoint
    def bind(self, slug: str, title: str, *, work_item_id: str | None = None) -> Call[BindResult]:
        """Which catalog slot a title binds to (writes nothing)."""
        return post_read(path("spaces", slug, "bind"), fields(title=title, work_item_id=work_item_id),
                         requires=("allocation",))

    # ---- tasks ----

    @endpoint
    def create_task(
        self,
        slug: str,
        title: str,
        *,
        delivery_mode: str,
        work_item_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[TaskResult]:
        """Create a task holding its conflict key (201); a loser is
        :class:`~arbiter_client.AllocationConflict` naming the winner."""
        key = idempotency_key or new_key()
        body = fields(title=title, delivery_mode=delivery_mode, work_item_id=work_item_id)
        return write("POST", path("spaces", slug, "tasks"), body, requires=("allocation.create_task",),
                     key=key, key_header=True)

    @endpoint
    def get_task(self, slug: str, task_id: int, *, consistency: str | None = None) -> Call[TaskResult]:
        """``{"task": ...}``."""
        return read(path("spaces", slug, "tasks", task_id), requires=("allocation",), consistency=consistency)

    @endpoint
    def list_tasks(
        self,
        slug: str,
        *,
        status: str | None = None,
        include_superseded: bool | None = None,
        after: str | None = None,
        limit: int | None = None,
        consistency: str | None = None,
    ) -> Call[TaskPage]:
        """One page (``limit`` <= 128) of a space's tasks."""
        return read(path("spaces", slug, "tasks"), requires=("allocation",), status=status,
                    include_superseded=include_superseded, after=after, limit=limit, consistency=consistency)

    @endpoint
    def transition(
        self,
        slug: str,
        task_id: int,
        action: str,
        *,
        expected_version: int | None = None,
        assignee: str | None = None,
    ) -> Call[TaskResult]:
        """``claim``, ``assign``, ``submit``, ``review``, ``done``,
        ``reject``, ``withdraw`` or ``reopen`` a task;
        ``expected_version`` guards against a concurrent change."""
        body = fields(action=action, expected_version=expected_version, assignee=assignee)
        return write("POST", path("spaces", slug, "tasks", task_id, "transition"), body,
                     requires=("allocation.transition",))

    @endpoint
    def supersede(self, slug: str, task_id: int, *, surviving_task: int, reason: str) -> Call[TaskResult]:
        """Mark a duplicate superseded by ``surviving_task``, which inherits
        its keys (controller role)."""
        body = dict(surviving_task=surviving_task, reason=reason)
        return write("POST", path("spaces", slug, "tasks", task_id, "supersede"), body,
                     requires=("allocation.supersede",))

    @endpoint
    def hold(self, slug: str, task_id: int, hold: bool = True) -> Call[TaskResult]:
        """Put (or lift) a steward hold: the task keeps its key."""
        return write("POST", path("spaces", slug, "tasks", task_id, "hold"), {"hold": hold},
                     requires=("allocation.hold",))

    # ---- notes ----

    @endpoint
    def post_note(
        self,
        slug: str,
        task_id: int,
        body: str,
        *,
        criterion_index: int | None,
        delivery_mode: str,
        kind: str = "post_review_note",
        idempotency_key: str | None = None,
    ) -> Call[NoteResult]:
        """Post a note on a criterion of a task (201), first writer per
        key; a loser is :class:`~arbiter_client.AllocationConflict`."""
        key = idempotency_key or new_key()
        req = {"kind": kind, "criterion_index": criterion_index, "body": body, "delivery_mode": delivery_mode}
        return write("POST", path("spaces", slug, "tasks", task_id, "notes"), req,
                     requires=("allocation.post_note",), key=key, key_header=True)

    @endpoint
    def list_notes(
        self, slug: str, task_id: int, *, after: str | None = None, limit: int | None = None,
        consistency: str | None = None,
    ) -> Call[NotePage]:
        """One page of a task's notes."""
        return read(path("spaces", slug, "tasks", task_id, "notes"), requires=("allocation",), after=after,
                    limit=limit, consistency=consistency)

    # ---- windows and reservations ----

    @endpoint
    def window(
        self, slug: str, proposals: Sequence[Proposal], *, idempotency_key: str | None = None
    ) -> Call[WindowResult]:
        """Decide 1..128 proposals in one command, by (``received_seq``,
        payload digest): each result is a 201, 409 or 422 with its body."""
        key = idempotency_key or new_key()
        return write("POST", path("spaces", slug, "windows"), {"proposals": [dict(p) for p in proposals]},
                     requires=("allocation.window",), key=key, key_header=True)

    @endpoint
    def reserve(
        self, slug: str, proposal_id: str, title: str, *, delivery_mode: str, work_item_id: str | None = None
    ) -> Call[AllocationReservationResult]:
        """Reserve a key for a proposal (201) until it commits, aborts or
        expires; ``proposal_id`` identifies the request."""
        body = fields(proposal_id=proposal_id, title=title, delivery_mode=delivery_mode, work_item_id=work_item_id)
        return write("POST", path("spaces", slug, "reservations"), body, requires=("allocation.reserve",),
                     key=proposal_id)

    @endpoint
    def commit(self, slug: str, proposal_id: str, winner: Winner) -> Call[Occupancy]:
        """Commit a reservation to its winner (``{"type", "id"}``)."""
        return write("POST", path("spaces", slug, "reservations", proposal_id, "commit"), {"winner": dict(winner)},
                     requires=("allocation.commit",), key=proposal_id)

    @endpoint
    def abort(self, slug: str, proposal_id: str) -> Call[DropResult]:
        """Drop a live reservation."""
        return write("POST", path("spaces", slug, "reservations", proposal_id, "abort"), None,
                     requires=("allocation.abort",), key=proposal_id)

    @endpoint
    def release(self, slug: str, proposal_id: str) -> Call[DropResult]:
        """Drop a committed reservation."""
        return write("POST", path("spaces", slug, "reservations", proposal_id, "release"), None,
                     requires=("allocation.release",), key=proposal_id)

    @endpoint
    def list_reservations(
        self, slug: str, *, after: str | None = None, limit: int | None = None, consistency: str | None = None
    ) -> Call[AllocationReservationPage]:
        """Live and committed reservations, by proposal id."""
        return read(path("spaces", slug, "reservations"), requires=("allocation",), after=after, limit=limit,
                    consistency=consistency)

    @endpoint
    def occupancy(
        self, slug: str, *, after: str | None = None, limit: int | None = None, consistency: str | None = None
    ) -> Call[OccupancyPage]:
        """Every key held now and its holder."""
        return read(path("spaces", slug, "occupancy"), requires=("allocation",), after=after, limit=limit,
                    consistency=consistency)

    @endpoint
    def duplicates(
        self, slug: str, *, after: str | None = None, limit: int | None = None, consistency: str | None = None
    ) -> Call[DuplicatePage]:
        """Tasks that want a key another holds, for a steward to supersede."""
        return read(path("spaces", slug, "duplicates"), requires=("allocation",), after=after, limit=limit,
                    consistency=consistency)


