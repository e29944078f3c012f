"""The request path without a server: exchange() is driven by hand, so
failover, lost answers, deadlines and error decoding are pinned exactly."""

from __future__ import annotations

from typing import Any, Generator

import httpx
import pytest

from arbiter_client import (
    AllocationConflict,
    Conflict,
    Exhausted,
    Invalid,
    NotReady,
    OutcomeUnknown,
    Unavailable,
)
from arbiter_client.call import Call
from arbiter_client.errors import _BY_CODE, from_response
from arbiter_client.transport import Addresses, Readiness, Send, Wait, exchange

WRITE = Call("POST", "/v1/x", body={"a": 1}, write=True, idempotency_key="k-1")
READ = Call("GET", "/v1/y", query={"q": "1"})


def drive(call: Call[Any], addrs: Addresses, replies: list[Any], timeout: float = 5.0) -> tuple[Any, list[Any]]:
    """Run exchange, answering each Send with the next reply; returns the
    result and the steps."""
    steps: list[Any] = []
    gen: Generator[Any, Any, Any] = exchange(call, addrs, {"Accept": "application/json"}, timeout, 1.0)
    reply: Any = None
    try:
        while True:
            step = gen.send(reply)
            steps.append(step)
            reply = replies.pop(0) if isinstance(step, Send) else None
    except StopIteration as done:
        return done.value, steps


def ok(body: bytes = b'{"ok":true}', status: int = 200) -> httpx.Response:
    return httpx.Response(status, content=body)


def test_unreachable_address_moves_on_and_sticks() -> None:
    addrs = Addresses("http://a:1,http://b:2")
    result, steps = drive(WRITE, addrs, [httpx.ConnectError("refused"), ok()])
    assert result == {"ok": True}
    assert [s.url for s in steps] == ["http://a:1/v1/x", "http://b:2/v1/x"]
    assert addrs.current == 1  # the next call starts where this one succeeded
    sent = steps[1]
    assert sent.content == b'{"a":1}' and sent.headers["Content-Type"] == "application/json"
    assert 1 <= int(sent.headers["Request-Timeout"]) <= 5000


def test_lost_answer_of_a_write_is_unknown_with_its_key() -> None:
    with pytest.raises(OutcomeUnknown) as info:
        drive(WRITE, Addresses("http://a:1,http://b:2"), [httpx.ReadError("reset")])
    assert info.value.idempotency_key == "k-1" and "k-1" in str(info.value)


def test_lost_answer_of_a_read_tries_the_next_address() -> None:
    result, steps = drive(READ, Addresses(["http://a:1", "http://b:2"]), [httpx.RemoteProtocolError("gone"), ok()])
    assert result == {"ok": True} and steps[1].url == "http://b:2/v1/y?q=1"


def test_every_address_down_pauses_then_gives_up_at_the_deadline() -> None:
    addrs = Addresses("http://a:1")
    with pytest.raises(Unavailable) as info:
        drive(READ, addrs, [httpx.ConnectError("refused")] * 100, timeout=0.3)
    assert "no node answered" in str(info.value) and not isinstance(info.value, OutcomeUnknown)


def test_rounds_are_separated_by_waits() -> None:
    _, steps = drive(READ, Addresses("http://a:1,http://b:2"),
                     [httpx.ConnectError("x"), httpx.ConnectError("y"), ok()])
    assert [type(s).__name__ for s in steps] == ["Send", "Send", "Wait", "Send"]
    assert isinstance(steps[2], Wait) and 0 < steps[2].seconds <= 0.05


def test_idempotency_key_header_only_where_the_route_takes_it() -> None:
    call = Call("POST", "/v1/spaces/s/tasks", body={}, write=True, idempotency_key="k", key_header=True)
    _, steps = drive(call, Addresses("http://a:1"), [ok(status=201)])
    assert steps[0].headers["Idempotency-Key"] == "k"
    _, steps = drive(WRITE, Addresses("http://a:1"), [ok()])
    assert "Idempotency-Key" not in steps[0].headers


