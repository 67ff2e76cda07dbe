"""``pricing:`` in queryeval.yaml: what a model's tokens cost, so a run records ``cost_usd``.

Prices are per million tokens (``input_per_mtok``, ``output_per_mtok``), as providers publish
them. A case's cost is priced under the name of the model that answered (the prediction
source's ``model``), else under the suite's ``model:`` label; a model with no price records
its token counts and no cost (a cost gate then says that no case has ``cost_usd``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .._util.numeric import is_finite

PRICE_KEYS = ("input_per_mtok", "output_per_mtok")


@dataclass(frozen=True, slots=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float

    def cost(self, usage: Mapping[str, float]) -> float | None:
        """USD for ``usage``; None when a count the price needs is missing."""
        if "prompt_tokens" not in usage or "completion_tokens" not in usage:
            return None
        return (usage["prompt_tokens"] * self.input_per_mtok
                + usage["completion_tokens"] * self.output_per_mtok) / 1_000_000


def parse_pricing(spec: object, where: str,
                  line_of: Callable[[Mapping[object, object], object], str] | None = None,
                  ) -> tuple[dict[str, Price], list[str]]:
    """``{model: {input_per_mtok: x, output_per_mtok: y}}`` and located problems.

    ``where`` is ``file:line`` of the ``pricing`` key; ``line_of(mapping, key)`` gives a
    model's own line when the YAML loader kept it.
    """
    prices: dict[str, Price] = {}
    problems: list[str] = []
    if not isinstance(spec, Mapping):
        return prices, [f"{where}: pricing: must be a mapping of model: {{input_per_mtok: x, "
                        "output_per_mtok: y}} (USD per million tokens)"]
    for model, entry in spec.items():
        loc = line_of(spec, model) if line_of else where
        key = f"{loc}: pricing.{model}"
        if not isinstance(entry, Mapping):
            problems.append(f"{key}: must be a mapping {{input_per_mtok: x, output_per_mtok: y}}")
            continue
        unknown = sorted(str(k) for k in entry if k not in PRICE_KEYS)
        if unknown:
            problems.append(f"{key}.{unknown[0]}: unknown key (allowed: {', '.join(PRICE_KEYS)})")
            continue
        values: list[float] = []
        for name in PRICE_KEYS:
            value = entry.get(name)
            if value is None:
                problems.append(f"{key}.{name}: missing (USD per million tokens)")
                break
            if not is_finite(value) or value < 0:
                problems.append(f"{key}.{name}: must be a non-negative number of USD per "
                                f"million tokens, not {value!r}")
                break
            values.append(float(value))
        else:
            prices[str(model)] = Price(values[0], values[1])
    return prices, problems


def price_for(prices: Mapping[str, Price], *models: str | None) -> tuple[str, Price] | None:
    """The first of ``models`` that has a price, with its name."""
    for model in models:
        if model is not None and model in prices:
            return model, prices[model]
    return None
