"""Hook projections (``/v1/projection``): producers submit envelopes to a
target's channels; a writer acquires the target's single-writer lease and
publishes ``current.json``, fenced by the log.

:meth:`Projection.holder` is the writer's whole protocol: acquire, let the
caller prepare, publish on success, release (token and epoch checked) on
failure. A lease held by another is :class:`~arbiter_client.Conflict`
with ``detail`` ``{fencing_epoch, expires_at_ms, retry_after_ms}``.
"""

from __future__ import annotations

import inspect
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, AsyncContextManager, AsyncIterator, Callable, ContextManager, Iterator, Mapping, Sequence, overload

from .call import Async, Call, Domain, M, Sync, endpoint, fields, path, read, write
from .errors import ArbiterError, OutcomeUnknown, Unavailable
from .types import (
    Attested,
    ChannelBinding,
    ChannelSubmitResult,
    ProjectionConfig,
    ProjectionLease,
    ProjectionReleaseResult,
    PublishResult,
    TargetResult,
    TargetView,
)

__all__ = ["Projection", "Held"]


@dataclass
class Held:
    """The lease a :meth:`Projection.holder` block holds; ``publication``
    is set once the block's publish succeeded."""

    lease: ProjectionLease
    publication: PublishResult | None = None


class Projection(Domain[M]):
    """``client.projection``: targets, submit, acquire, publish, release,
    holder, config."""

    @endpoint
    def config(self, *, consistency: str | None = None) -> Call[ProjectionConfig]:
        """The lease TTL (``lease_ttl_ms`` 0: not configured)."""
        return read("/v1/projection/config", requires=("projection",), consistency=consistency)

    @endpoint
    def set_config(self, lease_ttl_ms: int) -> Call[ProjectionConfig]:
        """Set the lease TTL (admin; 1..3600000 ms). Acquire answers
        :class:`~arbiter_client.Unavailable` until it is set."""
        return write("PUT", "/v1/projection/config", {"lease_ttl_ms": lease_ttl_ms},
                     requires=("projection.set_config",))

    @endpoint
    def register_target(
        self, attested: Attested, channels: Sequence[ChannelBinding], *, agent_id: str | None = None
    ) -> Call[TargetResult]:
        """Admit a target: its id is derived from the attested tuple (the
        same tuple and bindings again answer it, ``created`` false)."""
        body = fields(attested=dict(attested), channels=[dict(c) for c in channels], agent_id=agent_id)
        return write("POST", "/v1/projection/targets", body, requires=("projection.register_target",))

    @endpoint
    def target(self, target_id: str, *, consistency: str | None = None) -> Call[TargetView]:
        """The target's channels, lease and last publication."""
        return read(path("projection", "targets", target_id), requires=("projection",), consistency=consistency)

    @endpoint
    def current(self, target_id: str, *, consistency: str | None = None) -> Call[bytes]:
        """The last publication, byte for byte ``current.json``."""
        c = read(path("projection", "targets", target_id, "current"), requires=("projection",),
                 consistency=consistency)
        return Call(c.method, c.path, query=c.query, requires=c.requires, raw=True)

    @endpoint
    def submit(
        self, target_id: str, channel: str, *, source_watermark: int, envelope: Mapping[str, Any]
    ) -> Call[ChannelSubmitResult]:
        """Submit a producer's envelope to its channel. The same watermark
        and envelope again replay (``status: "replayed"``); a lower
        watermark is :class:`~arbiter_client.StaleWatermark`."""
        body = dict(target_id=target_id, channel=channel, source_watermark=source_watermark,
                    envelope=dict(envelope))
        return write("POST", "/v1/projection/channels/submit", body, requires=("projection.submit",))

    @endpoint
    def acquire(self, target_id: str, *, holder_instance_digest: str) -> Call[ProjectionLease]:
        """Take the target's lease: ``token`` (given once) and
        ``fencing_epoch`` to publish or release with."""
        body = dict(target_id=target_id, holder_instance_digest=holder_instance_digest)
        return write("POST", "/v1/projection/leases/acquire", body, requires=("projection.acquire",))

    @endpoint
    def publish(self, target_id: str, *, token: str, fencing_epoch: int) -> Call[PublishResult]:
        """Publish the target's channels as ``current.json`` under the
        lease (which it consumes); a retry of the same publish replays.
        ``file`` says what the answering node did with its file."""
        body = dict(target_id=target_id, token=token, fencing_epoch=fencing_epoch)
        return write("POST", "/v1/projection/publish", body, requires=("projection.publish",))

    @endpoint
    def release(self, target_id: str, *, token: str, fencing_epoch: int) -> Call[ProjectionReleaseResult]:
        """Release the lease (token and epoch checked; ``released`` false
        when it had already ended)."""
        body = dict(target_id=target_id, token=token, fencing_epoch=fencing_epoch)
        return write("POST", "/v1/projection/leases/release", body, requires=("projection.release",))

    @overload
    def holder(self: Projection[Sync], target_id: str, holder_instance_digest: str) -> ContextManager[Held]: ...

    @overload
    def holder(self: Projection[Async], target_id: str, holder_instance_digest: str) -> AsyncContextManager[Held]: ...

    def holder(self, target_id: str, holder_instance_digest: str) -> Any:
        """A context manager (``with``, or ``async with`` on an
        :class:`~arbiter_client.AsyncClient`) holding the target's lease.

        Entering acquires the lease; leaving the block normally publishes
        (once more if its outcome was unknown) and sets
        ``held.publication``; a publication the answering node did not
        write (``file`` ``failed`` or ``pending``) raises
        :class:`~arbiter_client.Unavailable`. Whatever fails, the lease is
        released with its token and epoch before the error propagates (a
        release that fails is dropped: the lease's TTL ends it)::

            with client.projection.holder(target_id, digest) as held:
                client.projection.submit(target_id, "computed-route.v1", ...)
            print(held.publication["publication_seq"])
        """
        acquire = Projection.acquire.build(self, target_id, holder_instance_digest=holder_instance_digest)
        steps = _Steps(Projection.publish.build, Projection.release.build, self, target_id)
        if inspect.iscoroutinefunction(self._runner.run):
            return _async_holder(self._runner.run, acquire, steps)
        return _sync_holder(self._runner.run, acquire, steps)


