"""Every request the client builds is one the API's OpenAPI document
describes: the checked-in copy, ``api/openapi.json`` (a Go test keeps it
what a node serves at ``/v1/openapi.json``; ``go generate ./api``
rewrites it).

No server is needed: each operation of the client is a method that
*builds* a :class:`~arbiter_client.call.Call` (method, path, query, body),
so the test calls every builder of every domain with a value for every
parameter, optional ones included (TypedDict arguments with every key),
and checks the call against the operation of its method and path:

- the operation exists;
- the path's segments, the query's parameters and the body validate
  against the operation's parameters and request body (a small validator
  of the subset of JSON Schema the document uses, below): no field the
  API does not know, none of another type;
- every parameter and body property of the operation is one the client
  sends, unless it is listed in ``NOT_SENT`` with the reason.

The document names no required request fields (the server refuses unknown
fields, never missing ones; each handler checks presence), so required-ness
is not the document's to check: the client's signatures say what a call
needs.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from conftest import REPO

import arbiter_client
from arbiter_client.call import Call, Domain, endpoint

DOCUMENT = json.loads((REPO / "api" / "openapi.json").read_text(encoding="utf-8"))
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]

#: Properties of a request the client does not send, by operation and
#: JSON path ("[]" steps into an array's items), and why.
NOT_SENT: dict[tuple[str, str], str] = {
    **{(op, "now_ms"): "accepted for compatibility and ignored: the log's clock decides (capacity.AcquireRequest)"
       for op in ("post_v1_capacity_acquire", "post_v1_capacity_renew", "post_v1_capacity_release",
                  "post_v1_capacity_reclaim", "post_v1_capacity_cells")},
    ("post_v1_capacity_release", "ttl_ms"): "renew's new TTL, in the request type release shares with renew",
    **{(op, path): "accepted from callers that still send them and replaced by the policy's range"
       for op, path in (("post_v1_concepts_reserve", "range_min"), ("post_v1_concepts_reserve", "range_max"),
                        ("post_v1_concepts_reserve_next", "request.range_min"),
                        ("post_v1_concepts_reserve_next", "request.range_max"))},
    ("post_v1_concepts_reserve_next", "request.concept_id"): "the server numbers it: empty in reserve_next",
    **{("post_v1_workitems_submit_batch", f"requests[].{f}"): "a batch's requests share the batch's (the server "
       "refuses another)" for f in ("tenant_ref", "graph_ref")},
}


def domains() -> list[type[Domain[Any]]]:
    out: list[type[Domain[Any]]] = []
    for info in pkgutil.iter_modules(arbiter_client.__path__):
        module = importlib.import_module(f"arbiter_client.{info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Domain) and value is not Domain
                    and value.__module__ == module.__name__):
                out.append(value)
    return sorted(out, key=lambda d: d.__name__)


def endpoints() -> list[tuple[str, type[Domain[Any]], endpoint[Any, Any]]]:
    out = []
    for d in domains():
        for name, value in vars(d).items():
            if isinstance(value, endpoint):
                out.append((f"{d.__name__}.{name}", d, value))
    return out


ENDPOINTS = endpoints()

# -- values for every parameter ------------------------------------------


def value_of(hint: Any, name: str, depth: int = 0) -> Any:
    """A value of type ``hint``: TypedDicts with every key, sequences of
    one element, an opaque ``Mapping[str, Any]`` empty (the caller's whole,
    not the client's to complete)."""
    assert depth < 16, f"{name}: type nested too deep"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return value_of(next(a for a in args if a is not type(None)), name, depth + 1)
    if origin is typing.Literal:
        return args[0]
    if typing.is_typeddict(hint):
        return {k: value_of(h, k, depth + 1) for k, h in typing.get_type_hints(hint).items()}
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        if args and args[1] is Any:
            return {}
        return {"k": value_of(args[1], name, depth + 1)}
    if origin is not None and isinstance(origin, type) and issubclass(origin, Sequence):
        return [value_of(args[0], name, depth + 1)]
    if hint is bool:
        return True
    if hint is int:
        return 7
    if hint is float:
        return 1.5
    if hint is str:
        return "stale" if name == "consistency" else f"{name}-x"
    if hint is Any:
        return {}
    raise AssertionError(f"{name}: no value of {hint!r}")


def build(d: type[Domain[Any]], ep: endpoint[Any, Any]) -> Call[Any]:
    hints = typing.get_type_hints(ep.build)
    params = [p for p in inspect.signature(ep.build).parameters.values() if p.name != "self"]
    kwargs = {p.name: value_of(hints[p.name], p.name) for p in params}
    return ep.build(d(typing.cast(Any, None)), **kwargs)


# -- the document --------------------------------------------------------


def operation_of(method: str, path: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """The document's path, operation and path parameters of a call (the
    path whose literal segments match most)."""
    segs = path.split("/")
    best: tuple[int, str, dict[str, str]] | None = None
    for template, ops in DOCUMENT["paths"].items():
        tsegs = template.split("/")
        if len(tsegs) != len(segs) or method.lower() not in ops:
            continue
        bound, literal = {}, 0
        for t, s in zip(tsegs, segs):
            if t.startswith("{") and t.endswith("}"):
                bound[t[1:-1]] = s
            elif t == s:
                literal += 1
            else:
                break
        else:
            if best is None or literal > best[0]:
                best = (literal, template, bound)
    assert best is not None, f"{method} {path}: no such operation in the document"
    return best[1], DOCUMENT["paths"][best[1]][method.lower()], best[2]


def described(op: dict[str, Any]) -> bool:
    """Whether the document describes the operation's request, or lists
    it by method and path only (a hand-written handler: health, changes,
    snapshots)."""
    return "parameters" in op or "requestBody" in op or "content" in op["responses"].get("200", {})


# -- a validator of the subset of JSON Schema the document writes --------


def validate(schema: Any, value: Any, at: str, depth: int = 0) -> list[str]:
    """Where ``value`` does not fit ``schema`` (type, one or a list;
    properties, additionalProperties; items; enum; minimum; anyOf; $ref)."""
    if depth > 64:
        return [f"{at}: nested deeper than 64"]
    if "$ref" in schema:
        return validate(SCHEMAS[schema["$ref"].removeprefix("#/components/schemas/")], value, at, depth + 1)
    if "anyOf" in schema:
        alts = [validate(alt, value, at, depth + 1) for alt in schema["anyOf"]]
        return [] if any(not a for a in alts) else [f"{at}: none of anyOf: {alts}"]
    problems: list[str] = []
    if "type" in schema:
        allowed = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(fits(t, value) for t in allowed):
            return [f"{at}: {value!r} is not {' or '.join(allowed)}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{at}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        problems.append(f"{at}: {value} is below {schema['minimum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                problems += validate(props[k], v, f"{at}.{k}", depth + 1)
            elif extra is False:
                problems.append(f"{at}.{k}: not a property of the request")
            elif isinstance(extra, dict):
                problems += validate(extra, v, f"{at}.{k}", depth + 1)
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            problems += validate(schema["items"], v, f"{at}[{i}]", depth + 1)
    return problems


def fits(ty: str, value: Any) -> bool:
    return {
        "null": value is None,
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "string": isinstance(value, str),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }[ty]


def missing(schema: Any, value: Any, at: str, depth: int = 0) -> list[str]:
    """The properties of the objects of ``schema`` that ``value`` (built
    with every parameter given) leaves out. An empty object is a caller's
    opaque mapping, not the client's to complete."""
    if depth > 64:
        return []
    if "$ref" in schema:
        return missing(SCHEMAS[schema["$ref"].removeprefix("#/components/schemas/")], value, at, depth + 1)
    out: list[str] = []
    for alt in schema.get("anyOf", []):
        out += missing(alt, value, at, depth + 1)
    if isinstance(value, dict) and value and "properties" in schema:
        for k, s in schema["properties"].items():
            if k not in value:
                out.append(f"{at}{k}")
            else:
                out += missing(s, value[k], f"{at}{k}.", depth + 1)
    if isinstance(value, list) and "items" in schema:
        for v in value:
            out += missing(schema["items"], v, f"{at[:-1]}[].", depth + 1)
    return out


def param_value(schema: dict[str, Any], text: str) -> Any:
    """A parameter's text as the value it holds (x-arbiter-value)."""
    kind = schema.get("x-arbiter-value", schema.get("type"))
    if kind == "integer":
        return int(text) if re.fullmatch(r"-?[0-9]+", text) else text
    if kind == "boolean":
        return {"true": True, "false": False}.get(text, text)
    return text


def check(call: Call[Any]) -> list[str]:
    """How a call differs from its operation in the document."""
    path, query = call.path.split("?")[0], dict(call.query)
    template, op, bound = operation_of(call.method, path)
    op_id = op["operationId"]
    if not described(op):
        return []  # listed by method and path only: nothing more to check
    problems: list[str] = []
    params = {(p["in"], p["name"]): p["schema"] for p in op.get("parameters", [])}
    sent: set[str] = set()
    for name, text in bound.items():
        schema = params.get(("path", name))
        if schema is None:
            problems.append(f"{op_id}: path parameter {name} is not declared")
            continue
        value = param_value(schema, text)
        problems += validate({"type": schema.get("x-arbiter-value", schema["type"])}, value, f"{{{name}}}")
        sent.add(name)
    for name, text in query.items():
        schema = params.get(("query", name))
        if schema is None:
            problems.append(f"{op_id}: query parameter {name} is not the operation's")
            continue
        plain = {k: v for k, v in schema.items() if k != "x-arbiter-value"}
        plain["type"] = schema.get("x-arbiter-value", schema["type"])
        problems += validate(plain, param_value(schema, text), f"?{name}")
        sent.add(name)
    if call.key_header:
        if ("header", "Idempotency-Key") not in params:
            problems.append(f"{op_id}: sends an Idempotency-Key header the operation does not take")
        sent.add("Idempotency-Key")
    for (where, name) in params:
        if name not in sent and (op_id, name) not in NOT_SENT:
            problems.append(f"{op_id}: {where} parameter {name} is never sent")
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body is None:
        if call.body is not None:
            problems.append(f"{op_id}: sends a body; the operation takes none")
        return problems
    if call.body is None:
        return problems + [f"{op_id}: sends no body; the operation takes one"]
    problems += [f"{op_id}: {p}" for p in validate(body, call.body, "$")]
    problems += [f"{op_id}: body property {p} is never sent" for p in missing(body, call.body, "")
                 if (op_id, p) not in NOT_SENT]
    return problems


@pytest.mark.parametrize("name,domain,ep", ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
def test_request_is_the_documents(name: str, domain: type[Domain[Any]], ep: endpoint[Any, Any]) -> None:
    assert check(build(domain, ep)) == []


def test_every_domain_is_checked() -> None:
    names = {d.__name__ for d in domains()}
    assert {"Allocation", "CapacityLeases", "Cluster", "Concepts", "Nodes", "Projection", "Reservations",
            "WorkItems"} <= names
    assert len(ENDPOINTS) >= 60


def test_not_sent_names_real_properties() -> None:
    """Every exception of NOT_SENT is a property of its operation's request."""
    ops = {op["operationId"]: op for by in DOCUMENT["paths"].values() for op in by.values()}
    for op_id, prop in NOT_SENT:
        assert op_id in ops, op_id
        op = ops[op_id]
        names = {p["name"] for p in op.get("parameters", [])}
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
        schema = SCHEMAS.get(body.get("$ref", "").removeprefix("#/components/schemas/"), {})
        assert prop in names or prop.split(".")[0].removesuffix("[]") in schema.get("properties", {}), (op_id, prop)


def test_a_spoiled_call_is_refused() -> None:
    """Could-fail: a field the API does not know, a field of another type,
    a property left out and an unknown route are each found."""
    d = next(x for x in domains() if x.__name__ == "CapacityLeases")
    call = build(d, typing.cast(endpoint[Any, Any], vars(d)["acquire"]))
    assert check(call) == []
    body = dict(call.body)
    body["no_such_field"] = 1
    body["ttl_ms"] = "soon"
    del body["tenant_ref"]
    body["demands"] = [{**body["demands"][0], "amount": -1}]
    got = "\n".join(check(Call(call.method, call.path, body=body)))
    for want in ("$.no_such_field", "$.ttl_ms", "tenant_ref is never sent", "$.demands[0].amount"):
        assert want in got, got
    with pytest.raises(AssertionError, match="no such operation"):
        check(Call("POST", "/v1/capacity/no-such-route", body={}))
