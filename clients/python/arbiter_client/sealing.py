"""Digests and fingerprints computed exactly as the server computes them.

- :func:`digest` and :func:`file_digest`: ``"sha256:"`` and 64 lower-case
  hex digits, the form of a work item's ``command_digest``,
  ``policy_digest``, ``catalog_digest`` and ``model_digest`` (what the
  caller hashed; the server stores and compares them, never recomputes).
- :func:`owner_digest`: the owner digest a principal derives
  (``log.Principal.OwnerDigest``): capacity's ``owner_digest`` must be the
  caller's own; in open mode the caller names the owner this way.
- :func:`fingerprint` and :func:`seal_reservation`: the ``v1:`` fingerprint
  of a ``metadata.resource_reservation`` record, the hex SHA-256 of the
  RFC 8785 form of the record without its ``fingerprint`` field
  (``workitem/extension``: ``Seal``, ``Fingerprint``).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Mapping, cast

from .canonical import jcs
from .types import ReservationRecord

__all__ = [
    "digest",
    "file_digest",
    "json_digest",
    "owner_digest",
    "fingerprint",
    "seal_reservation",
]

#: Bytes read at a time by :func:`file_digest`.
_CHUNK = 1 << 20


def digest(data: bytes | str) -> str:
    """``"sha256:" + hex`` of bytes (a ``str`` is hashed as UTF-8)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_digest(path: str | os.PathLike[str]) -> str:
    """``"sha256:" + hex`` of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):  # ends at EOF; each read is bounded
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def json_digest(value: Any) -> str:
    """``"sha256:" + hex`` of a value's RFC 8785 canonical JSON."""
    return digest(jcs(value))


def owner_digest(principal_id: str) -> str:
    """The owner digest of the principal called ``principal_id``.

    What ``GET /v1/auth/whoami`` answers as ``owner_digest`` for that
    principal; in open development mode (no principals) a caller names an
    owner with it.
    """
    return digest(b"arbiter-owner\x00" + principal_id.encode("utf-8"))


def fingerprint(record: Mapping[str, Any]) -> str:
    """The ``v1:`` fingerprint of a resource-reservation record.

    ``"v1:"`` and the hex SHA-256 of the RFC 8785 form of the record
    without its ``fingerprint`` field.
    """
    rest = {k: v for k, v in record.items() if k != "fingerprint"}
    return "v1:" + hashlib.sha256(jcs(rest)).hexdigest()


def seal_reservation(record: Mapping[str, Any]) -> ReservationRecord:
    """A copy of a resource-reservation record with its fingerprint set.

    As the Go ``extension.Seal``: ``schema_version`` defaults to ``"1"``,
    ``host_labels``, ``anti_affinity`` and ``target_policies`` to empty,
    and an empty ``branch`` or ``base_ref`` is left out. Put the result in
    a submit's ``metadata["resource_reservation"]``.
    """
    out: dict[str, Any] = dict(record)
    out.pop("fingerprint", None)
    out.setdefault("schema_version", "1")
    out.setdefault("host_labels", {})
    out.setdefault("anti_affinity", [])
    out.setdefault("target_policies", [])
    for optional in ("branch", "base_ref"):
        if out.get(optional) in ("", None):
            out.pop(optional, None)
    out["fingerprint"] = fingerprint(out)
    return cast(ReservationRecord, out)
