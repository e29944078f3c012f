"""The JSON object type shared by every domain's shapes."""

from __future__ import annotations

from typing import Any, Dict

__all__ = ["JSONObject"]

JSONObject = Dict[str, Any]
"""Any JSON object (a node's properties, metadata, an envelope)."""
