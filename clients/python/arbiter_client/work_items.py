"""Work-item admission (``/v1/workitems``): submit (alone or in batches of
up to 128, all or nothing), fenced claims, completion, cancellation.

Every submit carries an idempotency key (one is generated unless given):
the same key and request again answer the first result with
``replayed: True``; another request under it is
:class:`~arbiter_client.IdempotencyConflict`. The four digests are
``sha256:`` and 64 hex digits (:func:`arbiter_client.digest`,
:func:`arbiter_client.file_digest`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .call import Call, Domain, M, endpoint, fields, new_key, read, write
from .types import BatchResult, ClaimResult, ItemResult, Submit, SubmitResult, WorkItemPage

__all__ = ["WorkItems"]


def _submit_needs(*metadata: Mapping[str, Any] | None) -> tuple[str, ...]:
    # A sealed reservation record needs version 3 of submit, which accepts
    # RFC 8785 fingerprints (a U+2028 in a field would fail before it).
    if any(m and "resource_reservation" in m for m in metadata):
        return ("workitem.submit@3",)
    return ("workitem.submit",)


class WorkItems(Domain[M]):
    """``client.work_items``: submit, submit_batch, claim, complete,
    cancel, get and list."""

    @endpoint
    def submit(
        self,
        *,
        tenant_ref: str,
        kind: str,
        command_digest: str,
        input_ref: str,
        policy_digest: str,
        catalog_digest: str,
        model_digest: str,
        max_attempts: int,
        max_tenant_in_flight: int,
        priority: int = 0,
        depends_on: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        provenance_refs: Sequence[str] = (),
        deadline_unix: int | None = None,
        work_item_id: str | None = None,
        graph_ref: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[SubmitResult]:
        """Admit one work item (201), or replay its admission (200).

        Refusals change nothing: the tenant at ``max_tenant_in_flight`` is
        :class:`~arbiter_client.Exhausted`, a missing dependency
        :class:`~arbiter_client.Invalid` (``detail.reason``), an id in use
        :class:`~arbiter_client.Conflict`.
        """
        key = idempotency_key or new_key()
        body = fields(
            tenant_ref=tenant_ref, graph_ref=graph_ref, work_item_id=work_item_id, idempotency_key=key,
            command_digest=command_digest, kind=kind, priority=priority, depends_on=list(depends_on),
            input_ref=input_ref, policy_digest=policy_digest, catalog_digest=catalog_digest,
            model_digest=model_digest, max_attempts=max_attempts, deadline_unix=deadline_unix,
            metadata=dict(metadata or {}), provenance_refs=list(provenance_refs),
            max_tenant_in_flight=max_tenant_in_flight,
        )
        return write("POST", "/v1/workitems/submit", body, requires=_submit_needs(metadata), key=key)

    @endpoint
    def submit_batch(
        self,
        requests: Sequence[Submit],
        *,
        tenant_ref: str,
        graph_ref: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[BatchResult]:
        """Admit 1..128 work items in one command, all or none; a child may
        depend on an earlier one. ``results`` are in request order."""
        key = idempotency_key or new_key()
        body = fields(tenant_ref=tenant_ref, graph_ref=graph_ref, idempotency_key=key,
                      requests=[dict(r) for r in requests])
        needs = _submit_needs(*(r.get("metadata") for r in requests))
        return write("POST", "/v1/workitems/submit-batch", body,
                     requires=tuple(n.replace("submit", "submit_batch") for n in needs), key=key)

    @endpoint
    def claim(
        self,
        *,
        tenant_ref: str,
        owner_ref: str,
        ttl_ms: int,
        kinds: Sequence[str] | None = None,
        work_item_id: str | None = None,
        graph_ref: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[ClaimResult]:
        """Claim the claimable item of highest priority (then lowest
        sequence), or the one named; none claimable is
        :class:`~arbiter_client.NotFound`. Keep ``attempt`` and ``fence``
        for complete and reserve."""
        key = idempotency_key or new_key()
        body = fields(tenant_ref=tenant_ref, graph_ref=graph_ref, owner_ref=owner_ref,
                      kinds=list(kinds) if kinds else None, work_item_id=work_item_id, ttl_ms=ttl_ms,
                      idempotency_key=key)
        return write("POST", "/v1/workitems/claim", body, requires=("workitem.claim",), key=key)

    @endpoint
    def complete(
        self,
        *,
        tenant_ref: str,
        work_item_id: str,
        attempt: int,
        fence: int,
        outcome: str,
        result_ref: str | None = None,
    ) -> Call[ItemResult]:
        """End a claim ``succeeded`` or ``failed``. Another attempt or fence
        is :class:`~arbiter_client.StaleFence`; an expired claim
        :class:`~arbiter_client.Expired`."""
        body = fields(tenant_ref=tenant_ref, work_item_id=work_item_id, attempt=attempt, fence=fence,
                      outcome=outcome, result_ref=result_ref)
        return write("POST", "/v1/workitems/complete", body, requires=("workitem.complete",))

    @endpoint
    def cancel(self, *, tenant_ref: str, work_item_id: str, reason: str) -> Call[ItemResult]:
        """Cancel an item that has not ended (its dependents follow)."""
        body = dict(tenant_ref=tenant_ref, work_item_id=work_item_id, reason=reason)
        return write("POST", "/v1/workitems/cancel", body, requires=("workitem.cancel",))

    @endpoint
    def get(self, *, tenant_ref: str, work_item_id: str, consistency: str | None = None) -> Call[ItemResult]:
        """``{"work_item": ...}``, or :class:`~arbiter_client.NotFound`."""
        return read("/v1/workitems/get", requires=("workitem",), tenant_ref=tenant_ref,
                    work_item_id=work_item_id, consistency=consistency)

    @endpoint
    def list(
        self,
        *,
        tenant_ref: str,
        graph_ref: str | None = None,
        status: str | None = None,
        after: str | None = None,
        limit: int | None = None,
        consistency: str | None = None,
    ) -> Call[WorkItemPage]:
        """One page (``limit`` 1..128) of summaries in sequence order."""
        return read("/v1/workitems/list", requires=("workitem",), tenant_ref=tenant_ref, graph_ref=graph_ref,
                    status=status, after=after, limit=limit, consistency=consistency)

