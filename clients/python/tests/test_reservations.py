"""client.reservations: hosts, telemetry, reserve/release/reclaim/query,
with records sealed in Python and accepted by the server."""

from __future__ import annotations

import pytest

from arbiter_client import Client, Conflict, Invalid, digest, fingerprint, seal_reservation

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
