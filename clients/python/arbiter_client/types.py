"""Typed shapes of requests and results: the API's JSON, as TypedDicts.

Results are the server's answers as they arrive (snake_case keys, exact
numbers: fractions are ``decimal.Decimal``), typed for checkers; fields a
server leaves out when empty are ``total=False``. Request parts that a
caller builds (a demand, a lease reference, a catalog row, a
reservation record) are TypedDicts too, so a literal ``{...}`` is checked.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict

JSONObject = Dict[str, Any]
"""Any JSON object (a node's properties, metadata, an envelope)."""


# ---- cluster -------------------------------------------------------------


class Command(TypedDict):
    """One command and its version."""

    type: int
    name: str
    version: int


class DomainCommands(TypedDict):
    """A domain's commands."""

    name: str
    commands: List[Command]


class Capabilities(TypedDict):
    """``domains`` with their commands and versions."""

    domains: List[DomainCommands]


class CapabilitiesResult(TypedDict):
    """``GET /v1/cluster/capabilities``: what the cluster enables and what
    the answering node's binary serves."""

    gated: bool
    enabled: Capabilities
    served: Capabilities


class Member(TypedDict):
    """A member of the cluster."""

    id: str
    raft_addr: str
    api_addr: str
    voter: bool
    serves: Capabilities


class Status(TypedDict, total=False):
    """``GET /v1/cluster/status``: one node's view of the cluster."""

    node_id: str
    cluster_id: str
    auth_mode: str
    state: str
    leader_id: str
    leader_api_addr: str
    term: int
    commit_index: int
    applied_index: int
    members: List[Member]
    gated: bool
    enabled: Capabilities
    halted: JSONObject
    log_store: str
    storage: JSONObject
    effects: JSONObject


class Whoami(TypedDict):
    """``GET /v1/auth/whoami``: who the caller's credential names."""

    auth_mode: str
    credential: str
    principal: str
    tenants: List[str]
    roles: List[str]
    owner_digest: str
    trusted: bool


class Ready(TypedDict):
    """``/readyz``'s answer when the node is ready."""

    status: str
    leader_id: str


class _ChangeEventBase(TypedDict):
    seq: int
    index: int
    time_ms: int
    kind: str
    key: str


class ChangeEvent(_ChangeEventBase, total=False):
    """One committed change of the feed."""

    tenant: str
    payload: JSONObject
    value: Any
    overwritten: bool


class ChangesPage(TypedDict):
    """A page of the change feed: resume after ``next``."""

    events: List[ChangeEvent]
    next: int
    last_seq: int


# ---- nodes ---------------------------------------------------------------


class Node(TypedDict):
    """A node: ``version`` grows by one per successful CAS; the indexes are the log's."""

    node_id: str
    labels: List[str]
    properties: JSONObject
    version: int
    created_index: int
    modified_index: int


class _CreateResultBase(TypedDict):
    created: bool
    node: Node


class CreateResult(_CreateResultBase, total=False):
    """``created`` is true for exactly one caller per id."""

    replayed: bool


class Failure(TypedDict, total=False):
    """A CAS check that did not hold."""

    field: str
    check: str
    reason: str
    now_ms: int


class _CASResultBase(TypedDict):
    swapped: bool
    node: Node


class CASResult(_CASResultBase, total=False):
    """``failed`` names every check that did not hold."""

    replayed: bool
    failed: List[Failure]


class NodePage(TypedDict):
    """A page of nodes; ``next_cursor`` is empty on the last."""

    nodes: List[Node]
    next_cursor: str


# ---- concepts (authority) ------------------------------------------------


class ConceptPolicy(TypedDict, total=False):
    """A namespace policy: a number range, optionally under a semantic prefix."""

    namespace: str
    prefix: str
    min: int
    max: int
    policy_version: str


class Policies(TypedDict, total=False):
    """The cluster's namespace policy set."""

    configured: bool
    version: int
    policies: List[ConceptPolicy]
    digest: str
    source: str
    set_at_ms: int
    changed: bool


class ConceptRecord(TypedDict, total=False):
    """A concept claim: its identity, holder, state and fence."""

    schema: str
    concept_id: str
    namespace: str
    prefix: str
    number: int
    policy_version: str
    range_min: int
    range_max: int
    tenant_ref: str
    repository_ref: str
    lane_ref: str
    owner_ref: str
    request_ref: str
    design_ref: str
    provenance_refs: List[str]
    purpose_digest: str
    fingerprint: str
    reservation_id: str
    state: str
    fence: int
    visibility: str
    prev_fence: int
    created_at_ms: int
    expires_at_ms: int
    reserved_at_ms: int
    updated_at_ms: int


class ReserveResult(TypedDict):
    """Exactly one of ``created``, ``reclaimed`` and ``replayed`` is true."""

    record: ConceptRecord
    created: bool
    reclaimed: bool
    replayed: bool


class _TransitionResultBase(TypedDict):
    record: ConceptRecord
    replayed: bool


class TransitionResult(_TransitionResultBase, total=False):
    """The record with its new fence; ``promoted_to`` when a release became a tombstone."""

    promoted_to: str


class ConceptPage(TypedDict):
    """A page of a tenant's concept claims."""

    records: List[ConceptRecord]
    next_cursor: str


# ---- capacity leases -----------------------------------------------------


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


# ---- work items ----------------------------------------------------------


class Dependencies(TypedDict):
    """How many dependencies a work item has and how many succeeded."""

    total: int
    satisfied: int


class Quota(TypedDict):
    """The tenant's items in flight and its cap."""

    in_flight: int
    cap: int


class _SubmitBase(TypedDict):
    command_digest: str
    kind: str
    input_ref: str
    policy_digest: str
    catalog_digest: str
    model_digest: str


class Submit(_SubmitBase, total=False):
    """One child of a ``submit_batch`` (the same fields as ``submit``)."""

    work_item_id: str
    idempotency_key: str
    priority: int
    depends_on: List[str]
    max_attempts: int
    deadline_unix: int
    metadata: JSONObject
    provenance_refs: List[str]
    max_tenant_in_flight: int


class SubmitResult(TypedDict):
    """An admission (or its replay, ``replayed``)."""

    work_item_id: str
    tenant_ref: str
    graph_ref: str
    status: str
    created: bool
    replayed: bool
    command_sequence: int
    idempotency_key: str
    dependencies: Dependencies
    quota: Quota
    outbox_id: int
    command_digest: str
    provenance_refs: List[str]
    changed_ids: List[str]


class SequenceRange(TypedDict):
    """The command sequences a batch took."""

    first: int
    last: int


class BatchResult(TypedDict):
    """A batch's admissions, in request order."""

    tenant_ref: str
    graph_ref: str
    idempotency_key: str
    created: bool
    replayed: bool
    results: List[SubmitResult]
    batch_sequence_range: SequenceRange


class _WorkItemBase(TypedDict):
    tenant_ref: str
    graph_ref: str
    work_item_id: str
    command_sequence: int
    kind: str
    priority: int
    status: str
    depends_on: List[str]
    dependencies: Dependencies
    input_ref: str
    command_digest: str
    policy_digest: str
    catalog_digest: str
    model_digest: str
    max_attempts: int
    attempt: int
    fence: int
    metadata: JSONObject
    provenance_refs: List[str]
    idempotency_key: str
    submitted_by: str
    created_at_ms: int
    updated_at_ms: int


class WorkItem(_WorkItemBase, total=False):
    """A work item as the cluster holds it."""

    deadline_unix: int
    owner_ref: str
    claimed_by: str
    claim_expires_at_ms: int
    result_ref: str
    reason: str
    ended_at_ms: int
    admitted_index: int
    outbox_id: int


class _ClaimResultBase(TypedDict):
    work_item: WorkItem
    attempt: int
    fence: int
    expires_at_ms: int


class ClaimResult(_ClaimResultBase, total=False):
    """A claim: keep ``attempt`` and ``fence`` for complete and reserve."""

    replayed: bool


class ItemResult(TypedDict):
    """``{"work_item": ...}``."""

    work_item: WorkItem


class _SummaryBase(TypedDict):
    work_item_id: str
    graph_ref: str
    command_sequence: int
    kind: str
    priority: int
    status: str
    dependencies: Dependencies
    attempt: int
    max_attempts: int
    fence: int
    created_at_ms: int
    updated_at_ms: int


class WorkItemSummary(_SummaryBase, total=False):
    """A work item in a list page."""

    owner_ref: str
    claim_expires_at_ms: int
    reason: str
    ended_at_ms: int


class WorkItemPage(TypedDict):
    """A page of work-item summaries in sequence order."""

    work_items: List[WorkItemSummary]
    next_cursor: str
    now_ms: int


# ---- host resource reservation -------------------------------------------


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


class Profiles(TypedDict, total=False):
    """The reservation profile set (``profiles`` as PUT takes them)."""

    profiles: List[JSONObject]
    digest: str
    changed: bool


# ---- allocation ----------------------------------------------------------


class ConflictKey(TypedDict):
    """What allocation decides the first writer of."""

    kind: str
    target: str
    delivery_mode: str


class _CatalogRowBase(TypedDict):
    work_item_id: str
    canonical_title: str


class CatalogRow(_CatalogRowBase, total=False):
    """A catalog slot of a space."""

    aliases: List[str]


class Space(TypedDict, total=False):
    """An allocation space."""

    slug: str
    tenant_ref: str
    catalog: List[CatalogRow]
    delivery_modes: List[str]
    window_ms: int
    adhoc_slots: bool
    version: int
    updated_by: str
    updated_at_ms: int


class Winner(TypedDict, total=False):
    """Who holds a key: a task, a note, a reserved intent or an external winner."""

    type: str
    id: Any
    status: str


class Task(TypedDict, total=False):
    """An allocation task and the conflict key it holds."""

    id: int
    space: str
    title: str
    status: str
    work_item_id: Optional[str]
    conflict_key: ConflictKey
    created_by: str
    version: int
    created_at_ms: int
    updated_at_ms: int
    work_item_given: bool
    steward_hold: bool
    assignee: str
    reviewer: str
    inherited_keys: List[ConflictKey]
    superseded_by: int
    reason: str
    superseded_by_principal: str
    superseded_at_ms: int


class Note(TypedDict, total=False):
    """A post-review note."""

    id: int
    space: str
    task_id: int
    criterion_index: Optional[int]
    principal: str
    conflict_key: ConflictKey
    body: str
    created_at_ms: int


class AllocationReservation(TypedDict, total=False):
    """A reservation of a conflict key for a proposal."""

    proposal_id: str
    conflict_key: ConflictKey
    expires_at_ms: int
    work_item_id: Optional[str]
    principal: str
    state: str
    winner: Winner


class Occupancy(TypedDict, total=False):
    """A key held now and its holder."""

    conflict_key: ConflictKey
    winner: Winner
    proposal_id: str
    expires_at_ms: int


class Duplicate(TypedDict):
    """A task that wants a key another holds."""

    task_id: int
    title: str
    status: str
    conflict_key: ConflictKey
    held_by: Winner


class DuplicatePage(TypedDict):
    """A page of duplicates."""

    duplicates: List[Duplicate]
    next_cursor: str


class _SpaceResultBase(TypedDict):
    space: Space


class SpaceResult(_SpaceResultBase, total=False):
    """A space after a put (``rebound`` tasks, new ``duplicates``)."""

    rebound: int
    duplicates: DuplicatePage


class SpacePage(TypedDict):
    """A page of spaces."""

    spaces: List[Space]
    next_cursor: str


class TaskResult(TypedDict):
    """``{"task": ...}``."""

    task: Task


class TaskPage(TypedDict):
    """A page of tasks."""

    tasks: List[Task]
    next_cursor: str


class NoteResult(TypedDict):
    """``{"note": ...}``."""

    note: Note


class NotePage(TypedDict):
    """A page of notes."""

    notes: List[Note]
    next_cursor: str


class Score(TypedDict):
    """A catalog row's token overlap with a title."""

    work_item_id: str
    intersection: int
    union: int


class BindResult(TypedDict):
    """The slot a title binds to (``None``: the title itself)."""

    work_item_id: Optional[str]
    target: str
    scores: List[Score]


class _ProposalBase(TypedDict):
    proposal_id: str
    title: str
    delivery_mode: str


class Proposal(_ProposalBase, total=False):
    """One proposal of a window."""

    work_item_id: str
    received_seq: int
    idempotency_key: str


class WindowEntry(TypedDict):
    """A window proposal's outcome: ``status`` 201, 409 or 422 and its body."""

    proposal_id: str
    status: int
    body: JSONObject


class WindowResult(TypedDict):
    """A window's outcomes in processing order."""

    results: List[WindowEntry]


class AllocationReservationResult(TypedDict):
    """``{"reservation": ...}``."""

    reservation: AllocationReservation


class AllocationReservationPage(TypedDict):
    """A page of reservations."""

    reservations: List[AllocationReservation]
    next_cursor: str


class OccupancyPage(TypedDict):
    """A page of occupancy."""

    occupancy: List[Occupancy]
    next_cursor: str


class DropResult(TypedDict):
    """What an abort or release dropped."""

    proposal_id: str
    conflict_key: ConflictKey
    dropped: bool


# ---- projection ----------------------------------------------------------


class Attested(TypedDict):
    """The attested tuple a target id is derived from."""

    schema_version: str
    capability: str
    harness_type: str
    instance_key_digest: str
    workspace_key_digest: str
    projection_kind: str


class ChannelBinding(TypedDict):
    """A channel of a target and the producer bound to it."""

    channel: str
    producer: str


class ProjectionConfig(TypedDict, total=False):
    """The projection lease TTL (``lease_ttl_ms`` 0: not configured)."""

    lease_ttl_ms: int
    configured: bool
    updated_at_ms: int
    changed: bool


class TargetResult(TypedDict):
    """A target's id (``created`` false for the same tuple again)."""

    target_id: str
    created: bool


class ChannelSubmitResult(TypedDict):
    """``status``: ``accepted`` or ``replayed``."""

    status: str
    target_id: str
    channel: str
    source_watermark: int


class ProjectionLease(TypedDict):
    """A held target lease: present ``token`` and ``fencing_epoch``."""

    target_id: str
    fencing_epoch: int
    token: str
    expires_at_ms: int


class _PublishResultBase(TypedDict):
    target_id: str
    publication_seq: int
    fencing_epoch: int
    published_at_ms: int
    bytes: int
    sha256: str


class PublishResult(_PublishResultBase, total=False):
    """``file``: what the answering node did with its ``current.json``
    (``written``, ``failed``, ``pending`` or ``none``)."""

    replayed: bool
    file: str
    file_error: str


class ProjectionReleaseResult(TypedDict):
    """``released`` false when the lease had already ended."""

    target_id: str
    fencing_epoch: int
    state: str
    released: bool


class TargetView(TypedDict, total=False):
    """A target's channels, lease and last publication."""

    target_id: str
    agent_id: str
    attested: Attested
    created_at_ms: int
    channels: List[JSONObject]
    lease: Optional[JSONObject]
    last_publication: Optional[PublishResult]
    now_ms: int
