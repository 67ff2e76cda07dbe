"""pytest-queryeval: the pytest entry point (``pytest11``), module-level hooks only.

pytest imports this module in every run of every project where the plugin is installed, so it
imports nothing of the package but :mod:`..hookspecs` and :mod:`.declare` (a test keeps it so):
the plugin sleeps until it is needed. It wakes up (:func:`_wake`) when ``pytest_collect_file``
meets a case file (:class:`~.declare.CaseFiles`), or at ``pytest_configure`` when the run was
given one of its options or ini values (checked before collection, as usage errors) or is an
xdist controller (whose workers collect). Waking reads every option once
(:class:`~.options.RunOptions`) and registers the objects whose methods are the other hooks, as
pytest's own stepwise, junitxml and cacheprovider plugins do:

- :class:`~.runner.Runner`, in every process: collection and the run of the cases;
- :class:`~.controller.Controller`, in a serial run or on the xdist controller (decided here,
  once): the records, the end of the session and the terminal summary;
- :class:`~.xdist.XdistHooks`, only when pytest-xdist is there.

The hooks left here are those whose place in pytest's call order is this module's (it is
registered when pytest loads its plugins, before ``pytest_configure``). Everything else is
importable without pytest. The registry hooks' default implementation is the plugin
:mod:`.builtins` (the package's own kinds, datasource types, prediction sources, formats).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import hookspecs
from . import builtins
from .declare import (
    FIXTURE,
    CaseFiles,
    add_ini,
    add_report_options,
    add_run_options,
    asked_for,
    rewrite_bare,
)

if TYPE_CHECKING:
    from .controller import Controller
    from .nodes import QueryEvalFile
    from .pycases import QueryEval
    from .runner import Runner

_CASE_FILES = pytest.StashKey[CaseFiles]()
_STARTED = pytest.StashKey[float]()
_FORGET = pytest.StashKey[Callable[[], None]]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
    pluginmanager.register(builtins, "queryeval-builtins")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("queryeval", "natural-language-to-query evaluation")
    add_run_options(group.addoption)
    add_report_options(group.addoption)
    add_ini(parser.addini)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    """The plugin's options on the command line, before the conftests are read: a bare flag's
    value (:func:`.declare.rewrite_bare`), and a value given as the next word, which moved
    pytest's rootdir, decided again with every option known (:mod:`.rootdir`)."""
    if given := rewrite_bare(args):
        from .rootdir import redecide

        redecide(early_config, parser, args, given)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STARTED] = time.time()
    config.stash[_CASE_FILES] = CaseFiles(config.getini("queryeval_files"), config.rootpath)
    controller = not hasattr(config, "workerinput") and \
        getattr(config.option, "dist", "no") != "no"
    if controller or asked_for(lambda dest: getattr(config.option, dest, None), config.getini):
        _wake(config)


def _wake(config: pytest.Config) -> Runner:
    """Read the options and register the hook objects (see the module docstring); once."""
    from .controller import Controller
    from .nodes import RUNNER, register_entries
    from .options import RunOptions
    from .runner import Runner, custom_metric_names, make_evaluator, metric_catalog

    config.stash[_FORGET] = register_entries(config)  # the registry hooks' entries
    # an xdist worker's options were checked by its controller, which also ends the run
    worker = hasattr(config, "workerinput")
    custom_metrics = custom_metric_names(config)
    options = RunOptions.from_config(config, lambda: metric_catalog(custom_metrics),
                                     check=not worker)
    runner = Runner(config, options, make_evaluator(config, options), custom_metrics,
                    worker=worker)
    runner.begin()  # SIGTERM as an interrupt, the journal beside the JSON report
    config.stash[RUNNER] = runner  # the collection nodes reach it there
    config.pluginmanager.register(runner, "queryeval-runner")
    controller = None
    if not worker:
        controller = Controller(config, options, runner, started=config.stash[_STARTED])
        config.pluginmanager.register(controller, "queryeval-controller")
    if config.pluginmanager.hasplugin("xdist"):
        from .xdist import XdistHooks

        config.pluginmanager.register(XdistHooks(runner, controller), "queryeval-xdist")
    return runner


def _runner(config: pytest.Config) -> Runner | None:
    """The process's runner once the plugin woke up (None: it sleeps)."""
    plugin: Any = config.pluginmanager.get_plugin("queryeval-runner")
    return plugin  # type: ignore[no-any-return]


def _controller(config: pytest.Config) -> Controller | None:
    plugin: Any = config.pluginmanager.get_plugin("queryeval-controller")
    return plugin  # type: ignore[no-any-return]


@pytest.fixture
def queryeval(request: pytest.FixtureRequest) -> QueryEval:
    """``queryeval.check(kind=..., id=..., gold=..., ...)``: a case written in Python."""
    from .pycases import fixture_value

    return fixture_value(request, _wake)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A ``queryeval`` fixture's test wakes the plugin, one item per model (:mod:`.pycases`)."""
    if FIXTURE in metafunc.fixturenames:
        from .pycases import fan_out

        fan_out(metafunc, _runner(metafunc.config) or _wake(metafunc.config), FIXTURE)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> QueryEvalFile | None:
    case_files = parent.config.stash.get(_CASE_FILES, None)
    if case_files is None or not case_files(file_path):
        return None
    if _runner(parent.config) is None:
        _wake(parent.config)
    from .nodes import QueryEvalFile

    return QueryEvalFile.from_parent(parent, path=file_path)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Tell a case item which items run after it (:data:`~.nodes.NEXT_ITEMS`): it sends
    their first queries to the worker ahead."""
    if nextitem is None or _runner(item.config) is None:
        return
    from .nodes import NEXT_ITEMS, QueryEvalItem, upcoming

    if isinstance(item, QueryEvalItem):
        item.stash[NEXT_ITEMS] = upcoming(item, nextitem)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every process ends its run; the controller then aggregates, gates, compares and writes
    the reports, before junit is written."""
    runner = _runner(session.config)
    if runner is None:
        return
    runner.finish(session, int(exitstatus))
    controller = _controller(session.config)
    if controller is not None:
        controller.finish(session, int(exitstatus))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    controller = _controller(config)
    if controller is not None:
        controller.terminal_summary(terminalreporter)


@pytest.hookimpl(trylast=True)  # after pytest's own end-of-run gc.collect(), which is then cheap
def pytest_unconfigure(config: pytest.Config) -> None:
    runner = _runner(config)
    if runner is not None:
        runner.release()
    config.stash.get(_FORGET, lambda: None)()  # a session's entries must not leak to the next


def pytest_report_header(config: pytest.Config) -> str | None:
    runner = _runner(config)
    value = runner.options.predictions if runner is not None else None
    return f"queryeval: predictions from {value}" if value else None
