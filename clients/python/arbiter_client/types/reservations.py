"""Host resource reservation."""

from __future__ import annotations

from typing import Dict, List, TypedDict

from .json import JSONObject

__all__ = [
    "Dimensions", "ProfileRef", "ConcurrencySpec", "ExclusivitySpec", "FairnessSpec",
    "DiskPolicy", "ReservationRecord", "Telemetry", "Host", "HostResult", "HostStatus",
    "ReservationKeys", "Reservation", "ReservationResult", "ReservationReclaimResult", "Debt",
    "ReservationQueryResult", "HostPage", "Profiles",
]


class Dimensions(TypedDict):
    """The four dimensions of host capacity."""

    cpu_millis: int
    memory_mib: int
    disk_mib: int
    processes: int


class ProfileRef(TypedDict):
    """A reservation profile's name and version."""

    name: str
    version: str


class ConcurrencySpec(TypedDict):
    """A concurrency key and the limit its holders share."""

    key: str
    limit: int


class ExclusivitySpec(TypedDict):
    """Whether the work holds its repository or branch alone."""

    repository: bool
    branch: bool


class FairnessSpec(TypedDict):
    """A fairness group and the debt a reservation adds."""

    group: str
    cost: int


class DiskPolicy(TypedDict):
    """The free disk a host must keep."""

    min_free_mib: int


class _ReservationRecordBase(TypedDict):
    profile: ProfileRef
    dimensions: Dimensions
    concurrency: ConcurrencySpec
    exclusivity: ExclusivitySpec
    repository: str
    fairness: FairnessSpec
    disk: DiskPolicy


class ReservationRecord(_ReservationRecordBase, total=False):
    """A work item's ``metadata.resource_reservation`` (seal it with
    :func:`arbiter_client.seal_reservation`)."""

    schema_version: str
    branch: str
    base_ref: str
    host_labels: Dict[str, str]
    anti_affinity: List[str]
    target_policies: List[str]
    fingerprint: str


class Telemetry(TypedDict):
    """A host's last disk report."""

    report_seq: int
    disk_free_mib: int
    reported_at_ms: int
    disk_reserved_mib: int


class Host(TypedDict):
    """A shared host."""

    host_id: str
    labels: Dict[str, str]
    capacity: Dimensions
    used: Dimensions
    epoch: int
    telemetry: Telemetry
    reservations: int
    updated_at_ms: int


class _HostResultBase(TypedDict):
    host: Host


class HostResult(_HostResultBase, total=False):
    """The host a put or a telemetry report left."""

    created: bool


class HostStatus(Host):
    """A host with what is free and how old its telemetry is."""

    free: Dimensions
    telemetry_age_ms: int


class ReservationKeys(TypedDict, total=False):
    """The exclusivity, concurrency and fairness keys a reservation holds."""

    repository: str
    repository_exclusive: bool
    branch: str
    branch_exclusive: bool
    concurrency: str
    concurrency_limit: int
    anti_affinity: List[str]
    fairness_group: str


class _ReservationBase(TypedDict):
    reservation_id: str
    tenant_ref: str
    work_item_id: str
    attempt: int
    fence: int
    host_id: str
    dimensions: Dimensions
    keys: ReservationKeys
    profile_name: str
    profile_version: str
    fingerprint: str
    fairness_cost: int
    fairness_debt_after: int
    status: str
    created_at_ms: int
    expires_at_ms: int
    index: int


class Reservation(_ReservationBase, total=False):
    """A host reservation of a claimed work item."""

    end_reason: str
    ended_at_ms: int


class ReservationResult(TypedDict):
    """``{"reservation": ...}``."""

    reservation: Reservation


class _ReservationReclaimBase(TypedDict):
    reclaimed_reservation_ids: List[str]
    now_ms: int


class ReservationReclaimResult(_ReservationReclaimBase, total=False):
    """The reservations a reclaim ended."""

    next_cursor: str


class Debt(TypedDict):
    """A fairness group's debt."""

    profile: str
    group: str
    debt: int
    debt_milli: int
    decay_per_s: int
    updated_at_ms: int
    paid_off_at_ms: int


class _ReservationQueryBase(TypedDict):
    reservations: List[Reservation]
    hosts: List[HostStatus]
    fairness: List[Debt]
    now_ms: int


class ReservationQueryResult(_ReservationQueryBase, total=False):
    """One page across reservations, hosts and fairness debts."""

    next_cursor: str


class HostPage(TypedDict):
    """One page of the shared hosts in host_id order; ``next_cursor`` is
    ``""`` on the last."""

    hosts: List[HostStatus]
    next_cursor: str
    now_ms: int


class Profiles(TypedDict, total=False):
    """The reservation profile set (``profiles`` as PUT takes them)."""

    profiles: List[JSONObject]
    digest: str
    changed: bool
