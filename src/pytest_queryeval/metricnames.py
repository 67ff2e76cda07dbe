"""The metric names and outcome sets every part of the plugin agrees on.

Kinds, thresholds, aggregates, baselines and every report writer must classify a metric the
same way (a timing is lower-is-better everywhere or nowhere), so the families are written here
once. A leaf module: it imports nothing of the package, so any module may import it.
"""

from __future__ import annotations

#: What the query engine's clock records for a gold and a prediction (the score of a gold
#: alternative leaves them out: a faster gold is not a better answer).
QUERY_TIMING_METRICS = ("gold_seconds", "predicted_seconds")
#: Informational timing metrics every kind records (thresholds use ``{max: seconds}``).
TIMING_METRICS = frozenset({*QUERY_TIMING_METRICS, "prediction_seconds"})
#: What a prediction source's usage report records for every kind (lower is better too); the
#: order is the order of the reports' usage columns.
USAGE_METRICS = ("prompt_tokens", "completion_tokens", "cost_usd")
#: What the LLM judge's calls cost a case (issue 26): lower is better and summed, like the
#: prediction's usage, so ``total_max`` gates them.
JUDGE_USAGE_METRICS = ("judge_tokens", "judge_cost_usd", "judge_latency_s")
#: The judge's own verdict metric (sql and sparql cases with a ``judge:``).
JUDGE_EX = "judge_ex"
#: The metrics every kind may carry beside its own (thresholds use ``{max: x}``).
RECORDED_METRICS = TIMING_METRICS | frozenset(USAGE_METRICS) | frozenset(JUDGE_USAGE_METRICS)
#: Metrics only a repeated case records (every kind accepts them in thresholds and gates).
REPEAT_METRICS = frozenset({"consistency", "pass_at_k", "pass_all_k"})
#: The gates that bound pass@k or pass^k of the repeated cases for one k of their own
#: (``gates: {pass_hat_k: {k: 2, mean: 0.5}}``; ``metrics/pass_k.py``). ``pass_at_k`` without
#: a ``k:`` is the mean of the case metric, which is pass@N; ``pass_hat_k`` always takes one.
PASS_AT_K = "pass_at_k"
PASS_HAT_K = "pass_hat_k"
PASS_K_GATES = (PASS_AT_K, PASS_HAT_K)
#: What every kind records where abstention is in play (``expect: abstain``, or a prediction
#: that abstained): 1 when the prediction gave no answer (see ``engine/abstain.py``).
#: With them, where a question back is in play (``expect: clarify``, or a prediction that
#: asked one): ``clarified``, and ``asks_about`` (the question names what is ambiguous; see
#: ``engine/clarify.py``).
ABSTENTION_METRICS = frozenset({"abstained", "clarified", "asks_about"})
#: A sql/sparql/json conversation's case metrics (docs/conversations.md): the share of its
#: scored turns that pass, and 1 when every one passes (SParC's question and interaction match).
TURN_ACCURACY = "turn_accuracy"
INTERACTION_ACCURACY = "interaction_accuracy"
CONVERSATION_METRICS = frozenset({TURN_ACCURACY, INTERACTION_ACCURACY})
#: An agent case's counts (``agent:``, docs/agents.md): EvalBench's tool calls and turns, and
#: what the database side counted of the agent's queries. Lower is better; summed in the
#: aggregates (``total``), so ``{max: x}`` bounds their mean and ``{total_max: x}`` their sum.
AGENT_COUNT_METRICS = ("tool_calls", "turn_count", "queries_executed", "rows_read",
                       "write_attempts", "forbidden_tables", "repeated_calls", "budget_exceeded",
                       "leaks", "refused_attempts")
#: Bounds that still judge a case that gives no answer (``expect: abstain``, a question back
#: with no reply), where an inherited bound on an answer metric is dropped: a protected value
#: the agent showed on its way to declining is a leak all the same (docs/red-team.md).
UNANSWERED_BOUNDS = frozenset({"leaks"})
#: An agent case's scores: EvalBench's trajectory match (0-100) in its two modes, its
#: multiset correction, and the final answer grounded in the result (0 or 1).
AGENT_SCORE_METRICS = ("trajectory_match", "trajectory_match_ordered",
                       "trajectory_match_multiset", "answer_grounded")
AGENT_METRICS = frozenset({*AGENT_COUNT_METRICS, *AGENT_SCORE_METRICS})
#: The Spider evaluator's components, in its print order; each is scored as ``<c>_acc``,
#: ``<c>_rec`` and ``<c>_f1`` beside ``exact_set_match``.
SPIDER_COMPONENTS: tuple[str, ...] = (
    "select", "select_no_agg", "where", "where_no_op", "group_no_having", "group", "order",
    "and_or", "iuen", "keywords",
)
#: The metrics the Spider evaluator scores 0 when its parser cannot read the prediction (the
#: aggregates count those cases as "not parsable by the reference").
SPIDER_STRUCTURE_METRICS = frozenset({"exact_set_match", *(
    f"{c}_{s}" for c in SPIDER_COMPONENTS for s in ("acc", "rec", "f1"))})
#: Pseudo-metric gated and compared beside the real ones: passed / (passed + failed + errors).
PASS_RATE = "pass_rate"

#: Outcomes that count as a pass and as a failure (skipped and xfailed cases are neither).
PASSED_OUTCOMES = frozenset({"passed", "xpassed"})
FAILED_OUTCOMES = frozenset({"failed", "error"})
#: Outcomes that count towards pass rates.
SCORED_OUTCOMES = PASSED_OUTCOMES | FAILED_OUTCOMES


def is_timing(metric: str) -> bool:
    """Timing metrics are lower-is-better and never gated by a global max-drop."""
    return metric.endswith("_seconds")


def is_usage(metric: str) -> bool:
    return metric in USAGE_METRICS or metric in JUDGE_USAGE_METRICS


def lower_is_better(metric: str) -> bool:
    """Timings and usage (tokens, cost): a rise is the worsening, a failed case scores no 0
    for them, and only a named max-drop gates them."""
    return is_timing(metric) or is_usage(metric) or metric in AGENT_COUNT_METRICS


#: Why a case of a group has no value of a metric, in the order the reports list them. A mean
#: over 64 cases of 68 reads as a score over 68 unless the report says so (item 5 of issue 30).
#: Here, below both, because the aggregate takes the means and every report says why.
PREDICTION_ERROR, GOLD_ERROR, OTHER_ERROR, SKIPPED, NO_VALUE = (
    "prediction error", "gold error", "other error", "skipped", "no value")
MISSING_REASONS = (PREDICTION_ERROR, GOLD_ERROR, OTHER_ERROR, SKIPPED, NO_VALUE)
