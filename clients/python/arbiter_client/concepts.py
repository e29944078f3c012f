"""Concept reservations (``/v1/concepts``): create-once concept ids with
fenced lifecycles under the cluster's namespace policies.

A reservation is identified by its ``request_ref``: the same request
again replays its claim (``replayed``), so ``request_ref`` is what an
unknown outcome names. A transition presents the fence it holds; a retry
of one that committed replays it.
"""

from __future__ import annotations

from typing import Any, Sequence

from .call import Call, Domain, M, endpoint, fields, read, write
from .types import ConceptPage, ConceptPolicy, ConceptRecord, Policies, ReserveResult, TransitionResult

__all__ = ["Concepts"]


def _reserve_fields(
    tenant_ref: str,
    owner_ref: str,
    request_ref: str,
    purpose_digest: str,
    repository_ref: str | None,
    lane_ref: str | None,
    design_ref: str | None,
    provenance_refs: Sequence[str] | None,
    ttl_ms: int | None,
) -> dict[str, Any]:
    return fields(
        tenant_ref=tenant_ref,
        owner_ref=owner_ref,
        request_ref=request_ref,
        purpose_digest=purpose_digest,
        repository_ref=repository_ref,
        lane_ref=lane_ref,
        design_ref=design_ref,
        provenance_refs=list(provenance_refs) if provenance_refs else None,
        ttl_ms=ttl_ms,
    )


class Concepts(Domain[M]):
    """``client.concepts``: reserve, reserve_next, transition, get, list,
    policies and set_policies."""

    @endpoint
    def reserve(
        self,
        concept_id: str,
        *,
        tenant_ref: str,
        owner_ref: str,
        request_ref: str,
        purpose_digest: str,
        repository_ref: str | None = None,
        lane_ref: str | None = None,
        design_ref: str | None = None,
        provenance_refs: Sequence[str] | None = None,
        ttl_ms: int | None = None,
    ) -> Call[ReserveResult]:
        """Claim ``concept_id`` (e.g. ``RMDD-27``) for this request.

        Another holder is :class:`~arbiter_client.Conflict` with the
        holder's public fields in ``detail``; no matching policy is
        :class:`~arbiter_client.Invalid`. With authentication, ``owner_ref``
        may be ``""``: the owner is the principal.
        """
        body = {"concept_id": concept_id, **_reserve_fields(
            tenant_ref, owner_ref, request_ref, purpose_digest, repository_ref, lane_ref, design_ref,
            provenance_refs, ttl_ms)}
        return write("POST", "/v1/concepts/reserve", body, requires=("authority.reserve",), key=request_ref)

    @endpoint
    def reserve_next(
        self,
        namespace: str,
        *,
        first: int,
        last: int,
        tenant_ref: str,
        owner_ref: str,
        request_ref: str,
        purpose_digest: str,
        prefix: str | None = None,
        repository_ref: str | None = None,
        lane_ref: str | None = None,
        design_ref: str | None = None,
        provenance_refs: Sequence[str] | None = None,
        ttl_ms: int | None = None,
    ) -> Call[ReserveResult]:
        """Claim the first free number ``first..last`` (at most 128) of a
        namespace (and semantic prefix); every one held is
        :class:`~arbiter_client.Exhausted`."""
        body = fields(
            namespace=namespace,
            prefix=prefix,
            **{"from": first, "to": last},
            request=_reserve_fields(tenant_ref, owner_ref, request_ref, purpose_digest, repository_ref,
                                    lane_ref, design_ref, provenance_refs, ttl_ms),
        )
        return write("POST", "/v1/concepts/reserve-next", body, requires=("authority.reserve",), key=request_ref)

    @endpoint
    def transition(
        self,
        concept_id: str,
        *,
        tenant_ref: str,
        owner_ref: str,
        reservation_id: str,
        fingerprint: str,
        expected_fence: int,
        action: str,
    ) -> Call[TransitionResult]:
        """Move a claim: ``materialize``, ``land``, ``tombstone``,
        ``release`` or ``expire``, presenting the fence last answered.

        The record comes back with its new fence (pass it to the next
        transition). Another fence is :class:`~arbiter_client.StaleFence`.
        """
        body = dict(concept_id=concept_id, tenant_ref=tenant_ref, owner_ref=owner_ref,
                    reservation_id=reservation_id, fingerprint=fingerprint,
                    expected_fence=expected_fence, action=action)
        return write("POST", "/v1/concepts/transition", body, requires=("authority",))

    @endpoint
    def get(self, concept_id: str, *, tenant_ref: str | None = None) -> Call[ConceptRecord]:
        """The claim's record, or :class:`~arbiter_client.NotFound` (also
        for another tenant's)."""
        return read("/v1/concepts/get", requires=("authority",), concept_id=concept_id, tenant_ref=tenant_ref)

    @endpoint
    def list(self, tenant_ref: str, *, after: str | None = None, limit: int | None = None) -> Call[ConceptPage]:
        """One page (``limit`` 1..128) of a tenant's claims."""
        return read("/v1/concepts/list", requires=("authority",), tenant_ref=tenant_ref, after=after, limit=limit)

    @endpoint
    def policies(self, *, consistency: str | None = None) -> Call[Policies]:
        """The cluster's namespace policy set."""
        return read("/v1/concepts/policies", requires=("authority",), consistency=consistency)

    @endpoint
    def set_policies(self, policies: Sequence[ConceptPolicy], *, version: int | None = None) -> Call[Policies]:
        """Replace the policy set (admin); without ``version`` the next one.
        The same set again changes nothing."""
        body = fields(version=version, policies=[dict(p) for p in policies])
        return write("PUT", "/v1/concepts/policies", body, requires=("authority.policies_set",))
