"""The EHRSQL 2024 / TrustSQL reliability score, as its reference computes it.

Reference: glee4810/ehrsql-2024 ``scoring_program/scoring_utils.py`` (``process_item``,
``process_answer``, ``reliability_score``, ``penalize``) at commit
46597893d9ffc6b9e67785b9c6dcbb06f1b62568 (the file last changed in e207f57a); TrustSQL's
``evaluate.py`` calls the same functions. The names below are the reference's, so that a
reader can put the two side by side; ``tests/data/ehrsql/oracle.json`` holds the reference's
own outputs, which the tests compare with these.

A question scores +1 for a right answer or a right abstention, 0 for abstaining on an
answerable question and -1 otherwise; ``RS(c)`` is the mean with every -1 multiplied by the
penalty c. The reference compares answers as strings after ``process_answer`` (every cell
rounded to 3 decimals when ``float()`` accepts it, everything ``str()``, rows sorted, the
first 100 rows only), so two answers that differ only after the 100th sorted row are equal,
and two failed executions (``'error_pred'`` against ``'error_real'``) are not.

Where the reference crashes (an answer that is not a list of rows, such as ``5`` or ``None``)
this module raises :class:`ReferenceCrash`, which the caller locates at its case; an empty
question list, whose mean NumPy gives as NaN with a warning, gives ``None`` here.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..results import ResultTable

#: What the reference reads as "no answer" on either side (``skip_indicator``).
SKIP = "null"
#: The penalties the EHRSQL 2024 leaderboard reports; ``N`` is the number of questions.
PENALTIES: tuple[str, ...] = ("0", "5", "10", "N")
REFERENCE = "glee4810/ehrsql-2024 scoring_program/scoring_utils.py @46597893"
#: The SQL kind's metric of the reference's answer comparison (opt-in: a threshold asks for it).
EHRSQL_METRIC_NAMES = ("ehrsql_ex",)


class ReferenceCrash(ValueError):
    """An answer the reference's ``process_answer`` raises on (it is not a list of rows)."""


def process_item(item: object) -> str:
    """The reference's cell form: ``str(round(float(item), 3))`` where ``float`` accepts it.

    ``float`` accepts ints, bools, numeric strings with spaces or underscores, ``"nan"`` and
    ``"Infinity"``; an int too large for a float and every other value keep their ``str``.
    """
    with contextlib.suppress(Exception):  # the reference's bare except
        item = round(float(item), 3)  # type: ignore[arg-type]
    return str(item)


def process_answer(ans: object) -> str:
    """The reference's answer form: a string stays (after ``literal_eval``), rows become a text.

    A string that ``ast.literal_eval`` reads is replaced by its value (``"[['iv']]"`` is rows,
    ``"'x'"`` is the string ``x``); a string it cannot read (``"null"``, ``"error_pred"``) is
    returned as it is. Anything else is iterated as rows of cells, sorted, cut to 100 rows.
    """
    if isinstance(ans, str):
        with contextlib.suppress(Exception):  # the reference's bare except
            ans = ast.literal_eval(ans)
    if isinstance(ans, str):
        return ans
    try:
        rows = [[process_item(cell) for cell in _iterate(row)] for row in _iterate(ans)]
    except TypeError as exc:
        raise ReferenceCrash(
            f"the EHRSQL reference's process_answer raises TypeError on {_short(ans)} ({exc}): "
            "an answer must be a list of rows"
        ) from None
    return str(sorted(rows)[:100])


def _iterate(value: object) -> Iterable[object]:
    if isinstance(value, Iterable):
        return value
    raise TypeError(f"'{type(value).__name__}' object is not iterable")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def skips(answer: object) -> bool:
    """Whether the reference reads ``answer`` as its skip indicator: ``process_answer`` gives
    ``'null'`` for the text ``null`` and for a literal of that string (``"'null'"``), and for
    nothing else (an empty text stays ``''``, an answer; rows become a text that starts
    ``[``). Never raises, where ``process_answer`` does on a text that is not rows."""
    if not isinstance(answer, str):
        return False
    with contextlib.suppress(Exception):  # the reference's bare except
        answer = ast.literal_eval(answer)
    return answer == SKIP


def question_score(ans_real: str, ans_pred: str) -> int:
    """One question's score from the two processed answers (``reliability_score``'s body)."""
    exec_acc = ans_real == ans_pred
    if ans_real != SKIP:
        if exec_acc:
            return 1
        return 0 if ans_pred == SKIP else -1
    return 1 if ans_pred == SKIP else -1


def reliability_score(real_result: Mapping[str, str], pred_result: Mapping[str, str]) -> list[int]:
    """Every question's score in ``real_result``'s order; a missing prediction is a crash."""
    missing = [key for key in real_result if key not in pred_result]
    if missing:
        raise ReferenceCrash(f"no prediction for {', '.join(missing[:5])} (the reference raises KeyError)")
    return [question_score(real_result[key], pred_result[key]) for key in real_result]


def penalize(scores: Sequence[int], penalty: int = 1) -> float | None:
    """``np.mean`` of the scores with each -1 multiplied by ``penalty``; ``None`` when empty.

    The sum of small integers is exact in a float, so ``sum / n`` is NumPy's mean bit for bit.
    """
    if not scores:
        return None
    return sum(score * penalty if score == -1 else score for score in scores) / len(scores)


def reliability_scores(scores: Sequence[int]) -> dict[str, float | None]:
    """RS(0), RS(5), RS(10) and RS(N) as fractions (the reference's ``scores.json`` is ×100)."""
    return {
        penalty: penalize(scores, len(scores) if penalty == "N" else int(penalty)) for penalty in PENALTIES
    }


def ehrsql_ex(gold: ResultTable, pred: ResultTable) -> dict[str, float]:
    """1 when the two results are equal after the reference's ``process_answer`` (cells rounded
    to 3 decimals and made text, rows sorted, the first 100 compared), else 0."""
    return {"ehrsql_ex": 1.0 if process_answer(gold.rows) == process_answer(pred.rows) else 0.0}
