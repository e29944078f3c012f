"""Allocation: spaces, tasks, keys, windows, notes."""

from __future__ import annotations

from typing import Any, List, Optional, TypedDict

from .json import JSONObject

__all__ = [
    "ConflictKey", "CatalogRow", "Space", "Winner", "Task", "Note", "AllocationReservation",
    "Occupancy", "Duplicate", "DuplicatePage", "SpaceResult", "SpacePage", "TaskResult",
    "TaskPage", "NoteResult", "NotePage", "Score", "BindResult", "Proposal", "WindowEntry",
    "WindowResult", "AllocationReservationResult", "AllocationReservationPage", "OccupancyPage",
    "DropResult",
]


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
