"""Host resource reservation (``/v1/workitems/...``): a claimed work item
reserves a shared host (capacity in four dimensions, labels, disk
watermark, exclusivity, concurrency, fairness) in the same command that
checks its claim's attempt and fence.

The item carries its admission assertion from submit on, in
``metadata["resource_reservation"]``: build it with
:func:`arbiter_client.seal_reservation`. A refusal is
:class:`~arbiter_client.Conflict` with ``detail["reason"]``
(``capacity``, ``no_eligible_host``, ``branch_exclusive``, ...). Each
call is identified by what it names (the claim's attempt and fence, a
telemetry ``report_seq``, a host's ``expected_epoch``), so a repeat after
an unknown outcome is safe.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .call import Call, Domain, M, endpoint, fields, post_read, read, write
from .types import (
    Dimensions,
    HostPage,
    HostResult,
    ItemResult,
    Profiles,
    ReservationQueryResult,
    ReservationReclaimResult,
    ReservationResult,
)

__all__ = ["Reservations"]


class Reservations(Domain[M]):
    """``client.reservations``: put_host, telemetry, hosts, reserve,
    release, reclaim, query, profiles, set_profiles and
    rewrite_extension."""

    @endpoint
    def put_host(
        self,
        host_id: str,
        *,
        capacity: Dimensions,
        labels: Mapping[str, str] | None = None,
        expected_epoch: int | None = None,
    ) -> Call[HostResult]:
        """Add or change a shared host (controller of every tenant);
        ``created`` for a new one. Another epoch is
        :class:`~arbiter_client.StaleEpoch`."""
        body = fields(host_id=host_id, labels=dict(labels or {}), capacity=dict(capacity),
                      expected_epoch=expected_epoch)
        return write("POST", "/v1/workitems/hosts", body, requires=("workitem.host_put",))

    @endpoint
    def telemetry(self, host_id: str, *, report_seq: int, disk_free_mib: int) -> Call[HostResult]:
        """Report a host's free disk; ``report_seq`` must rise (else
        :class:`~arbiter_client.Conflict`, ``stale_report``)."""
        body = dict(host_id=host_id, report_seq=report_seq, disk_free_mib=disk_free_mib)
        return write("POST", "/v1/workitems/hosts/telemetry", body, requires=("workitem.host_telemetry",))

    @endpoint
    def hosts(
        self,
        *,
        tenant_ref: str,
        after: str | None = None,
        limit: int | None = None,
        consistency: str | None = None,
    ) -> Call[HostPage]:
        """One page (``limit`` 1..128, default 128) of the shared hosts in
        host_id order, each with its use, what is free and its telemetry
        age (-1: never reported); pass ``next_cursor`` as ``after`` for the
        next page (``""`` on the last). Any reader of ``tenant_ref`` reads
        every host."""
        return read("/v1/workitems/hosts", requires=("workitem.host_put",), tenant_ref=tenant_ref, after=after,
                    limit=limit, consistency=consistency)

    @endpoint
    def reserve(
        self, *, tenant_ref: str, work_item_id: str, attempt: int, fence: int, host_id: str | None = None
    ) -> Call[ReservationResult]:
        """Reserve a host for this claim (the one named, or the eligible
        host with the most free weighted capacity). The same claim again
        answers its reservation, unchanged."""
        body = fields(tenant_ref=tenant_ref, work_item_id=work_item_id, attempt=attempt, fence=fence,
                      host_id=host_id)
        return write("POST", "/v1/workitems/reserve", body, requires=("workitem.reserve",))

    @endpoint
    def release(
        self, *, tenant_ref: str, work_item_id: str, attempt: int, fence: int, reservation_id: str
    ) -> Call[ReservationResult]:
        """End a reservation before its claim ends; an ended one answers
        unchanged."""
        body = dict(tenant_ref=tenant_ref, work_item_id=work_item_id, attempt=attempt, fence=fence,
                    reservation_id=reservation_id)
        return write("POST", "/v1/workitems/release", body, requires=("workitem.release",))

    @endpoint
    def reclaim(
        self,
        *,
        max_count: int = 128,
        tenant_ref: str | None = None,
        host_id: str | None = None,
        cursor: str | None = None,
    ) -> Call[ReservationReclaimResult]:
        """End reservations whose claim expired (at most ``8 x max_count``
        examined; go on with ``next_cursor``)."""
        body = fields(tenant_ref=tenant_ref, host_id=host_id, max_count=max_count, cursor=cursor)
        return write("POST", "/v1/workitems/reclaim", body, requires=("workitem.reservation_reclaim",))

    @endpoint
    def query(
        self,
        *,
        tenant_ref: str,
        max_count: int = 128,
        work_item_id: str | None = None,
        host_id: str | None = None,
        cursor: str | None = None,
    ) -> Call[ReservationQueryResult]:
        """One page across reservations, hosts (with use, free and
        telemetry age) and fairness debts."""
        body = fields(tenant_ref=tenant_ref, work_item_id=work_item_id, host_id=host_id, max_count=max_count,
                      cursor=cursor)
        return post_read("/v1/workitems/reservations/query", body, requires=("workitem.reserve",))

    @endpoint
    def profiles(self, *, consistency: str | None = None) -> Call[Profiles]:
        """The reservation profile set."""
        return read("/v1/workitems/profiles", requires=("workitem.profiles_set",), consistency=consistency)

    @endpoint
    def set_profiles(self, profiles: Sequence[Mapping[str, Any]]) -> Call[Profiles]:
        """Replace the whole profile set (admin; at most 64)."""
        body = {"profiles": [dict(p) for p in profiles]}
        return write("PUT", "/v1/workitems/profiles", body, requires=("workitem.profiles_set",))

    @endpoint
    def rewrite_extension(
        self, *, tenant_ref: str, work_item_id: str, fence: int, extension: Mapping[str, Any]
    ) -> Call[ItemResult]:
        """Set the record of an item that has none (admin), with the item's
        exact current fence (0 if never claimed)."""
        body = dict(tenant_ref=tenant_ref, work_item_id=work_item_id, fence=fence, extension=dict(extension))
        return write("POST", "/v1/workitems/extension", body, requires=("workitem.extension_rewrite",))
