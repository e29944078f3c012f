"""client.concepts: policies, create-once reservation, fenced transitions."""

from __future__ import annotations

import pytest

from arbiter_client import Client, Conflict, Exhausted, Invalid, NotFound, StaleFence, digest


@pytest.fixture(scope="module")
def policies(cluster: object) -> None:
    from conftest import Cluster

    assert isinstance(cluster, Cluster)
    with Client(cluster.addrs) as c:
        got = c.concepts.set_policies([{"namespace": "PYC", "min": 1, "max": 999, "policy_version": "1"}])
        assert got["configured"]


def reserve(client: Client, cid: str, request: str, tenant: str = "team-a") -> dict:
    return dict(client.concepts.reserve(cid, tenant_ref=tenant, owner_ref="agent-7", request_ref=request,
                                        purpose_digest=digest(b"purpose")))


def test_reserve_once_replay_and_conflict(client: Client, policies: None) -> None:
    first = reserve(client, "PYC-1", "req-1")
    assert first["created"] and first["record"]["state"] == "reserved"
    again = reserve(client, "PYC-1", "req-1")
    assert again["replayed"] and again["record"]["fence"] == first["record"]["fence"]
    with pytest.raises(Conflict) as info:
        reserve(client, "PYC-1", "req-2")
    assert info.value.detail  # the holder's public fields
    with pytest.raises(Invalid):
        reserve(client, "NOPOLICY-1", "req-3")


def test_transitions_are_fenced(client: Client, policies: None) -> None:
    rec = reserve(client, "PYC-2", "req-t")["record"]
    ident = dict(tenant_ref="team-a", owner_ref="agent-7", reservation_id=rec["reservation_id"],
                 fingerprint=rec["fingerprint"])
    moved = client.concepts.transition("PYC-2", expected_fence=rec["fence"], action="materialize", **ident)
    assert moved["record"]["state"] == "materialized" and moved["record"]["fence"] > rec["fence"]
    with pytest.raises(StaleFence):
        client.concepts.transition("PYC-2", expected_fence=rec["fence"], action="land", **ident)
    landed = client.concepts.transition("PYC-2", expected_fence=moved["record"]["fence"], action="land", **ident)
    assert landed["record"]["state"] == "landed"
    assert client.concepts.get("PYC-2", tenant_ref="team-a")["state"] == "landed"
    with pytest.raises(NotFound):
        client.concepts.get("PYC-2", tenant_ref="team-b")
    ids = [r["concept_id"] for r in client.concepts.list("team-a", limit=128)["records"]]
    assert "PYC-2" in ids


def test_reserve_next_takes_the_first_free_number(client: Client, policies: None) -> None:
    reserve(client, "PYC-10", "req-n0")
    got = client.concepts.reserve_next("PYC", first=10, last=11, tenant_ref="team-a", owner_ref="agent-7",
                                       request_ref="req-n1", purpose_digest=digest(b"p"))
    assert got["record"]["concept_id"] == "PYC-11"
    with pytest.raises(Exhausted):
        client.concepts.reserve_next("PYC", first=10, last=11, tenant_ref="team-a", owner_ref="agent-7",
                                     request_ref="req-n2", purpose_digest=digest(b"p"))
