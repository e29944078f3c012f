"""client.nodes: first writer wins, fenced CAS, pages, exact numbers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from arbiter_client import Client, Invalid, NotFound


def test_first_writer_wins_and_a_retry_replays(client: Client, unique: str) -> None:
    first = client.nodes.create(unique, labels=["concept"], properties={"owner": "a"}, idempotency_key=unique)
    assert first["created"] and first["node"]["properties"] == {"owner": "a"}
    loser = client.nodes.create(unique, properties={"owner": "b"})
    assert not loser["created"] and loser["node"]["properties"]["owner"] == "a"
    again = client.nodes.create(unique, labels=["concept"], properties={"owner": "a"}, idempotency_key=unique)
    assert again["created"] and again.get("replayed") is True


def test_cas_swaps_once_and_names_failures(client: Client, unique: str) -> None:
    client.nodes.create(unique, properties={"fence": 1})
    ok = client.nodes.cas(unique, conditions={"fence": 1}, updates={"fence": 2, "state": "m"})
    assert ok["swapped"] and ok["node"]["version"] == 2
    stale = client.nodes.cas(unique, conditions={"fence": 1}, updates={"state": "stolen"})
    assert not stale["swapped"]
    assert stale["failed"] == [{"field": "fence", "check": "equal", "reason": "different"}]
    indexed = client.nodes.cas(unique, conditions={"fence": 2}, updates={"state": "x"}, set_index=["fence"])
    assert indexed["node"]["properties"]["fence"] == indexed["node"]["modified_index"]
    with pytest.raises(NotFound):
        client.nodes.cas(unique + "-missing", conditions={}, updates={"a": 1})
    with pytest.raises(Invalid):
        client.nodes.cas(unique, conditions={}, updates={})


def test_get_pages_and_exact_numbers(client: Client, unique: str) -> None:
    props = {"price": Decimal("10.10"), "big": 2**70, "s": "\u2028"}
    for i in range(3):
        client.nodes.create(f"{unique}-{i}", labels=[f"l{unique}".replace("-", "")], properties=props)
    got = client.nodes.get(f"{unique}-0", consistency="stale")
    assert got["properties"]["big"] == 2**70 and got["properties"]["s"] == "\u2028"
    assert got["properties"]["price"] == Decimal("10.10")
    label = f"l{unique}".replace("-", "")
    seen, after = [], None
    for _ in range(10):  # 3 nodes, 2 a page
        page = client.nodes.by_label(label, after=after, limit=2)
        seen += [n["node_id"] for n in page["nodes"]]
        after = page["next_cursor"]
        if not after:
            break
    assert seen == [f"{unique}-{i}" for i in range(3)]
    with pytest.raises(NotFound):
        client.nodes.get(unique + "-nope")


def test_replay_sends_the_same_request_with_the_same_key(client: Client, unique: str) -> None:
    from arbiter_client import OutcomeUnknown
    from arbiter_client.nodes import Nodes

    call = Nodes.create.build(client.nodes, unique, properties={"v": 1})
    lost = OutcomeUnknown("the answer was lost", idempotency_key=call.idempotency_key)
    lost.call = call
    first = client.replay(lost)
    assert first["created"]
    again = client.with_retry(5).replay(lost)
    assert again["created"] and again.get("replayed") and again["node"] == first["node"]
