"""client.projection: targets, channel submissions, the fenced lease and
the holder() context manager (sync and async)."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import Cluster

from arbiter_client import AsyncClient, Client, Conflict, StaleFence, StaleWatermark, digest

HOLDER = digest(b"holder-instance")


@pytest.fixture()
def target(client: Client, unique: str) -> str:
    client.projection.set_config(30_000)
    attested = {"schema_version": "1", "capability": "hook-advisory", "harness_type": "claude-code",
                "instance_key_digest": digest(b"instance"), "workspace_key_digest": digest(b"workspace"),
                "projection_kind": unique}
    channels = [{"channel": "computed-route.v1", "producer": "route-producer"}]
    got = client.projection.register_target(attested, channels, agent_id="agent-7")
    assert got["created"] and got["target_id"]
    assert client.projection.register_target(attested, channels, agent_id="agent-7") == {"target_id": got["target_id"], "created": False}
    return got["target_id"]


def envelope(client: Client, target_id: str, watermark: int) -> dict:
    now = client.projection.target(target_id)["now_ms"]
    return {"schema": "computed-route.v1", "not_authority": True, "watermark": watermark,
            "expires_at_ms": now + 3_600_000, "provenance": {"run": watermark}, "citations": ["c"],
            "body": {"route": "\u2028 exact"}}


def test_submit_and_publish_through_the_holder(client: Client, target: str) -> None:
    proj = client.projection
    env = envelope(client, target, 2)
    assert proj.submit(target, "computed-route.v1", source_watermark=2, envelope=env)["status"] == "accepted"
    assert proj.submit(target, "computed-route.v1", source_watermark=2, envelope=env)["status"] == "replayed"
    with pytest.raises(StaleWatermark):
        proj.submit(target, "computed-route.v1", source_watermark=1, envelope=envelope(client, target, 1))

    with proj.holder(target, HOLDER) as held:
        assert held.lease["fencing_epoch"] > 0 and held.publication is None
        with pytest.raises(Conflict) as busy:  # single writer: a second acquire waits
            proj.acquire(target, holder_instance_digest=digest(b"other"))
        assert busy.value.detail["fencing_epoch"] == held.lease["fencing_epoch"]
    pub = held.publication
    assert pub is not None and pub["file"] == "written" and pub["fencing_epoch"] == held.lease["fencing_epoch"]
    current = json.loads(proj.current(target))
    assert current["publication_seq"] == pub["publication_seq"]
    assert current["channels"][0]["envelope"]["body"] == {"route": "\u2028 exact"}
    # The same publish again replays it (what the holder does after an
    # unknown outcome); another epoch is stale.
    again = proj.publish(target, token=held.lease["token"], fencing_epoch=held.lease["fencing_epoch"])
    assert again.get("replayed") and again["publication_seq"] == pub["publication_seq"]
    with pytest.raises(StaleFence):
        proj.publish(target, token=held.lease["token"], fencing_epoch=held.lease["fencing_epoch"] - 1)


def test_holder_releases_on_failure(client: Client, target: str) -> None:
    proj = client.projection
    with pytest.raises(RuntimeError):
        with proj.holder(target, HOLDER) as held:
            raise RuntimeError("render failed")
    assert held.publication is None
    view = proj.target(target)
    assert view["lease"] and view["lease"]["state"] != "held"
    lease = proj.acquire(target, holder_instance_digest=HOLDER)  # free again at once
    assert lease["fencing_epoch"] > held.lease["fencing_epoch"]
    released = proj.release(target, token=lease["token"], fencing_epoch=lease["fencing_epoch"])
    assert released["released"] is True
    with pytest.raises(StaleFence):
        proj.release(target, token=held.lease["token"], fencing_epoch=held.lease["fencing_epoch"])


def test_async_holder(cluster: Cluster, client: Client, target: str) -> None:
    client.projection.submit(target, "computed-route.v1", source_watermark=5, envelope=envelope(client, target, 5))

    async def publish() -> int:
        async with AsyncClient(cluster.addrs) as ac:
            async with ac.projection.holder(target, HOLDER) as held:
                assert (await ac.projection.target(target))["lease"]["state"] == "held"
            assert held.publication is not None
            return held.publication["publication_seq"]

    seq = asyncio.run(asyncio.wait_for(publish(), 30))
    assert json.loads(client.projection.current(target))["publication_seq"] == seq
