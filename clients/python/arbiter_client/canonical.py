"""JSON as Arbiter reads and writes it: one writer, two modes.

The *canonical* mode is the rule of every digest and fingerprint a client
computes (docs/canonical-json.md): RFC 8785, the JSON Canonicalization
Scheme (JCS), restricted to integers.

- Object members sorted by their keys' UTF-16 code units.
- No whitespace.
- Strings with only the escapes JSON requires (``\\"``, ``\\\\``, ``\\b``,
  ``\\f``, ``\\n``, ``\\r``, ``\\t`` and ``\\u00xx`` in lower-case hex for the
  other control characters); everything else, U+2028 and U+2029 included,
  is written as UTF-8.
- Numbers: integers only, magnitude at most 2**53 - 1, in plain digits
  (``1.0``, ``1e2`` and ``-0`` are the integers 1, 100 and 0).
- Refused: lone surrogates, duplicate keys (after unescaping), trailing
  data, nesting deeper than 32, NaN and infinities.

The *wire* mode writes request bodies: the same strings, keys in the
order given, any finite number (a :class:`decimal.Decimal` keeps its exact
literal), nesting bounded by :data:`MAX_WIRE_DEPTH`.

Answers are read with :func:`loads`: fractions become ``Decimal``, so a
number the server wrote is never rounded.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

__all__ = [
    "CanonicalError",
    "MAX_SAFE_INTEGER",
    "MAX_DEPTH",
    "jcs",
    "jcs_text",
    "dumps",
    "loads",
]

#: Largest integer magnitude a digest input may hold (I-JSON, RFC 7493).
MAX_SAFE_INTEGER = 2**53 - 1
#: Nesting of arrays and objects a digest input may have (the server's).
MAX_DEPTH = 32
#: Nesting bound of a request body: far above any route's shape, below
#: Python's recursion limit.
MAX_WIRE_DEPTH = 256


class CanonicalError(ValueError):
    """A value that has no canonical form (or no JSON form at all)."""


def jcs(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of a JSON-compatible value.

    ``value`` is built of ``dict`` (``str`` keys), ``list``/``tuple``,
    ``str``, ``int``, ``bool``, ``None`` and integral ``float`` or
    ``Decimal``. Raises :class:`CanonicalError` for anything else.
    """
    return _encode(value, canonical=True)


def jcs_text(text: str | bytes) -> bytes:
    """Parse JSON text strictly and return its canonical bytes.

    Raises :class:`CanonicalError` for invalid UTF-8, malformed JSON,
    trailing data, duplicate keys, lone surrogate escapes, fractions and
    integers beyond 2**53 - 1.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CanonicalError(f"not valid UTF-8: {exc}") from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_float=Decimal,
            parse_constant=_no_constant,
        )
    except CanonicalError:
        raise
    except ValueError as exc:  # JSONDecodeError, or an int beyond Python's digit limit
        raise CanonicalError(f"not JSON: {exc}") from None
    return jcs(value)


def dumps(value: Any) -> bytes:
    """The wire form of a request body (UTF-8, keys in the order given)."""
    return _encode(value, canonical=False)


def loads(data: bytes | str) -> Any:
    """Read an answer: integers stay ``int``, fractions become ``Decimal``."""
    return json.loads(data, parse_float=Decimal)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise CanonicalError(f"duplicate object key {k[:40]!r}")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise CanonicalError(f"{name} is not a JSON number")


def _encode(value: Any, *, canonical: bool) -> bytes:
    out: list[str] = []
    _write(value, out, 0, canonical)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        raise CanonicalError("a string holds a lone surrogate") from None


def _write(v: Any, out: list[str], depth: int, canonical: bool) -> None:
    # Recursion is bounded: containers refuse to nest beyond the limit.
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        # json.dumps without ensure_ascii writes exactly the escapes JCS
        # names: the short ones, \u00xx in lower case for other control
        # characters, and nothing else (U+2028, U+2029 and DEL stay raw).
        out.append(json.dumps(v, ensure_ascii=False))
    elif isinstance(v, (int, float, Decimal)):
        out.append(_number(v, canonical))
    elif isinstance(v, (list, tuple)):
        _check_depth(depth, canonical)
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _write(item, out, depth + 1, canonical)
        out.append("]")
    elif isinstance(v, dict):
        _check_depth(depth, canonical)
        keys = list(v)
        for k in keys:
            if not isinstance(k, str):
                raise CanonicalError(f"object key {k!r} is not a string")
        if canonical:
            keys.sort(key=_utf16)
        out.append("{")
        for i, k in enumerate(keys):
            if i:
                out.append(",")
            out.append(json.dumps(k, ensure_ascii=False))
            out.append(":")
            _write(v[k], out, depth + 1, canonical)
        out.append("}")
    else:
        raise CanonicalError(f"{type(v).__name__} is not a JSON value")


def _check_depth(depth: int, canonical: bool) -> None:
    limit = MAX_DEPTH if canonical else MAX_WIRE_DEPTH
    if depth >= limit:
        raise CanonicalError(f"nested deeper than {limit}")


def _utf16(key: str) -> bytes:
    # Big-endian UTF-16 bytes sort exactly as UTF-16 code units do.
    return key.encode("utf-16-be", "surrogatepass")


def _number(v: int | float | Decimal, canonical: bool) -> str:
    if isinstance(v, int):
        n = v
    else:
        if isinstance(v, float) and not math.isfinite(v):
            raise CanonicalError(f"{v} is not a JSON number")
        if isinstance(v, Decimal) and not v.is_finite():
            raise CanonicalError(f"{v} is not a JSON number")
        if not canonical:
            return repr(v) if isinstance(v, float) else str(v)
        d = Decimal(v)  # exact, also for a float
        if d.copy_abs() > MAX_SAFE_INTEGER:
            raise CanonicalError(f"number {v} is beyond ±{MAX_SAFE_INTEGER}")
        if d != d.to_integral_value():
            raise CanonicalError(f"number {v} in a digest input is not an integer")
        n = int(d)
    if canonical and abs(n) > MAX_SAFE_INTEGER:
        raise CanonicalError(f"number {n} is beyond ±{MAX_SAFE_INTEGER}")
    return str(n)
