"""Hook projections."""

from __future__ import annotations

from typing import List, Optional, TypedDict

from .json import JSONObject

__all__ = [
    "Attested", "ChannelBinding", "ProjectionConfig", "TargetResult", "ChannelSubmitResult",
    "ProjectionLease", "PublishResult", "ProjectionReleaseResult", "TargetView",
]


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
