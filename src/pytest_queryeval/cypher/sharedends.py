"""A relationship's end as :mod:`.cypherbench` views it: the properties of its node, one object
per content, each comparison of two distinct ones charged.

Why a module of its own: the reference sorts relationships (tuples holding their ends'
property mappings) in every list it hashes, and Python compares those mappings value by value;
what that costs, and where it stops, is decided here, apart from the reference's decisions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .._isolation.comparison_deadline import check_deadline


class Undecided(Exception):
    """A comparison :mod:`.cypherbench` does not finish: many columns holding the same bag of
    values, whose permutations the reference would try one by one (``width!``), or ends of
    relationships equal in value but not in form compared past :data:`MAX_END_WORK`."""


@contextmanager
def end_work() -> Iterator[None]:
    """The comparisons of distinct ends made in this block are counted against
    :data:`MAX_END_WORK` (one :func:`~.cypherbench.score`)."""
    token = _END_WORK.set([0])
    try:
        yield
    finally:
        _END_WORK.reset(token)


class SharedEnd(dict[str, Any]):
    """A node's properties as a relationship's end: one object for every relationship
    ending at the node, and for every node of the same content (:func:`shared`), equal to
    and printed as the ``dict`` it is, its text made once (the reference prints each
    relationship with its ends' properties: ``R`` relationships to a node of ``P``
    properties would cost ``R * P`` text made anew).

    Two ends of equal content are one object, so the comparisons of the reference's sorts
    (:func:`~.cypherbench.hashable`) meet the same object and stop at once (the sixteenth
    re-probe's S1: two nodes of identical properties in two tables and ``collect([r1, r2])``
    of ``R`` rows cost ``R * P`` comparisons of values, 61 s after a 30 s timeout). Ends
    equal in value but not in form (``[1, 2]`` and ``[1.0, 2.0]``, keys in another order)
    stay two objects; each comparison of them is charged (:func:`_charge`) and stops at the
    case's deadline or :data:`MAX_END_WORK`."""

    __slots__ = ("_text", "_weight")

    def __init__(self, properties: dict[str, Any], weight: int) -> None:
        super().__init__(properties)
        self._weight = weight

    def __repr__(self) -> str:
        try:
            return self._text
        except AttributeError:
            self._text: str = dict.__repr__(self)
            return self._text

    __str__ = __repr__

    def __eq__(self, other: object) -> Any:
        if other is self:
            return True
        if isinstance(other, SharedEnd):
            _charge(min(self._weight, other._weight))
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> Any:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:  # type: ignore[override]  # the reference's error names a dict
        raise TypeError("unhashable type: 'dict'")


#: The most values the comparisons of distinct relationship ends of one score read
#: (each charged the smaller end's count of values): past it, the score is not decided.
MAX_END_WORK = 20_000_000

#: The values compared so far under :func:`end_work` (None outside it).
_END_WORK: ContextVar[list[int] | None] = ContextVar("queryeval_end_work", default=None)


def _charge(values: int) -> None:
    """Count one comparison of two distinct ends of ``values`` values; past the case's
    deadline :class:`~pytest_queryeval.errors.ComparisonTimeout`, past
    :data:`MAX_END_WORK` :class:`Undecided` (a bound that fails closed, never a guess)."""
    check_deadline(lambda: "comparing relationships' end nodes (cypherbench_ex)")
    spent = _END_WORK.get()
    if spent is None:
        return
    spent[0] += values
    if spent[0] > MAX_END_WORK:
        raise Undecided(f"comparing relationships' end nodes read more than {MAX_END_WORK:,} "
                        "values (nodes equal in value but not in form, compared again and "
                        "again by the reference's sorts)")


def _walk(v: Any) -> tuple[int, bool]:
    """``v``'s count of values, and whether it holds a value unequal to itself (a NaN: two
    NaNs print alike and never compare equal, so their text does not tell their content)."""
    if isinstance(v, list):
        parts = [_walk(x) for x in v]
        return 1 + sum(p[0] for p in parts), any(p[1] for p in parts)
    if isinstance(v, dict):
        parts = [_walk(x) for x in v.values()]
        return 1 + sum(p[0] for p in parts), any(p[1] for p in parts)
    return 1, bool(v != v)


def shared(properties: dict[str, Any], contents: dict[Any, SharedEnd]) -> SharedEnd:
    """The one :class:`SharedEnd` of ``properties``' content in ``contents`` (made here if
    new). The content is told by the mapping's text (the text an ordered comparison prints
    anyway, so it is made once here): the same text is the same values of the same types in
    the same order (``1``, ``1.0`` and ``True`` print apart, so do ``0.0`` and ``-0.0``), and
    the two mappings are indistinguishable; a NaN, whose text says nothing of equality, keeps
    its node an object of its own."""
    try:
        weight, nan = _walk(properties)
        text = None if nan else dict.__repr__(properties)
    except Exception:  # unreadable: an object of its own, charged as the budget
        return SharedEnd(properties, MAX_END_WORK)
    if text is None:
        return SharedEnd(properties, weight)
    found = contents.get(text)
    if found is None:
        found = contents[text] = SharedEnd(properties, weight)
        found._text = text
    return found
