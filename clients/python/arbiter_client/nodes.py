"""The node primitives (``/v1/nodes``): first writer wins, fenced updates.

Admin role. ``create`` has exactly one winner per id; ``cas`` checks every
condition and applies every update in one log entry.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .call import Call, Domain, M, endpoint, fields, new_key, read, write
from .types import CASResult, CreateResult, Node, NodePage

__all__ = ["Nodes"]


def _needs(index_fields: Sequence[str] | None, command: str) -> tuple[str, ...]:
    # set_index is version 2 of node_create and node_cas.
    return (f"nodes.{command}@2",) if index_fields else (f"nodes.{command}",)


class Nodes(Domain[M]):
    """``client.nodes``: create-if-absent, compare-and-set, get, by label."""

    @endpoint
    def create(
        self,
        node_id: str,
        *,
        labels: Sequence[str] = (),
        properties: Mapping[str, Any] | None = None,
        set_now: Mapping[str, int] | None = None,
        set_index: Sequence[str] | None = None,
        idempotency_key: str | None = None,
    ) -> Call[CreateResult]:
        """Create a node unless one has this id (``created`` says which).

        ``set_now`` sets fields to the log's time plus an offset in ms;
        ``set_index`` sets fields to the log index of the create.
        """
        key = idempotency_key or new_key()
        body = fields(
            node_id=node_id,
            labels=list(labels),
            properties=dict(properties or {}),
            set_now=dict(set_now) if set_now else None,
            set_index=list(set_index) if set_index else None,
            idempotency_key=key,
        )
        return write("POST", "/v1/nodes/create", body, requires=_needs(set_index, "create"), key=key)

    @endpoint
    def cas(
        self,
        node_id: str,
        *,
        conditions: Mapping[str, Any] | None = None,
        updates: Mapping[str, Any] | None = None,
        set_now: Mapping[str, int] | None = None,
        set_index: Sequence[str] | None = None,
        due: Sequence[str] | None = None,
        not_due: Sequence[str] | None = None,
        add_labels: Sequence[str] | None = None,
        remove_labels: Sequence[str] | None = None,
        idempotency_key: str | None = None,
    ) -> Call[CASResult]:
        """Apply every update if every condition holds, atomically.

        A condition of ``None`` requires the field to be absent; an update
        of ``None`` removes it. ``swapped`` is false with ``failed``
        naming each check that did not hold; a missing node is
        :class:`~arbiter_client.NotFound`.
        """
        key = idempotency_key or new_key()
        body = fields(
            node_id=node_id,
            conditions=dict(conditions or {}),
            updates=dict(updates or {}),
            set_now=dict(set_now) if set_now else None,
            set_index=list(set_index) if set_index else None,
            due=list(due) if due else None,
            not_due=list(not_due) if not_due else None,
            add_labels=list(add_labels) if add_labels else None,
            remove_labels=list(remove_labels) if remove_labels else None,
            idempotency_key=key,
        )
        return write("POST", "/v1/nodes/cas", body, requires=_needs(set_index, "cas"), key=key)

    @endpoint
    def get(self, node_id: str, *, consistency: str | None = None) -> Call[Node]:
        """The node, or :class:`~arbiter_client.NotFound`."""
        return read("/v1/nodes/get", requires=("nodes",), node_id=node_id, consistency=consistency)

    @endpoint
    def by_label(
        self, label: str, *, after: str | None = None, limit: int | None = None, consistency: str | None = None
    ) -> Call[NodePage]:
        """One page (at most ``limit``, 1..128) of the nodes with a label;
        pass ``next_cursor`` as ``after`` for the next (empty: the last)."""
        return read("/v1/nodes/by-label", requires=("nodes",), label=label, after=after, limit=limit,
                    consistency=consistency)
