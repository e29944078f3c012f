"""Capacity leases (``/v1/capacity``): amounts of resource classes on many
cells at once, all or nothing, fenced per lease, expiring by the log's
clock.

Every request says ``schema_version: "1"`` (filled in here) and names its
tenant and, optionally, a graph inside it. ``owner_digest`` must be the
caller's own (``client.cluster.whoami()["owner_digest"]``; in open mode
any, e.g. :func:`arbiter_client.owner_digest` of a name). A denial
raises the error of its decision (:class:`~arbiter_client.Exhausted`,
:class:`~arbiter_client.StaleFence`, ...) with the result in
``err.result``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .call import Call, Domain, M, endpoint, fields, new_key, post_read, write
from .types import (
    AcquireResult,
    CapacityPage,
    CapacityReclaimResult,
    CellResult,
    Demand,
    Lease,
    LeaseRef,
    LeasesResult,
)

__all__ = ["CapacityLeases", "lease_ref", "lease_refs"]

SCHEMA_VERSION = "1"


def lease_ref(lease: Lease | LeaseRef) -> LeaseRef:
    """What a renew or release presents of a lease (its id, epoch, fence)."""
    return {"lease_id": lease["lease_id"], "lease_epoch": lease["lease_epoch"], "fence_token": lease["fence_token"]}


def lease_refs(result: AcquireResult | LeasesResult) -> list[LeaseRef]:
    """The references of a result's leases: present them next (a renewal
    advances each epoch)."""
    return [lease_ref(lease) for lease in result["leases"]]


def _needs(command: str, graph_ref: str | None) -> tuple[str, ...]:
    # A graph other than the default needs acquire v3, the others v2.
    if graph_ref and graph_ref != "default":
        return (f"capacity.{command}@{3 if command == 'acquire' else 2}",)
    return (f"capacity.{command}",)


def _body(tenant_ref: str, graph_ref: str | None, **rest: Any) -> dict[str, Any]:
    return fields(schema_version=SCHEMA_VERSION, tenant_ref=tenant_ref, graph_ref=graph_ref, **rest)


class CapacityLeases(Domain[M]):
    """``client.capacity_leases``: acquire, renew, release, reclaim,
    reconcile, status and update_cell."""

    @endpoint
    def acquire(
        self,
        *,
        tenant_ref: str,
        work_item_id: str,
        owner_digest: str,
        demands: Sequence[Demand],
        ttl_ms: int,
        priority: int = 0,
        graph_ref: str | None = None,
        lease_id: str | None = None,
        cost_budget_micros: int | None = None,
        token_budget: int | None = None,
        idempotency_key: str | None = None,
    ) -> Call[AcquireResult]:
        """Lease every demand (at most 16) or none.

        A retry under the same ``idempotency_key`` replays a grant.
        """
        key = idempotency_key or new_key()
        body = _body(tenant_ref, graph_ref, work_item_id=work_item_id, owner_digest=owner_digest,
                     idempotency_key=key, priority=priority, demands=[dict(d) for d in demands],
                     lease_id=lease_id, ttl_ms=ttl_ms, cost_budget_micros=cost_budget_micros,
                     token_budget=token_budget)
        return write("POST", "/v1/capacity/acquire", body, requires=_needs("acquire", graph_ref), key=key)

    @endpoint
    def renew(
        self,
        *,
        tenant_ref: str,
        owner_digest: str,
        leases: Sequence[LeaseRef],
        ttl_ms: int | None = None,
        graph_ref: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[LeasesResult]:
        """Extend every lease (at most 16) or none; each epoch advances.
        ``ttl_ms`` omitted: each lease's own TTL."""
        key = idempotency_key or new_key()
        body = _body(tenant_ref, graph_ref, owner_digest=owner_digest, leases=[lease_ref(x) for x in leases],
                     ttl_ms=ttl_ms, idempotency_key=key)
        return write("POST", "/v1/capacity/renew", body, requires=_needs("renew", graph_ref), key=key)

    @endpoint
    def release(
        self,
        *,
        tenant_ref: str,
        owner_digest: str,
        leases: Sequence[LeaseRef],
        graph_ref: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[LeasesResult]:
        """End every lease (at most 16) or none, freeing its amounts."""
        key = idempotency_key or new_key()
        body = _body(tenant_ref, graph_ref, owner_digest=owner_digest, leases=[lease_ref(x) for x in leases],
                     idempotency_key=key)
        return write("POST", "/v1/capacity/release", body, requires=_needs("release", graph_ref), key=key)

    @endpoint
    def reclaim(
        self,
        *,
        tenant_ref: str,
        max_count: int = 128,
        cell_id: str | None = None,
        cursor: str | None = None,
        graph_ref: str | None = None,
    ) -> Call[CapacityReclaimResult]:
        """End up to ``max_count`` (1..128) expired leases; go on with
        ``next_cursor``. Safe to repeat: an ended lease is not reclaimed
        twice."""
        body = _body(tenant_ref, graph_ref, cell_id=cell_id, max_count=max_count, cursor=cursor)
        return write("POST", "/v1/capacity/reclaim", body, requires=_needs("reclaim", graph_ref))

    @endpoint
    def reconcile(
        self,
        *,
        tenant_ref: str,
        max_count: int = 128,
        cell_id: str | None = None,
        lease_id: str | None = None,
        cursor: str | None = None,
        graph_ref: str | None = None,
    ) -> Call[CapacityPage]:
        """One page of the tenant's cells and leases as the cluster holds
        them: what a local mirror reconciles against."""
        body = _body(tenant_ref, graph_ref, cell_id=cell_id, lease_id=lease_id, max_count=max_count, cursor=cursor)
        return post_read("/v1/capacity/reconcile", body, requires=("capacity",))

    @endpoint
    def status(
        self,
        *,
        tenant_ref: str,
        max_count: int = 128,
        cell_id: str | None = None,
        lease_id: str | None = None,
        cursor: str | None = None,
        graph_ref: str | None = None,
    ) -> Call[CapacityPage]:
        """One page of cells and leases (as ``reconcile``)."""
        body = _body(tenant_ref, graph_ref, cell_id=cell_id, lease_id=lease_id, max_count=max_count, cursor=cursor)
        return post_read("/v1/capacity/status", body, requires=("capacity",))

    @endpoint
    def update_cell(
        self,
        cell_id: str,
        capacities: Mapping[str, int],
        *,
        tenant_ref: str,
        expected_epoch: int | None = None,
        graph_ref: str | None = None,
    ) -> Call[CellResult]:
        """Set a cell's capacity per class (controller role); never below
        its use. ``expected_epoch`` guards against a concurrent change."""
        body = _body(tenant_ref, graph_ref, cell={"cell_id": cell_id, "capacities": dict(capacities)},
                     expected_epoch=expected_epoch)
        return write("POST", "/v1/capacity/cells", body, requires=_needs("update_cell", graph_ref))
