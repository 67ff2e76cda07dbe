"""The pytest-xdist hooks, registered only when xdist is there (pytest-randomly's and syrupy's
way: the hooks' specs exist only then).

On the controller: a worker on this machine is given the directory its predictions are shared
through (:mod:`..predict.exchange`), and what each worker found after its collection (the
suite's case ids, each case's metadata, unmatched prediction ids, the baseline file, its
pool's counts) reaches the controller's :class:`~.runner.Runner` and
:class:`~.controller.Controller` when the worker ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from . import unmatched
from .controller import Controller
from .runner import JOURNAL_PROBLEM, Runner

if TYPE_CHECKING:  # xdist is optional (and untyped): annotations only
    from xdist.workermanage import WorkerController


class XdistHooks:
    def __init__(self, runner: Runner, controller: Controller | None) -> None:
        self.runner = runner
        #: None in a worker (the hooks below run on the controller).
        self.controller = controller
        #: The directory the controller's workers on this machine share predictions through,
        #: made when the first worker starts.
        self.exchange_root: Path | None = None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: WorkerController) -> None:
        """A worker on this machine shares the session's predictions with the others; one
        elsewhere requests each case as it is sent."""
        spec = getattr(getattr(node, "gateway", None), "spec", None)
        if self.runner.options.audit or not getattr(spec, "popen", False) or \
                getattr(spec, "via", None):
            return
        from ..predict import exchange

        if not exchange.available():
            return
        if self.exchange_root is None:
            self.exchange_root = exchange.create_root()
        node.workerinput["queryeval_exchange"] = str(self.exchange_root)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: WorkerController, error: object) -> None:
        """What a worker found after its collection (prediction ids, the suite)."""
        output = getattr(node, "workeroutput", None)
        if not isinstance(output, dict):
            return
        runner = self.runner
        unmatched.from_worker(runner.unmatched, output)
        if runner.suite_ids is None and "queryeval_suite" in output:
            runner.suite_ids = [str(i) for i in output["queryeval_suite"]]
        if runner.baseline is None and output.get("queryeval_baseline"):
            runner.baseline = Path(str(output["queryeval_baseline"]))
        if self.controller is None:
            return
        if isinstance(output.get(JOURNAL_PROBLEM), str):
            self.controller.worker_journal_problems.append(output[JOURNAL_PROBLEM])
        if isinstance(output.get("queryeval_meta"), dict):
            self.controller.case_meta.update(output["queryeval_meta"])
        self.controller.progress.from_worker(
            str(getattr(getattr(node, "gateway", None), "id", "?")),
            output.get("queryeval_predictions"))

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self) -> None:
        if self.exchange_root is not None:
            from ..predict.exchange import remove_root

            remove_root(self.exchange_root)
