"""Work-item admission and claims."""

from __future__ import annotations

from typing import List, TypedDict

from .json import JSONObject

__all__ = [
    "Dependencies", "Quota", "Submit", "SubmitResult", "SequenceRange", "BatchResult",
    "WorkItem", "ClaimResult", "ItemResult", "WorkItemSummary", "WorkItemPage",
]


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
