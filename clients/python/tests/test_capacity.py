"""client.capacity_leases: the spec's acquire/renew/release/reclaim/reconcile."""

from __future__ import annotations

import time

import pytest

from arbiter_client import (
    Client,
    Exhausted,
    IdempotencyConflict,
    Invalid,
    StaleEpoch,
    StaleFence,
    lease_refs,
    owner_digest,
)

OWNER = owner_digest("scheduler-1")


def test_acquire_renew_release(client: Client, unique: str) -> None:
    caps = client.capacity_leases
    cell = caps.update_cell("gpu-1", {"gpu": 8, "mem_gib": 64}, tenant_ref=unique)
    assert cell["cell"]["epoch"] >= 1
    demands = [{"cell_id": "gpu-1", "resource_class": "gpu", "amount": 6},
               {"cell_id": "gpu-1", "resource_class": "mem_gib", "amount": 48}]
    got = caps.acquire(tenant_ref=unique, work_item_id="train-42", owner_digest=OWNER, demands=demands,
                       ttl_ms=30_000, idempotency_key="train-42/1")
    assert got["decision"] == "granted" and len(got["leases"]) == 2
    replay = caps.acquire(tenant_ref=unique, work_item_id="train-42", owner_digest=OWNER, demands=demands,
                          ttl_ms=30_000, idempotency_key="train-42/1")
    assert replay.get("replayed") and lease_refs(replay) == lease_refs(got)
    with pytest.raises(IdempotencyConflict):
        caps.acquire(tenant_ref=unique, work_item_id="train-43", owner_digest=OWNER, demands=demands,
                     ttl_ms=30_000, idempotency_key="train-42/1")
    with pytest.raises(Exhausted) as denied:
        caps.acquire(tenant_ref=unique, work_item_id="train-44", owner_digest=OWNER,
                     demands=[{"cell_id": "gpu-1", "resource_class": "gpu", "amount": 3}], ttl_ms=30_000)
    assert denied.value.result["decision"] == "exhausted"

    renewed = caps.renew(tenant_ref=unique, owner_digest=OWNER, leases=lease_refs(got), ttl_ms=60_000)
    assert [x["lease_epoch"] for x in renewed["leases"]] == [x["lease_epoch"] + 1 for x in got["leases"]]
    with pytest.raises(StaleEpoch):  # the epochs before the renewal are stale now
        caps.release(tenant_ref=unique, owner_digest=OWNER, leases=lease_refs(got))
    released = caps.release(tenant_ref=unique, owner_digest=OWNER, leases=lease_refs(renewed))
    assert {x["state"] for x in released["leases"]} == {"released"}
    forged = [{**ref, "fence_token": ref["fence_token"] + 1} for ref in lease_refs(released)]
    with pytest.raises((StaleFence, StaleEpoch)):
        caps.renew(tenant_ref=unique, owner_digest=OWNER, leases=forged)

    page = caps.reconcile(tenant_ref=unique, cell_id="gpu-1")
    assert page["cells"][0]["classes"][0]["used"] == 0
    assert caps.status(tenant_ref=unique)["leases"] == []  # pages show the leases still held


def test_reclaim_expired_and_refusals(client: Client, unique: str) -> None:
    caps = client.capacity_leases
    caps.update_cell("cpu-1", {"cpu": 4}, tenant_ref=unique, graph_ref="g2")
    got = caps.acquire(tenant_ref=unique, graph_ref="g2", work_item_id="w", owner_digest=OWNER,
                       demands=[{"cell_id": "cpu-1", "resource_class": "cpu", "amount": 4}], ttl_ms=1)
    lease_id = got["leases"][0]["lease_id"]
    reclaimed: list[str] = []
    deadline = time.monotonic() + 10
    while lease_id not in reclaimed and time.monotonic() < deadline:  # the log's clock must pass 1 ms
        res = caps.reclaim(tenant_ref=unique, graph_ref="g2", cell_id="cpu-1", max_count=16)
        reclaimed += res["reclaimed_lease_ids"]
        page = caps.status(tenant_ref=unique, graph_ref="g2", lease_id=lease_id)
        if page["leases"] and page["leases"][0]["state"] != "active":
            break
        time.sleep(0.05)
    leases = caps.status(tenant_ref=unique, graph_ref="g2", lease_id=lease_id)["leases"]
    assert leases[0]["state"] != "active"
    with pytest.raises(Invalid):
        caps.acquire(tenant_ref=unique, work_item_id="w", owner_digest=OWNER, demands=[], ttl_ms=1000)
