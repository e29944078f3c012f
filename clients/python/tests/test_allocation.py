"""client.allocation: first writer of a conflict key, windows,
reservations, notes, supersede; the flat 409 as AllocationConflict."""

from __future__ import annotations

import pytest

from arbiter_client import AllocationConflict, Client, Conflict, Invalid, NotFound

CATALOG = [
    {"work_item_id": "T1", "canonical_title": "Comparative survey of multi-agent orchestration patterns and harnesses",
     "aliases": ["literature review of agent frameworks"]},
    {"work_item_id": "T3", "canonical_title": "Stopping and re-entry patterns for looping agents",
     "aliases": ["halting conditions and termination", "checkpoints and resumption of loops"]},
]
T1_TITLE = "Survey multi-agent orchestration patterns, harnesses and frameworks (loops, checkpoints)"


@pytest.fixture()
def space(client: Client, unique: str) -> str:
    slug = unique.lower()
    put = client.allocation.put_space(slug, catalog=CATALOG, tenant_ref="team-a")
    assert put["space"]["slug"] == slug and put["space"]["delivery_modes"] == ["result"]
    return slug


def test_first_writer_wins_the_key(client: Client, space: str) -> None:
    alloc = client.allocation
    bound = alloc.bind(space, T1_TITLE)
    assert bound["work_item_id"] == "T1"
    won = alloc.create_task(space, T1_TITLE, delivery_mode="result", idempotency_key="create-1")
    task = won["task"]
    assert task["status"] == "open" and task["work_item_id"] == "T1"
    # A retry under the same key answers the original body, never a 409.
    assert alloc.create_task(space, T1_TITLE, delivery_mode="result", idempotency_key="create-1")["task"]["id"] == task["id"]
    with pytest.raises(AllocationConflict) as lost:
        alloc.create_task(space, CATALOG[0]["canonical_title"], delivery_mode="result")
    body = lost.value.body
    assert body["code"] == "conflict_key_occupied" and body["winner"]["id"] == task["id"]
    assert body["write_occurred"] is False and isinstance(lost.value, Conflict)
    with pytest.raises(Invalid):
        alloc.create_task(space, T1_TITLE, delivery_mode="carrier-pigeon")

    moved = alloc.transition(space, task["id"], "claim", expected_version=task["version"])
    assert moved["task"]["status"] == "claimed"
    assert alloc.get_task(space, task["id"])["task"]["status"] == "claimed"
    assert [t["id"] for t in alloc.list_tasks(space)["tasks"]] == [task["id"]]
    occupied = alloc.occupancy(space)["occupancy"]
    assert occupied[0]["winner"]["id"] == task["id"]
    assert space in [s["slug"] for s in alloc.list_spaces(limit=128)["spaces"]]


def test_notes_supersede_hold(client: Client, space: str) -> None:
    alloc = client.allocation
    t3 = alloc.create_task(space, CATALOG[1]["canonical_title"], delivery_mode="result")["task"]
    note = alloc.post_note(space, t3["id"], "Resumption is missing.", criterion_index=1, delivery_mode="result",
                           idempotency_key="note-1")
    assert note["note"]["task_id"] == t3["id"]
    with pytest.raises(AllocationConflict):
        alloc.post_note(space, t3["id"], "Resumption is missing.", criterion_index=1, delivery_mode="result")
    assert [n["id"] for n in alloc.list_notes(space, t3["id"])["notes"]] == [note["note"]["id"]]

    # An ad-hoc duplicate in another space's slot: supersede it by a survivor.
    other = alloc.create_task(space, "An unrelated piece of work about gardening", delivery_mode="result")["task"]
    dup = alloc.create_task(space, "Yet another unrelated piece about cooking", delivery_mode="result")["task"]
    gone = alloc.supersede(space, dup["id"], surviving_task=other["id"], reason="duplicate")
    assert gone["task"]["status"] == "superseded" and gone["task"]["superseded_by"] == other["id"]
    with pytest.raises(AllocationConflict) as superseded:
        alloc.transition(space, dup["id"], "claim")
    assert superseded.value.body["error"] == "task_superseded"
    held = alloc.hold(space, other["id"], True)
    assert held["task"]["steward_hold"] is True
    with pytest.raises(NotFound):
        alloc.get_task(space, 999_999)


def test_windows_and_reservations(client: Client, space: str) -> None:
    alloc = client.allocation
    window = alloc.window(space, [
        {"proposal_id": "p1", "title": T1_TITLE, "delivery_mode": "result", "received_seq": 1},
        {"proposal_id": "p2", "title": CATALOG[0]["canonical_title"], "delivery_mode": "result", "received_seq": 2},
    ], idempotency_key="window-1")
    assert [(r["proposal_id"], r["status"]) for r in window["results"]] == [("p1", 201), ("p2", 409)]
    assert window["results"][1]["body"]["reserved_proposal_id"] == "p1" or window["results"][1]["body"]["code"]

    res = alloc.reserve(space, "r1", CATALOG[1]["canonical_title"], delivery_mode="result")
    assert res["reservation"]["proposal_id"] == "r1"
    with pytest.raises(AllocationConflict) as held:
        alloc.reserve(space, "r2", CATALOG[1]["canonical_title"], delivery_mode="result")
    assert held.value.body["code"] == "conflict_key_reserved"
    assert [r["proposal_id"] for r in alloc.list_reservations(space)["reservations"]] == ["r1"]
    committed = alloc.commit(space, "r1", {"type": "issue", "id": "GH-1"})
    assert committed["winner"] == {"type": "issue", "id": "GH-1"}
    dropped = alloc.release(space, "r1")
    assert dropped["dropped"] is True
    alloc.reserve(space, "r3", CATALOG[1]["canonical_title"], delivery_mode="result")
    assert alloc.abort(space, "r3")["dropped"] is True
    assert alloc.duplicates(space)["duplicates"] == []
