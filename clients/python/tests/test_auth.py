"""Credentials: Unauthorized without one, Forbidden beyond the principal's
tenants and roles, owner digests derived from the principal."""

from __future__ import annotations

import pytest
from conftest import TOKENS

from arbiter_client import Client, Forbidden, NotFound, Unauthorized, digest, owner_digest


def test_credentials_and_refusals(auth_node: str) -> None:
    with Client(auth_node) as anonymous:
        with pytest.raises(Unauthorized):
            anonymous.cluster.whoami()
    with Client(auth_node, token="not-a-token-of-anyone") as wrong:
        with pytest.raises(Unauthorized):
            wrong.cluster.status()

    with Client(auth_node, token=TOKENS["agent-7"]) as agent:
        me = agent.cluster.whoami()
        assert me["principal"] == "agent-7" and me["owner_digest"] == owner_digest("agent-7")
        with pytest.raises(Forbidden):  # another tenant
            agent.work_items.submit(tenant_ref="team-b", kind="k", input_ref="i", max_attempts=1,
                                    max_tenant_in_flight=1, command_digest=digest(b"c"),
                                    policy_digest=digest(b"p"), catalog_digest=digest(b"k"), model_digest=digest(b"m"))
        with pytest.raises(Forbidden):  # a member is no controller
            agent.capacity_leases.update_cell("c", {"gpu": 1}, tenant_ref="team-a")
        with pytest.raises(Forbidden):  # nor an admin
            agent.nodes.create("x")
        sub = agent.work_items.submit(tenant_ref="team-a", kind="k", input_ref="i", max_attempts=1,
                                      max_tenant_in_flight=8, command_digest=digest(b"c"),
                                      policy_digest=digest(b"p"), catalog_digest=digest(b"k"),
                                      model_digest=digest(b"m"))
        assert sub["created"]

    with Client(auth_node, token=TOKENS["reader-1"]) as reader:
        assert reader.work_items.get(tenant_ref="team-a", work_item_id=sub["work_item_id"])["work_item"]
        with pytest.raises(Forbidden):  # a reader does not write
            reader.work_items.cancel(tenant_ref="team-a", work_item_id=sub["work_item_id"], reason="no")
        with pytest.raises(NotFound):  # another tenant's records do not exist for it
            reader.work_items.get(tenant_ref="team-b", work_item_id=sub["work_item_id"])

    with Client(auth_node, token=TOKENS["ops"]) as ops:
        assert ops.cluster.whoami()["roles"] == ["admin"]
        assert ops.nodes.create("made-by-ops")["created"]


def test_tls_with_a_client_certificate(tls_node: tuple[str, object]) -> None:
    from pathlib import Path

    from arbiter_client import Unavailable

    url, certs = tls_node
    assert isinstance(certs, Path)
    ca, cert, key = str(certs / "peer-ca.pem"), str(certs / "ops.pem"), str(certs / "ops-key.pem")
    with Client(url, ca=ca, cert=(cert, key)) as ops:
        me = ops.cluster.whoami()
        assert me["principal"] == "ops" and me["credential"] == "client_certificate"
        assert ops.nodes.create("over-tls")["created"]
    with Client(url, ca=ca) as anonymous, pytest.raises(Unauthorized):
        anonymous.cluster.whoami()
    with Client(url, cert=(cert, key), timeout=2) as untrusting, pytest.raises(Unavailable):
        untrusting.cluster.whoami()  # the node's CA is not the system's: the handshake fails
