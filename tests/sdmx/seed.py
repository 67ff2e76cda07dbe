"""The seed's test case (epam/statgpt ``evaluation/data_query.md``), verbatim, shared by tests."""

from __future__ import annotations

MEXICO_YAML = """\
id: c48d7624-d376-48ca-b2d8-386999befb45
name: could_you_give_me_the_population_numbers_for_mexico
tags:
- imf
- weo
comments: ''
conversation:
- role: user
  content: Could you give me the population numbers for Mexico?
  target:
    indicator_selection:
    - dataset_id: IMF.RES:WEO
      dimensions:
      - dimension_name: INDICATOR
        values:
        - id: LP
          name: Population, Persons for countries / Index for country groups
      - dimension_name: COUNTRY
        values:
        - id: MEX
          name: Mexico
"""

LP = {"id": "LP", "name": "Population, Persons for countries / Index for country groups"}
MEX = {"id": "MEX", "name": "Mexico"}

#: The seed's worked example: target {GDP, GDPPC}, selected {GDP, GDPPC, GDP_CONST}.
GDP = {"id": "GDP", "name": "gross domestic product"}
GDPPC = {"id": "GDPPC", "name": "GDP per capita"}
GDP_CONST = {"id": "GDP_CONST", "name": "gross domestic product constant prices"}


def selection(dataset: str, **dims: list[dict[str, str]]) -> dict[str, object]:
    """A turn selection in the target shape, for one dataset."""
    return {"indicator_selection": [{
        "dataset_id": dataset,
        "dimensions": [{"dimension_name": d, "values": v} for d, v in dims.items()],
    }]}
