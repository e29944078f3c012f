"""The node primitives."""

from __future__ import annotations

from typing import List, TypedDict

from .json import JSONObject

__all__ = ["Node", "CreateResult", "Failure", "CASResult", "NodePage"]


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
