"""Helpers for the pytester-based tests of the plugin machinery.

They use the SDMX kind as the real metric family: it needs no data source or model, so each
pytester run exercises collection, predictions, thresholds and reports in well under a second.
"""

from __future__ import annotations

from typing import Any

from tests.support import dump

__all__ = ["GDP", "GDP_PLUS", "MEX", "dump", "outcomes_by_id", "sdmx_case", "selection"]


def selection(*dims: tuple[str, list[tuple[str, str]]], dataset: str = "IMF.RES:WEO") -> dict[str, Any]:
    """An ``indicator_selection`` turn-selection in the seed's shape."""
    return {"indicator_selection": [{
        "dataset_id": dataset,
        "dimensions": [{"dimension_name": d, "values": [{"id": i, "name": n} for i, n in vals]}
                       for d, vals in dims],
    }]}


GDP = ("INDICATOR", [("NGDP", "GDP"), ("NGDPPC", "GDP per capita")])
GDP_PLUS = ("INDICATOR", [("NGDP", "GDP"), ("NGDPPC", "GDP per capita"), ("NGDP_R", "GDP constant")])
MEX = ("COUNTRY", [("MEX", "Mexico")])


def sdmx_case(case_id: str, target: dict[str, Any], predicted: dict[str, Any] | None = None,
              **extra: Any) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": "user", "content": f"question {case_id}", "target": target}
    if predicted is not None:
        turn["predicted"] = predicted
    return {"id": case_id, "conversation": [turn], **extra}


def outcomes_by_id(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["outcome"] for c in report["cases"]}
