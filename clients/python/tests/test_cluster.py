"""client.cluster against the real 3-node cluster; readiness."""

from __future__ import annotations

import asyncio

import pytest
from conftest import Cluster

from arbiter_client import AsyncClient, Client, NotReady
from arbiter_client.call import Call


def test_status_capabilities_members(client: Client, cluster: Cluster) -> None:
    st = client.cluster.status()
    assert st["auth_mode"] == "open" and st["leader_id"] in {"n1", "n2", "n3"}
    members = client.cluster.members()
    assert sorted(m["id"] for m in members) == ["n1", "n2", "n3"] and all(m["voter"] for m in members)
    caps = client.cluster.capabilities()
    assert "capacity" in {d["name"] for d in caps["enabled"]["domains"]}
    assert client.cluster.whoami()["trusted"] is True
    assert client.cluster.ready(["capacity.acquire", "workitem.submit"])["status"] == "ready"


def test_ready_names_what_is_missing(client: Client) -> None:
    with pytest.raises(NotReady) as info:
        client.cluster.ready(["capacity.acquire@99", "workitem.submit"])
    assert info.value.missing == ["capacity.acquire@99"]


def test_a_call_needing_a_command_the_cluster_lacks_is_refused_before_sending(client: Client) -> None:
    client.require("capacity.acquire", "workitem.submit_batch", "projection")
    with pytest.raises(NotReady) as info:
        client.require("capacity.acquire@99")
    assert info.value.missing == ["capacity.acquire@99"]
    # A call whose requirement is not enabled never reaches the route (the
    # route here does not even exist: a sent request would be NotFound).
    call = Call("POST", "/v1/nowhere", body={}, write=True, requires=("capacity.acquire@99",))
    with pytest.raises(NotReady):
        client._transport.run(call)


def test_first_call_reads_capabilities(cluster: Cluster) -> None:
    with Client(cluster.addrs) as c:
        assert c._transport.readiness.enabled is None
        c.nodes.get  # binding alone sends nothing
        assert c._transport.readiness.enabled is None
        c.work_items.list(tenant_ref="nobody")
        assert "workitem" in (c._transport.readiness.enabled or {})


def test_change_feed_iterators(client: Client, unique: str) -> None:
    start = client.cluster.changes_page(after=0, limit=1)["last_seq"]
    for i in range(3):
        client.nodes.create(f"{unique}-{i}", labels=["feed"], properties={"i": i})
    keys = [e["key"] for e in client.cluster.changes(after=start, limit=2, follow=False)]
    assert [f"{unique}-{i}" for i in range(3)] == [k for k in keys if k.startswith(unique)]

    async def follow() -> list[str]:
        async with AsyncClient(client._transport.settings.addrs.urls) as ac:
            seen: list[str] = []
            async for event in ac.cluster.changes(after=start, limit=1, wait_ms=1000, include_values=True):
                if event["key"].startswith(unique):
                    assert event["value"]["properties"]["i"] == len(seen)
                    seen.append(event["key"])
                if len(seen) == 3:
                    break
            return seen

    assert asyncio.run(asyncio.wait_for(follow(), 30)) == [f"{unique}-{i}" for i in range(3)]


def test_every_call_has_a_deadline(cluster: Cluster) -> None:
    with pytest.raises(ValueError):
        Client(cluster.addrs, timeout=0)
    with Client(cluster.addrs) as c:
        fast = c.with_timeout(0.5)
        last = fast.cluster.changes_page(limit=1)["last_seq"]
        # A long poll may outlive the deadline by its wait.
        page = fast.cluster.changes_page(after=last, wait_ms=800)
        assert page["next"] >= last
