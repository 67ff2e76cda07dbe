"""The gold audit of JSON cases: a gold written as JSON text must be strict JSON."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, NoReturn

from . import AuditResult


def lint_json(gold: object, result: AuditResult) -> None:
    """A gold written as JSON text must be strict JSON: no NaN/Infinity; a repeated key is
    legal but loses all but its last value."""
    if isinstance(gold, str):
        duplicates: list[str] = []

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            keys = [k for k, _ in items]
            duplicates.extend(k for k, n in Counter(keys).items() if n > 1)
            return dict(items)

        def constant(name: str) -> NoReturn:
            raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")

        try:
            json.loads(gold, object_pairs_hook=pairs, parse_constant=constant)
        except ValueError as exc:
            result.add("invalid-json", f"the gold is not valid JSON: {exc}")
            return
        if duplicates:
            result.add("duplicate-json-key", f"repeated key(s) {', '.join(sorted(set(duplicates)))}"
                       ": only the last value of each is compared")
        return
    try:
        json.dumps(gold, allow_nan=False, default=str)
    except ValueError:
        result.add("invalid-json", "the gold holds NaN or Infinity, which JSON cannot express")
