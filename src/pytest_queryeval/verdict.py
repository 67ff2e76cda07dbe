"""Where the baseline file is, and what a case's outcome means against it.

The baseline path is resolved by one rule for reading (``--queryeval-baseline``) and writing
(``--queryeval-update-baseline``), so a bare name written by one run is the file the next run
compares with, whichever directory pytest is started from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: config imports report.baseline, which imports this module
    from .config import ConfigFinder

#: ini ``queryeval_baseline``'s default.
DEFAULT_BASELINE = "queryeval-baseline.json"


def suite_dir(finder: ConfigFinder, case_dirs: Iterable[Path], rootdir: Path) -> Path:
    """The directory of the outermost ``queryeval.yaml`` governing the run's case files (the
    rootdir when there is none): where a baseline given by a bare file name lives."""
    configs = sorted({p.parent for d in case_dirs for p in finder.for_directory(d).files},
                     key=lambda p: (len(p.parts), str(p)))
    return configs[0] if configs else rootdir


def baseline_file(cli_value: str | None, ini_value: str, *, suite: Path, invocation_dir: Path,
                  rootdir: Path) -> Path:
    """The baseline of the run: ``--queryeval-baseline`` when given, else ini
    ``queryeval_baseline``. A bare file name lies beside the suite (:func:`suite_dir`) for
    both; a relative path with a directory is taken from the current directory on the command
    line and from the rootdir in the ini file, as pytest's own path options are."""
    value, base = (cli_value, invocation_dir) if cli_value else (ini_value or DEFAULT_BASELINE,
                                                                 rootdir)
    path = Path(value)
    if path.is_absolute():
        return path.resolve()
    if "/" not in value and "\\" not in value:
        return (suite / value).resolve()
    return (base / value).resolve()


def describe_predictions(spec: Mapping[str, Any] | None) -> str | None:
    """A suite's ``predictions:`` as one short line for the report (``file:preds.jsonl``)."""
    if not spec:
        return None
    source = str(spec.get("source"))
    for key in ("path", "function", "callable", "url", "command", "model"):
        value = spec.get(key)
        if isinstance(value, str):
            if key == "url":  # its query string may carry tokens: never shown
                from .secrets import mask_url

                value = mask_url(value.split("?", 1)[0])
            return f"{source}:{value}"
        if isinstance(value, list):
            return f"{source}:{' '.join(map(str, value))}"
    return source


def partial_run(args: Sequence[str], invocation_dir: Path, suite: Path,
                patterns: Sequence[str], collected: set[Path]) -> list[str]:
    """Why the command-line arguments select only part of the suite: node ids, or a path
    inside the suite directory while the suite has case files outside it."""
    why: list[str] = []
    inside: list[Path] = []
    for arg in args:
        if "::" in arg:
            why.append(f"explicit node id {arg}")
            continue
        path = (invocation_dir / arg).resolve()
        if path != suite and suite in path.parents:
            inside.append(path)
    if inside:
        missed = sorted({p for pattern in patterns for p in suite.rglob(pattern)
                         if p.is_file() and not any(part.startswith(".") for part in
                                                    p.relative_to(suite).parts)
                         and p.resolve() not in collected})
        if missed:
            names = ", ".join(str(p.relative_to(suite)) for p in missed[:3])
            more = f" and {len(missed) - 3} more" if len(missed) > 3 else ""
            why.append(f"the suite's case files {names}{more} were not run")
    return why


def update_refusals(*, filters: Sequence[str], interrupted: bool, stopped: str | None,
                    errors: Sequence[str]) -> list[str]:
    """Why this run must not become the baseline (empty: it may). A filtered or cut-short run
    would silently drop cases from it, and errors would enter it as the accepted state."""
    why = [f"the run was filtered ({', '.join(filters)})"] if filters else []
    if interrupted:
        why.append("the run was interrupted")
    if stopped:
        why.append(f"the run stopped early ({stopped})")
    if errors:
        shown = ", ".join(errors[:3]) + (f" and {len(errors) - 3} more" if len(errors) > 3 else "")
        why.append(f"{len(errors)} case(s) ended in an error ({shown})")
    return why


# --------------------------------------------------------------------------------------------
# --queryeval-verdict: what a failing case means against the baseline

