"""Every Python example of clients/python/README.md runs as written
against the session's cluster (ARBITER_ADDR names its nodes)."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from conftest import HERE, Cluster

README = (HERE.parent / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_there_are_examples_of_every_domain() -> None:
    text = "".join(BLOCKS)
    for service in ("nodes", "work_items", "capacity_leases", "reservations", "concepts", "allocation",
                    "projection", "cluster", "AsyncClient"):
        assert service in text


@pytest.mark.parametrize("block", BLOCKS, ids=[f"example-{i}" for i in range(len(BLOCKS))])
def test_example_runs(block: str, cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARBITER_ADDR", ",".join(cluster.addrs))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "__readme__"})
