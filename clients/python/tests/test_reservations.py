"""client.reservations: hosts, telemetry, reserve/release/reclaim/query,
with records sealed in Python and accepted by the server."""

from __future__ import annotations

import asyncio

import pytest

from arbiter_client import AsyncClient, Client, Conflict, Invalid, digest, fingerprint, seal_reservation

PROFILE = {"name": "ci", "version": "2026-01", "weights": {"cpu": 1, "memory": 1, "disk": 1, "process": 1},
           "max": {"cpu_millis": 8000, "memory_mib": 16384, "disk_mib": 40960, "processes": 16},
           "fairness": {"max_debt": 100, "decay_per_s": 1}, "disk": {"min_free_mib": 100},
           "telemetry_max_age_ms": 3_600_000, "mode": "enabled"}
DIGESTS = {"command_digest": digest(b"c"), "policy_digest": digest(b"p"), "catalog_digest": digest(b"k"),
           "model_digest": digest(b"m")}
# A repository name holding U+2028: RFC 8785 writes it raw, Go's older
# escaping wrote \u2028; the server must accept the RFC 8785 fingerprint.
REPO_NAME = "github.com/acme/app\u2028x"


def record(branch: str) -> dict:
    return dict(seal_reservation({
        "profile": {"name": "ci", "version": "2026-01"},
        "dimensions": {"cpu_millis": 2000, "memory_mib": 4096, "disk_mib": 1024, "processes": 2},
        "concurrency": {"key": "ci", "limit": 4},
        "exclusivity": {"repository": False, "branch": True},
        "repository": REPO_NAME, "branch": branch, "base_ref": "main",
        "fairness": {"group": "team-a", "cost": 1}, "host_labels": {"arch": "amd64"},
        "disk": {"min_free_mib": 512},
    }))


def claimed(client: Client, tenant: str, item: str, rec: dict) -> dict:
    client.work_items.submit(tenant_ref=tenant, work_item_id=item, kind="ci", input_ref="in", max_attempts=2,
                             max_tenant_in_flight=64, metadata={"resource_reservation": rec}, **DIGESTS)
    return dict(client.work_items.claim(tenant_ref=tenant, owner_ref="w", work_item_id=item, ttl_ms=60_000))


def test_reserve_release_query(client: Client, unique: str) -> None:
    res = client.reservations
    assert res.set_profiles([PROFILE])["profiles"][0]["complete"]
    host = f"host-{unique}"
    put = res.put_host(host, capacity={"cpu_millis": 16000, "memory_mib": 32768, "disk_mib": 100000,
                                       "processes": 32}, labels={"arch": "amd64"})
    assert put["host"]["host_id"] == host and put.get("created")
    res.telemetry(host, report_seq=1, disk_free_mib=50_000)
    with pytest.raises(Conflict) as stale:
        res.telemetry(host, report_seq=1, disk_free_mib=50_000)
    assert stale.value.detail.get("reason") == "stale_report"

    rec = record("feature/x")
    a = claimed(client, unique, "item-a", rec)
    got = res.reserve(tenant_ref=unique, work_item_id="item-a", attempt=a["attempt"], fence=a["fence"], host_id=host)
    r = got["reservation"]
    assert r["host_id"] == host and r["status"] == "active" and r["fingerprint"] == rec["fingerprint"]
    assert r["keys"]["repository"] == REPO_NAME
    # The same claim again: its reservation, unchanged (safe to repeat).
    assert res.reserve(tenant_ref=unique, work_item_id="item-a", attempt=a["attempt"], fence=a["fence"],
                       host_id=host)["reservation"]["reservation_id"] == r["reservation_id"]

    b = claimed(client, unique, "item-b", record("feature/x"))
    with pytest.raises(Conflict) as exclusive:
        res.reserve(tenant_ref=unique, work_item_id="item-b", attempt=b["attempt"], fence=b["fence"], host_id=host)
    assert exclusive.value.detail["reason"] == "branch_exclusive"

    page = res.query(tenant_ref=unique, host_id=host)
    assert [x["reservation_id"] for x in page["reservations"]] == [r["reservation_id"]]
    assert page["hosts"][0]["used"]["cpu_millis"] == 2000

    released = res.release(tenant_ref=unique, work_item_id="item-a", attempt=a["attempt"], fence=a["fence"],
                           reservation_id=r["reservation_id"])
    assert released["reservation"]["status"] == "released"
    second = res.reserve(tenant_ref=unique, work_item_id="item-b", attempt=b["attempt"], fence=b["fence"], host_id=host)
    assert second["reservation"]["status"] == "active"
    assert res.reclaim(tenant_ref=unique, max_count=8)["reclaimed_reservation_ids"] == []


def test_a_record_not_sealed_as_the_server_seals_is_refused(client: Client, unique: str) -> None:
    rec = record("feature/y")
    tampered = {**rec, "branch": "feature/z"}  # the fingerprint is of feature/y
    assert fingerprint(tampered) != tampered["fingerprint"]
    with pytest.raises(Invalid) as info:
        client.work_items.submit(tenant_ref=unique, kind="ci", input_ref="in", max_attempts=1,
                                 max_tenant_in_flight=8, metadata={"resource_reservation": tampered}, **DIGESTS)
    assert info.value.detail.get("reason") == "fingerprint_mismatch"


def test_hosts_pages_the_shared_hosts(client: Client, unique: str) -> None:
    """``hosts`` pages every host in host_id order (sync and asyncio): use,
    what is free, telemetry age (-1: never reported)."""
    res = client.reservations
    ids = [f"{unique}-{c}" for c in "cab"]
    for host in ids:
        res.put_host(host, capacity={"cpu_millis": 3000, "memory_mib": 1024, "disk_mib": 1024, "processes": 4})
    res.telemetry(ids[0], report_seq=1, disk_free_mib=900)

    def mine(pages: list[dict]) -> list[dict]:
        return [h for p in pages for h in p["hosts"] if h["host_id"].startswith(unique + "-")]

    pages: list[dict] = []
    after = None
    for _ in range(65):  # 128 hosts at most, two a page
        page = dict(res.hosts(tenant_ref=unique, limit=2, after=after))
        assert len(page["hosts"]) <= 2 and page["now_ms"] > 0
        pages.append(page)
        after = page["next_cursor"] or None
        if after is None:
            break
    assert after is None, "paging did not end"
    hosts = mine(pages)
    assert [h["host_id"] for h in hosts] == sorted(ids)
    c = hosts[2]
    assert c["free"]["cpu_millis"] == 3000 and c["telemetry_age_ms"] >= 0
    assert hosts[0]["telemetry_age_ms"] == -1

    async def first_page() -> dict:
        async with AsyncClient(client._transport.settings.addrs.urls) as ac:
            return dict(await ac.reservations.hosts(tenant_ref=unique, consistency="stale"))

    got = asyncio.run(asyncio.wait_for(first_page(), 30))
    assert [h["host_id"] for h in got["hosts"]][:1] == [pages[0]["hosts"][0]["host_id"]]

    with pytest.raises(Invalid):
        res.hosts(tenant_ref=unique, limit=129)
