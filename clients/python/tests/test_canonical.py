"""Canonical JSON and sealing, against the repository's shared vectors
(internal/canon/testdata/jcs_vectors.json) and the Go rules."""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal

import pytest
from conftest import REPO

from arbiter_client import CanonicalError, digest, fingerprint, jcs, jcs_text, owner_digest, seal_reservation
from arbiter_client.canonical import dumps, loads

VECTORS = json.loads((REPO / "internal/canon/testdata/jcs_vectors.json").read_text(encoding="utf-8"))["vectors"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_shared_vectors(vector: dict) -> None:
    if vector.get("error"):
        with pytest.raises(CanonicalError):
            jcs_text(vector["input"])
        return
    out = jcs_text(vector["input"].encode("utf-8"))
    assert out == vector["canonical"].encode("utf-8")
    assert hashlib.sha256(out).hexdigest() == vector["sha256"]


def test_vectors_cover_the_issue_cases() -> None:
    names = " ".join(v["name"] for v in VECTORS)
    for case in ("non-ASCII", "U+2028", "control characters", "quote", "largest safe integers"):
        assert case in names


def test_values_agree_with_text() -> None:
    value = {"b": [1, True, None], "a": "caf\u00e9 \u2028\u2029 \x00\x1f\x7f", "\ue000": 1, "\U0001f600": 2}
    assert jcs(value) == jcs_text(json.dumps(value))
    assert jcs(value).decode("utf-8") == (
        '{"a":"caf\u00e9 \u2028\u2029 \\u0000\\u001f\x7f","b":[1,true,null],"\U0001f600":2,"\ue000":1}'
    )


@pytest.mark.parametrize("bad", [1.5, 2**53, -(2**53), float("nan"), float("inf"), Decimal("0.1"), "\ud800",
                                 {1: "x"}, object()])
def test_values_without_a_canonical_form(bad: object) -> None:
    with pytest.raises(CanonicalError):
        jcs(bad)


def test_integral_numbers_in_any_spelling() -> None:
    assert jcs([1.0, Decimal("1e2"), -0, 2**53 - 1]) == b"[1,100,0,9007199254740991]"


def test_nesting_bound() -> None:
    deep: object = []
    for _ in range(31):
        deep = [deep]
    assert jcs(deep).startswith(b"[[")
    with pytest.raises(CanonicalError):
        jcs([deep])


def test_wire_keeps_exact_numbers() -> None:
    value = loads(b'{"f":1.10,"big":123456789012345678901234567890,"e":1e400}')
    assert value["f"] == Decimal("1.10") and isinstance(value["big"], int)
    assert dumps(value) == b'{"f":1.10,"big":123456789012345678901234567890,"e":1E+400}'


def test_digests() -> None:
    assert digest(b"abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert digest("abc") == digest(b"abc")
    # log.Principal.OwnerDigest: sha256("arbiter-owner\x00" + id)
    assert owner_digest("agent-7") == "sha256:" + hashlib.sha256(b"arbiter-owner\x00agent-7").hexdigest()


def test_fingerprint_is_jcs_without_the_field() -> None:
    vector = next(v for v in VECTORS if v["name"] == "a realistic fingerprint input")
    record = json.loads(vector["input"])
    assert fingerprint(record) == "v1:" + vector["sha256"]
    assert fingerprint({**record, "fingerprint": "v1:whatever"}) == "v1:" + vector["sha256"]


def test_seal_fills_defaults_and_drops_empty_branch() -> None:
    sealed = seal_reservation({
        "profile": {"name": "ci", "version": "1"},
        "dimensions": {"cpu_millis": 1, "memory_mib": 1, "disk_mib": 1, "processes": 1},
        "concurrency": {"key": "ci", "limit": 1},
        "exclusivity": {"repository": False, "branch": False},
        "repository": "r", "branch": "", "fairness": {"group": "g", "cost": 1}, "disk": {"min_free_mib": 0},
    })
    assert sealed["schema_version"] == "1" and "branch" not in sealed
    assert sealed["host_labels"] == {} and sealed["anti_affinity"] == [] and sealed["target_policies"] == []
    assert sealed["fingerprint"] == fingerprint(sealed)
