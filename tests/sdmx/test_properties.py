"""Properties of the set metrics over random selections (hypothesis)."""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pytest_queryeval.metrics.sdmx import (  # noqa: E402
    MatchOptions,
    SdmxTerm,
    Selection,
    format_details,
    score_dimension,
    score_turn,
)

terms = st.lists(st.builds(SdmxTerm, st.sampled_from(["A", "B", "C", "D"]),
                           st.sampled_from(["a", "A", "b"])), max_size=6)
selections: st.SearchStrategy[Selection] = st.dictionaries(
    st.tuples(st.sampled_from(["D1", "D2"]), st.sampled_from(["X", "Y", "Z"])), terms,
    max_size=4)


@settings(max_examples=100, deadline=None)
@given(terms, terms)
def test_counts_and_bounds(target: list[SdmxTerm], selected: list[SdmxTerm]):
    d = score_dimension(target, selected)
    assert len(d.tp) + len(d.fn) == len(set(target))
    assert len(d.tp) + len(d.fp) == len(set(selected))
    for v in (d.precision, d.recall, d.f1):
        assert 0.0 <= v <= 1.0
    assert format_details(d).count("\n  * ") == len(d.tp) + len(d.fp) + len(d.fn)


@settings(max_examples=100, deadline=None)
@given(terms, terms)
def test_looser_matching_never_lowers_recall(target: list[SdmxTerm], selected: list[SdmxTerm]):
    # (a target whose terms merge under the looser key has a smaller denominator: excluded)
    assume(len({t.id for t in target}) == len(set(target)))
    strict = score_dimension(target, selected)
    by_id = score_dimension(target, selected, MatchOptions(match_on=("id",)))
    folded = score_dimension(target, selected, MatchOptions(case_insensitive_names=True))
    assert by_id.recall >= strict.recall
    assert folded.recall >= strict.recall


@settings(max_examples=100, deadline=None)
@given(selections)
def test_selecting_the_target_is_perfect(target: Selection):
    m = score_turn(target, target).metrics()
    assert m["macro_precision"] == m["macro_recall"] == m["macro_f1"] == 1.0


@settings(max_examples=100, deadline=None)
@given(selections, selections)
def test_macro_metrics_in_range(target: Selection, selected: Selection):
    m = score_turn(target, selected).metrics()
    assert all(0.0 <= v <= 1.0 for v in m.values())
