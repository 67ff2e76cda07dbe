"""The counting stand-in models every combination asks (both tiers)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.combinations.generator import CountingModel
from tests.fixtures.openai_standin import OpenAIStandin


@pytest.fixture(scope="module")
def services() -> Iterator[tuple[CountingModel, OpenAIStandin]]:
    model, openai = CountingModel().start(), OpenAIStandin()
    try:
        yield model, openai
    finally:
        model.stop()
        openai.close()
