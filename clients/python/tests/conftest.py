"""Test harness: real ``arbiter serve`` processes.

Once per session the run builds the binary (``go build``, or takes
``ARBITER_BIN``), starts a 3-node cluster in open development mode on
loopback (free ports, a temporary directory per node) and one node with
principals and tokens for the authentication tests, waits until every
node is ready, and kills every process at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import httpx
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))  # the package from the checkout

from arbiter_client import Client  # noqa: E402

#: Bound of every wait for the cluster (start, election, catch-up).
WAIT = 60.0


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_until(what: str, check: Callable[[], bool], timeout: float = WAIT) -> None:
    """Poll ``check`` (every 50 ms, up to ``timeout``): real processes
    report their state only through their API."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


@dataclass
class Proc:
    """One ``arbiter serve`` process and how to start it again."""

    name: str
    api: str
    args: list[str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT)

    def kill(self, wait: bool = True) -> None:
        """SIGKILL; ``wait=False`` returns at once (the process dies while
        the caller's requests are in flight)."""
        if self.popen and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
        if self.popen and wait:
            self.popen.wait(timeout=10)

    def pause(self) -> None:
        """SIGSTOP: the process keeps its sockets but answers nothing."""
        if self.popen and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGSTOP)

    def ready(self) -> bool:
        return httpx.get(self.api + "/readyz", timeout=1).status_code == 200

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@dataclass
class Cluster:
    """The session's processes (``nodes``: the 3-node open cluster)."""

    binary: Path
    root: Path
    nodes: list[Proc] = field(default_factory=list)

    @property
    def addrs(self) -> list[str]:
        return [p.api for p in self.nodes]

    def leader(self) -> Proc:
        """The node every live member names as leader."""
        found: list[Proc] = []

        def known() -> bool:
            for p in self.nodes:
                if p.popen and p.popen.poll() is None:
                    st = httpx.get(p.api + "/v1/cluster/status", timeout=1).json()
                    found[:] = [q for q in self.nodes if q.api == "http://" + st.get("leader_api_addr", "")]
                    if found:
                        return True
            return False

        wait_until("a leader", known)
        return found[0]

    def wait_ready(self) -> None:
        for p in self.nodes:
            wait_until(f"{p.name} ready", p.ready)

        def voters() -> bool:
            st = httpx.get(self.nodes[0].api + "/v1/cluster/status", timeout=1).json()
            return sum(1 for m in st["members"] if m["voter"]) == len(self.nodes)

        wait_until("every member a voter", voters)


def build(tmp: Path) -> Path:
    given = os.environ.get("ARBITER_BIN")
    if given:
        return Path(given)
    out = tmp / "arbiter"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/arbiter"], cwd=REPO, check=True, timeout=600)
    return out


def serve_args(binary: Path, name: str, root: Path, raft: int, http: int, extra: list[str]) -> list[str]:
    data = root / name
    proj = root / (name + "-projection")
    proj.mkdir(parents=True, exist_ok=True)
    return [str(binary), "serve", "--id", name, "--data-dir", str(data), "--raft-addr", f"127.0.0.1:{raft}",
            "--http-addr", f"127.0.0.1:{http}", "--projection-root", str(proj), *extra]


