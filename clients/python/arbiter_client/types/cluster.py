"""The cluster: status, capabilities, members, readiness, whoami, the change feed."""

from __future__ import annotations

from typing import Any, List, TypedDict

from .json import JSONObject

__all__ = [
    "Command", "DomainCommands", "Capabilities", "CapabilitiesResult", "Member", "Status",
    "Whoami", "Ready", "ChangeEvent", "ChangesPage",
]


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
