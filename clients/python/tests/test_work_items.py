"""client.work_items: admission, replay, batches, fenced claims."""

from __future__ import annotations

import pytest

from arbiter_client import (
    Client,
    Conflict,
    Exhausted,
    IdempotencyConflict,
    Invalid,
    NotFound,
    StaleFence,
    digest,
    file_digest,
)

DIGESTS = {"command_digest": digest(b"run tests"), "policy_digest": digest(b"policy"),
           "catalog_digest": digest(b"catalog"), "model_digest": digest(b"model")}


def submit(client: Client, tenant: str, **kw: object) -> dict:
    args: dict = dict(tenant_ref=tenant, kind="ci", input_ref="in", max_attempts=2, max_tenant_in_flight=64,
                      **DIGESTS)
    args.update(kw)
    return dict(client.work_items.submit(**args))


def test_submit_replay_and_refusals(client: Client, unique: str, tmp_path: object) -> None:
    first = submit(client, unique, work_item_id="item-a", idempotency_key="k-a", metadata={"n": 1})
    assert first["created"] and first["status"] == "pending" and first["quota"]["in_flight"] == 1
    again = submit(client, unique, work_item_id="item-a", idempotency_key="k-a", metadata={"n": 1})
    assert again["replayed"] and again["command_sequence"] == first["command_sequence"]
    with pytest.raises(IdempotencyConflict):
        submit(client, unique, work_item_id="item-a", idempotency_key="k-a", metadata={"n": 2})
    with pytest.raises(Conflict):
        submit(client, unique, work_item_id="item-a")
    with pytest.raises(Invalid) as missing:
        submit(client, unique, depends_on=["item-nope"])
    assert missing.value.detail.get("reason") == "dependency_missing"
    with pytest.raises(Exhausted) as capped:
        submit(client, unique, max_tenant_in_flight=1)
    assert capped.value.detail == {"in_flight": 1, "cap": 1}
    with pytest.raises(Invalid):
        submit(client, unique, command_digest="sha256:short")
    path = tmp_path / "model.bin"  # type: ignore[operator]
    path.write_bytes(b"weights" * 1000)
    assert file_digest(path) == digest(b"weights" * 1000)


def test_batch_claim_complete(client: Client, unique: str) -> None:
    child = dict(kind="ci", input_ref="in", max_attempts=2, max_tenant_in_flight=64, **DIGESTS)
    batch = client.work_items.submit_batch(
        [{**child, "work_item_id": "parent"}, {**child, "work_item_id": "child", "depends_on": ["parent"]}],
        tenant_ref=unique, idempotency_key="batch-1")
    assert [r["work_item_id"] for r in batch["results"]] == ["parent", "child"]
    assert batch["batch_sequence_range"]["last"] == batch["batch_sequence_range"]["first"] + 1
    replay = client.work_items.submit_batch(
        [{**child, "work_item_id": "parent"}, {**child, "work_item_id": "child", "depends_on": ["parent"]}],
        tenant_ref=unique, idempotency_key="batch-1")
    assert replay["replayed"]

    claim = client.work_items.claim(tenant_ref=unique, owner_ref="worker-1", ttl_ms=60_000)
    assert claim["work_item"]["work_item_id"] == "parent"  # the child waits on it
    with pytest.raises(NotFound):
        client.work_items.claim(tenant_ref=unique, owner_ref="worker-2", ttl_ms=60_000)
    with pytest.raises(StaleFence):
        client.work_items.complete(tenant_ref=unique, work_item_id="parent", attempt=claim["attempt"],
                                   fence=claim["fence"] + 1, outcome="succeeded")
    done = client.work_items.complete(tenant_ref=unique, work_item_id="parent", attempt=claim["attempt"],
                                      fence=claim["fence"], outcome="succeeded", result_ref="ok")
    assert done["work_item"]["status"] == "succeeded"
    assert client.work_items.get(tenant_ref=unique, work_item_id="child")["work_item"]["dependencies"] == {
        "total": 1, "satisfied": 1}
    cancelled = client.work_items.cancel(tenant_ref=unique, work_item_id="child", reason="not needed")
    assert cancelled["work_item"]["status"] == "cancelled"
    with pytest.raises(Conflict):
        client.work_items.cancel(tenant_ref=unique, work_item_id="parent", reason="too late")
    page = client.work_items.list(tenant_ref=unique, limit=1)
    assert len(page["work_items"]) == 1 and page["next_cursor"]
    rest = client.work_items.list(tenant_ref=unique, after=page["next_cursor"])
    assert [s["work_item_id"] for s in page["work_items"] + rest["work_items"]] == ["parent", "child"]
