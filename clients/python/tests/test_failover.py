"""The leader is killed (SIGKILL) while 16 asyncio tasks submit work
items: no acknowledged write is lost, every unknown outcome is resolved by
replaying its request with the same key to one result, and nothing the
client reported as not applied was applied.

The leader is frozen (SIGSTOP) until every writer's request to it has
left the client (httpcore's trace says the body was sent and no answer
came), then killed: each of those requests loses its answer, so the test
always has 16 unknown outcomes to resolve."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from conftest import Cluster

from arbiter_client import AsyncClient, OutcomeUnknown, Unavailable, digest
from arbiter_client.types import SubmitResult

TASKS = 16
PER_TASK = 150  # bound of each writer's loop
TENANT = "failover"
DIGESTS = {"command_digest": digest(b"c"), "policy_digest": digest(b"p"), "catalog_digest": digest(b"k"),
           "model_digest": digest(b"m")}


async def until(what: str, cond: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def test_leader_killed_while_16_tasks_write(cluster: Cluster) -> None:
    leader = cluster.leader()
    # The leader first: every write goes to it until it dies.
    addrs = [leader.api] + [p.api for p in cluster.nodes if p is not leader]
    acked: dict[str, SubmitResult] = {}
    unknown: list[tuple[str, OutcomeUnknown]] = []
    refused: list[str] = []
    awaiting: set[int] = set()  # requests sent whose answer has not come

    def trace_requests(ac: AsyncClient) -> None:
        send = ac._http.request  # the client's httpx.AsyncClient

        async def traced(*args: Any, **kwargs: Any) -> Any:
            me = object()

            async def trace(event: str, info: Any) -> None:
                if event == "http11.send_request_body.complete":
                    awaiting.add(id(me))
                elif event.startswith("http11.receive_response_headers.") and not event.endswith(".started"):
                    awaiting.discard(id(me))

            try:
                return await send(*args, extensions={"trace": trace}, **kwargs)
            finally:
                awaiting.discard(id(me))

        ac._http.request = traced  # type: ignore[method-assign]

    async def writer(ac: AsyncClient, task: int, stop: asyncio.Event) -> None:
        for i in range(PER_TASK):
            if stop.is_set():
                return
            wid = f"fo-{task}-{i}"
            try:
                acked[wid] = await ac.work_items.submit(
                    tenant_ref=TENANT, work_item_id=wid, idempotency_key="key-" + wid, kind="k", input_ref="i",
                    max_attempts=1, max_tenant_in_flight=4096, **DIGESTS)
            except OutcomeUnknown as err:
                assert err.idempotency_key == "key-" + wid
                unknown.append((wid, err))
            except Unavailable:
                refused.append(wid)  # answered before anything was proposed

    async def run() -> None:
        async with AsyncClient(addrs, timeout=10) as ac:
            trace_requests(ac)
            stop = asyncio.Event()
            writers = [asyncio.create_task(writer(ac, t, stop)) for t in range(TASKS)]
            await until("writes before the kill", lambda: len(acked) >= 2 * TASKS)
            before = len(acked)
            leader.pause()
            await until("every writer's request sent to the frozen leader", lambda: len(awaiting) == TASKS)
            leader.kill(wait=False)
            await until("writes after the kill", lambda: len(acked) >= before + 2 * TASKS)
            stop.set()
            await asyncio.gather(*writers)

            for wid, err in unknown:
                first = await ac.replay(err)
                again = await ac.replay(err)
                assert first["work_item_id"] == wid
                assert again["replayed"] and again["command_sequence"] == first["command_sequence"]
                acked[wid] = first

            listed: set[str] = set()
            after = None
            for _ in range(TASKS * PER_TASK // 128 + 2):  # pages of 128
                page = await ac.work_items.list(tenant_ref=TENANT, after=after, limit=128)
                listed |= {s["work_item_id"] for s in page["work_items"]}
                after = page["next_cursor"]
                if not after:
                    break
            assert set(acked) <= listed, f"lost acknowledged writes: {sorted(set(acked) - listed)[:5]}"
            assert not listed & set(refused), "a write reported as not applied was applied"
            for wid in list(acked)[:: max(1, len(acked) // 64)]:
                item = (await ac.work_items.get(tenant_ref=TENANT, work_item_id=wid))["work_item"]
                assert item["command_sequence"] == acked[wid]["command_sequence"]

    try:
        asyncio.run(asyncio.wait_for(run(), 120))
        assert len(unknown) >= TASKS, "every write in flight to the killed leader has an unknown outcome"
    finally:
        leader.kill()
        leader.start()
        cluster.wait_ready()
