"""How counts and lists read in the plugin's messages.

Why a module: summary lines, refusals and failure texts each wrote ``1 regressions`` or
``a, b, c and 2 more`` their own way; one rule for a count with its noun and for a list cut
after its first items keeps them alike (issue 24: counts that mean what they say). A leaf:
anything may import it without cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 regression``, ``2 regressions``: a count with its noun in the right number."""
    return f"{count} {word if count == 1 else many or word + 's'}"


def shortlist(items: Sequence[str], limit: int, sep: str = ", ") -> str:
    """``a, b, c and 2 more``: the first ``limit`` items, and how many were left out."""
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return sep.join(items[:limit]) + more


def suggest(name: str, options: Iterable[object]) -> str:
    """`` (did you mean 'x'?)`` for a near miss among ``options``, else ``""``. Here, at the
    bottom of the package, because the modules that check names (the suite config, the
    datasource keys, the case reader) sit above and beside each other."""
    import difflib

    close = difflib.get_close_matches(name, sorted(map(str, options)), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
