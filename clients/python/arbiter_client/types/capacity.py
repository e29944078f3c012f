"""Capacity leases."""

from __future__ import annotations

from typing import List, TypedDict

__all__ = [
    "Demand", "LeaseRef", "Lease", "Available", "AcquireResult", "LeasesResult",
    "CapacityReclaimResult", "CellStatus", "CapacityPage", "CellResult",
]


class _DemandBase(TypedDict):
    cell_id: str
    resource_class: str
    amount: int


class Demand(_DemandBase, total=False):
    """An amount of one resource class on one cell."""

    expected_epoch: int


class LeaseRef(TypedDict):
    """What a renew or release presents of a lease it holds."""

    lease_id: str
    lease_epoch: int
    fence_token: int


class _LeaseBase(TypedDict):
    lease_id: str
    tenant_ref: str
    cell_id: str
    resource_class: str
    amount: int
    owner_digest: str
    work_item_id: str
    priority: int
    lease_epoch: int
    fence_token: int
    cell_epoch: int
    state: str
    acquired_at_ms: int
    expires_at_ms: int
    renewals: int
    ttl_ms: int


class Lease(_LeaseBase, total=False):
    """A capacity lease (``lease_ref()`` gives what to present next)."""

    graph_ref: str
    ended_at_ms: int
    cost_budget_micros: int
    token_budget: int


class Available(TypedDict):
    """A cell's class: capacity, use and what is free."""

    cell_id: str
    resource_class: str
    capacity: int
    used: int
    free: int
    epoch: int


class _AcquireResultBase(TypedDict):
    schema_version: str
    decision: str
    leases: List[Lease]
    available: List[Available]
    message: str
    now_ms: int


class AcquireResult(_AcquireResultBase, total=False):
    """A grant: ``leases`` to present later (:func:`arbiter_client.lease_refs`)."""

    replayed: bool


class _LeasesResultBase(TypedDict):
    schema_version: str
    decision: str
    leases: List[Lease]
    message: str
    now_ms: int


class LeasesResult(_LeasesResultBase, total=False):
    """The leases a renew or release changed."""

    replayed: bool


class CapacityReclaimResult(TypedDict):
    """The leases a reclaim ended."""

    schema_version: str
    decision: str
    reclaimed_lease_ids: List[str]
    next_cursor: str
    now_ms: int


class _CellStatusBase(TypedDict):
    tenant_ref: str
    cell_id: str
    epoch: int
    last_fence: int
    classes: List[Available]
    updated_at_ms: int


class CellStatus(_CellStatusBase, total=False):
    """A capacity cell: its epoch, last fence and classes."""

    graph_ref: str


class CapacityPage(TypedDict):
    """A status or reconcile page."""

    schema_version: str
    cells: List[CellStatus]
    leases: List[Lease]
    next_cursor: str
    now_ms: int


class CellResult(TypedDict):
    """The cell an update left."""

    schema_version: str
    decision: str
    cell: CellStatus
    message: str
    now_ms: int
