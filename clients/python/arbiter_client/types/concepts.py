"""Concept reservations."""

from __future__ import annotations

from typing import List, TypedDict

__all__ = [
    "ConceptPolicy", "Policies", "ConceptRecord", "ReserveResult", "TransitionResult",
    "ConceptPage",
]


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