def test_error_bodies() -> None:
    err = from_response(409, {"error": {"code": "exhausted", "message": "no room",
                                        "detail": {"decision": "exhausted", "result": {"available": []}}}})
    assert isinstance(err, Exhausted) and err.result == {"available": []} and err.status == 409
    unknown = from_response(503, {"error": {"code": "unavailable", "message": "m", "outcome_unknown": True,
                                            "detail": {"idempotency_key": "k-9"}}}, retry_after=1.0)
    assert isinstance(unknown, OutcomeUnknown) and unknown.idempotency_key == "k-9" and unknown.retry_after == 1.0
    flat = {"error": "allocation_conflict", "code": "conflict_key_occupied", "winner": {"type": "task", "id": 9},
            "write_occurred": False}
    conflict = from_response(409, flat)
    assert isinstance(conflict, AllocationConflict) and isinstance(conflict, Conflict)
    assert conflict.body == flat
    missing = from_response(503, {"error": {"code": "unavailable", "message": "incompatible deployment",
                                            "detail": {"missing": ["capacity.acquire@9"]}}})
    assert isinstance(missing, NotReady) and missing.missing == ["capacity.acquire@9"]
    assert isinstance(from_response(422, b"not json"), Invalid)


def test_one_class_per_server_code() -> None:
    import re

    from conftest import REPO

    # The shared codes are errs' closed set; a domain registers its own
    # (errs.MustRegister in the domain's package, e.g. projection/codes.go).
    go = (REPO / "errs/errs.go").read_text()
    codes = set(re.findall(r'Code\w+\s+Code = "(\w+)"', go))
    for path in REPO.glob("*/*.go"):
        if not path.name.endswith("_test.go"):
            codes |= set(re.findall(r'errs\.MustRegister\("(\w+)"', path.read_text()))
    assert "stale_watermark" in codes
    assert codes and codes == set(_BY_CODE)
    for code, cls in _BY_CODE.items():
        assert isinstance(from_response(400, {"error": {"code": code, "message": "m"}}), cls)


def test_error_through_exchange_carries_status_and_retry_after() -> None:
    body = b'{"error":{"code":"conflict","message":"held","detail":{"holder":"x"}}}'
    with pytest.raises(Conflict) as info:
        drive(WRITE, Addresses("http://a:1"), [httpx.Response(409, content=body, headers={"Retry-After": "2"})])
    assert info.value.detail == {"holder": "x"} and info.value.retry_after == 2.0


def test_readiness_matches_full_and_short_names() -> None:
    r = Readiness()
    r.update({"enabled": {"domains": [{"name": "capacity", "commands": [
        {"type": 1, "name": "capacity_acquire", "version": 3}]}]}})
    assert r.missing(["capacity", "capacity.acquire", "capacity.capacity_acquire@3"]) == []
    assert r.missing(["capacity.acquire@4", "capacity.renew", "workitem"]) == [
        "capacity.acquire@4", "capacity.renew", "workitem"]
    with pytest.raises(NotReady) as info:
        r.check(["workitem.submit"])
    assert info.value.missing == ["workitem.submit"]


def test_retry_replays_while_unknown_and_stops_on_an_answer() -> None:
    from arbiter_client import NotReady, retry

    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise OutcomeUnknown("lost", idempotency_key="k")
        return "done"

    assert retry(flaky, timeout=5) == "done" and len(calls) == 3

    def not_ready() -> str:
        calls.append(1)
        raise NotReady("incompatible deployment", detail={"missing": ["x.y"]})

    calls.clear()
    with pytest.raises(NotReady):
        retry(not_ready, timeout=5)
    assert len(calls) == 1  # another deployment is needed, not another try

    def down() -> str:
        raise Unavailable("no leader")

    with pytest.raises(Unavailable):
        retry(down, timeout=0.2)  # bounded by its deadline