MODES = ("strict", "baseline", "gates")
#: Verdicts recorded on a case (the record's ``verdict``).
KNOWN = "failing since baseline"  #: failed in the baseline too: xfailed in ``baseline`` mode
BELOW = "below threshold"  #: xfailed in ``gates`` mode
REGRESSION = "regression"  #: passed in the baseline, fails or errors now
FIXED = "fixed"  #: failed or errored in the baseline, passes now


def parse_mode(cli: str | None, ini: str | None, has_baseline: bool) -> str:
    """The verdict mode; a usage problem is a ValueError naming the option."""
    mode = (cli or ini or "strict").strip()
    where = "--queryeval-verdict" if cli else "ini queryeval_verdict"
    if mode not in MODES:
        raise ValueError(f"{where}: {mode!r} is not one of {', '.join(MODES)}")
    if mode == "baseline" and not has_baseline:
        raise ValueError(f"{where}=baseline needs --queryeval-baseline PATH: the report whose "
                         f"failing cases are the known ones")
    return mode


def judged_outcome(record: Mapping[str, Any]) -> Any:
    """The outcome pass rates and baseline comparisons count: a case the verdict mode turned
    into an xfail still failed (a 70% model must not show a 100% pass rate)."""
    outcome = record.get("outcome")
    if outcome == "xfailed" and record.get("verdict") in (KNOWN, BELOW):
        return "failed"
    return outcome


def case_state(record: Mapping[str, Any]) -> str | None:
    """passed / failed / error as the case was judged on its own, before any verdict mode
    (``status``): an xfail the mode granted in the baseline run still counts as failed."""
    status = record.get("status")
    if status in ("passed", "failed", "error"):
        return str(status)
    return "error" if record.get("outcome") == "error" else None


def _why(record: Mapping[str, Any]) -> str:
    if record.get("reason"):
        text = str(record["reason"])
    else:
        metrics = record.get("metrics") or {}
        thresholds = record.get("thresholds") or {}
        parts = []
        for metric in record.get("failed_metrics") or []:
            value = metrics.get(metric)
            bound = " and ".join(f"{k} {v:g}" for k, v in (thresholds.get(metric) or {}).items())
            shown = "n/a" if value is None else f"{value:.3f}"
            parts.append(f"{metric}={shown}" + (f" ({bound})" if bound else ""))
        text = ", ".join(parts) or "failed"
    text = " ".join(text.split())
    return text if len(text) <= 160 else text[:159] + "…"


class Verdicts:
    """The per-case verdict of a non-strict mode, from the baseline's case states. Pairs cases
    by id, or by node id when ids repeat (as the baseline comparison does)."""

    def __init__(self, mode: str, baseline: Mapping[str, Any] | None) -> None:
        self.mode = mode
        cases = [c for c in (baseline or {}).get("cases") or [] if isinstance(c, Mapping)]
        ids = [str(c.get("id")) for c in cases]
        self.by_id: dict[str, str | None] = {}
        self.by_nodeid: dict[str, str | None] = {}
        if len(set(ids)) == len(ids):
            self.by_id = {i: case_state(c) for i, c in zip(ids, cases, strict=True)}
        else:
            self.by_nodeid = {str(c.get("nodeid")): case_state(c) for c in cases}

    def before(self, record: Mapping[str, Any]) -> str | None:
        if self.by_id:
            return self.by_id.get(str(record.get("id")))
        return self.by_nodeid.get(str(record.get("nodeid")))

    def decide(self, record: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
        """(baseline state, verdict, xfail reason): the reason is set when the case is to be
        reported as xfailed. Infrastructure errors are never forgiven; a query error or a
        refusal is forgiven only where a below-threshold score would be, with its reason."""
        before = self.before(record)
        status = record.get("status")
        if status == "passed":
            return before, (FIXED if before in ("failed", "error") else None), None
        if status != "failed":  # error: the case was not evaluated, the model is unknown
            return before, (REGRESSION if before == "passed" else None), None
        why = _why(record)
        if self.mode == "gates":
            if record.get("reason") and before == "passed":
                return before, REGRESSION, None
            note = " (passed in the baseline)" if before == "passed" else ""
            return before, BELOW, f"{BELOW}: {why}{note}"
        if before == "failed":
            return before, KNOWN, f"{KNOWN}: {why}"
        if before == "passed":
            return before, REGRESSION, None
        return before, None, None  # new, skipped or an error in the baseline: strict