@dataclass
class _Steps:
    publish: Callable[..., Call[PublishResult]]
    release: Callable[..., Call[ProjectionReleaseResult]]
    domain: Any
    target_id: str

    def fence(self, held: Held) -> dict[str, Any]:
        return {"token": held.lease["token"], "fencing_epoch": held.lease["fencing_epoch"]}


def _not_written(res: PublishResult) -> Unavailable:
    return Unavailable(
        f"publication {res['publication_seq']} of {res['target_id']} is recorded, but the answering node's "
        f"current.json was not written ({res.get('file')}: {res.get('file_error', '')}); "
        "the node retries the write on its own",
        detail={"publication_seq": res["publication_seq"], "file": res.get("file"),
                "file_error": res.get("file_error", "")},
    )


@contextmanager
def _sync_holder(run: Callable[[Call[Any]], Any], acquire: Call[ProjectionLease], s: _Steps) -> Iterator[Held]:
    held = Held(run(acquire))
    try:
        yield held
        publish = s.publish(s.domain, s.target_id, **s.fence(held))
        try:
            res: PublishResult = run(publish)
        except OutcomeUnknown:
            res = run(publish)  # the same publish again replays it
        if res.get("file") in ("failed", "pending"):
            raise _not_written(res)
        held.publication = res
    except BaseException:
        try:
            run(s.release(s.domain, s.target_id, **s.fence(held)))
        except ArbiterError:
            pass  # consumed, ended or unreachable: the TTL ends it anyway
        raise


@asynccontextmanager
async def _async_holder(run: Callable[[Call[Any]], Any], acquire: Call[ProjectionLease], s: _Steps) -> AsyncIterator[Held]:
    held = Held(await run(acquire))
    try:
        yield held
        publish = s.publish(s.domain, s.target_id, **s.fence(held))
        try:
            res: PublishResult = await run(publish)
        except OutcomeUnknown:
            res = await run(publish)  # the same publish again replays it
        if res.get("file") in ("failed", "pending"):
            raise _not_written(res)
        held.publication = res
    except BaseException:
        try:
            await run(s.release(s.domain, s.target_id, **s.fence(held)))
        except ArbiterError:
            pass  # consumed, ended or unreachable: the TTL ends it anyway
        raise