#: Tokens of the authenticated node's principals.
TOKENS = {
    "ops": "ops-token-0123456789abcdef",
    "agent-7": "agent-7-token-0123456789abcdef",
    "reader-1": "reader-1-token-0123456789abcdef",
}


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three ``arbiter serve`` processes, open development mode."""
    root = tmp_path_factory.mktemp("arbiter")
    c = Cluster(build(root), root)
    ports = free_ports(6)
    first = f"http://127.0.0.1:{ports[3]}"
    for i in range(3):
        name = f"n{i + 1}"
        extra = ["--bootstrap"] if i == 0 else ["--join", first]
        args = serve_args(c.binary, name, root, ports[i], ports[3 + i], extra)
        c.nodes.append(Proc(name, f"http://127.0.0.1:{ports[3 + i]}", args, root / f"{name}.log"))
    try:
        for p in c.nodes:
            p.start()
            if p is c.nodes[0]:
                wait_until("n1 ready", p.ready)
        c.wait_ready()
        yield c
    except BaseException:
        for p in c.nodes:
            sys.stderr.write(f"--- {p.name} log ---\n{p.tail()}\n")
        raise
    finally:
        for p in c.nodes:
            p.kill()


@pytest.fixture(scope="session")
def auth_node(cluster: Cluster) -> Iterator[str]:
    """One node with principals and bearer tokens: ``ops`` (admin),
    ``agent-7`` (member of team-a), ``reader-1`` (reader of team-a)."""
    root = cluster.root / "auth"
    root.mkdir()
    principals = [
        {"id": "ops", "tenants": ["*"], "roles": ["admin"]},
        {"id": "agent-7", "tenants": ["team-a"], "roles": ["member"]},
        {"id": "reader-1", "tenants": ["team-a"], "roles": ["reader"]},
    ]
    for p in principals:
        p["token_sha256"] = [hashlib.sha256(TOKENS[str(p["id"])].encode()).hexdigest()]
    (root / "principals.json").write_text(json.dumps(principals))
    (root / "peer.token").write_text("peer-secret-0123456789abcdef\n")
    raft, http = free_ports(2)
    args = serve_args(cluster.binary, "a1", root, raft, http,
                      ["--bootstrap", "--principals", str(root / "principals.json"),
                       "--peer-token-file", str(root / "peer.token")])
    p = Proc("a1", f"http://127.0.0.1:{http}", args, root / "a1.log")
    p.start()
    try:
        wait_until("a1 ready", p.ready)
        yield p.api
    except BaseException:
        sys.stderr.write(f"--- a1 log ---\n{p.tail()}\n")
        raise
    finally:
        p.kill()


@pytest.fixture()
def client(cluster: Cluster) -> Iterator[Client]:
    with Client(cluster.addrs) as c:
        yield c


@pytest.fixture()
def unique(request: pytest.FixtureRequest) -> str:
    """A name unique to the test (tenants, ids), so tests share the
    cluster without seeing each other's records."""
    return f"{request.node.name.replace('_', '-')[:40]}-{time.monotonic_ns() % 10**9}"


@pytest.fixture(scope="session")
def tls_node(cluster: Cluster) -> Iterator[tuple[str, Path]]:
    """One node serving https with client certificates (``arbiter cert``):
    its URL and the directory of the CA and the ``ops`` certificate."""
    root = cluster.root / "tls"
    certs = root / "certs"
    root.mkdir()
    run = lambda *a: subprocess.run([str(cluster.binary), "cert", *a, "--dir", str(certs)], check=True,  # noqa: E731
                                    capture_output=True, timeout=60)
    run("ca")
    run("node", "--id", "t1")
    made = json.loads(run("client", "--principal", "ops", "-o", "json").stdout)
    (root / "principals.json").write_text(json.dumps(
        [{"id": "ops", "tenants": ["*"], "roles": ["admin"], "cert_sha256": [made["cert_sha256"]]}]))
    raft, http = free_ports(2)
    args = serve_args(cluster.binary, "t1", root, raft, http, [
        "--bootstrap", "--principals", str(root / "principals.json"), "--tls-cert", str(certs / "t1.pem"),
        "--tls-key", str(certs / "t1-key.pem"), "--tls-peer-ca", str(certs / "peer-ca.pem"),
        "--tls-client-ca", str(certs / "client-ca.pem")])
    p = Proc("t1", f"https://127.0.0.1:{http}", args, root / "t1.log")
    p.start()
    try:
        ca = str(certs / "peer-ca.pem")
        wait_until("t1 ready", lambda: httpx.get(p.api + "/readyz", verify=ca, timeout=1).status_code == 200)
        yield p.api, certs
    except BaseException:
        sys.stderr.write(f"--- t1 log ---\n{p.tail()}\n")
        raise
    finally:
        p.kill()
