"""Exceptions that carry a user-facing reason; anything else reaching the user is a bug."""

from __future__ import annotations


class QueryEvalError(Exception):
    """Base of every error the plugin reports as a reason instead of a traceback."""

    #: Short prefix of the reason shown to users ("refused", "timeout", ...).
    prefix = "error"
    #: What a kind had settled about the case when the error came (the SQL kind's
    #: ``gold_dialect``): the case's record keeps it, so a failing gold still says which
    #: dialect's gold ran. Set in the process that raised it, never pickled.
    details: dict[str, object] | None = None

    def reason(self) -> str:
        return f"{self.prefix}: {self}"


class QueryEvalWarning(UserWarning):
    """A suite problem that does not fail the run (``-W error`` makes it an error)."""


class ConfigError(QueryEvalError):
    """A located problem in a suite or case file: ``file:line: key path: message``."""

    prefix = "invalid"

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 key: str | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.key = key
        super().__init__(self.located())

    def __reduce__(self) -> tuple[object, ...]:  # rebuilt whole when it crosses a process
        return (type(self), (self.message, self.file, self.line, self.key))

    def located(self) -> str:
        where = self.file or "<unknown>"
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"

    def reason(self) -> str:
        return self.located()


class QueryRefused(QueryEvalError):
    """A predicted statement that could modify a data source, refused before reaching it."""

    prefix = "refused"


class ReadRefused(QueryRefused):
    """A read the guard refuses because no count of the tables a query read could see what
    it reads (DuckDB's ``SUMMARIZE``, ``pragma_storage_info('Employee')``): not executed, as
    any refusal, but not a write either, so an agent's honest try is no write attempt."""


class TableComputed(QueryRefused):
    """A refused call that runs SQL given as text or reads a table by name, its argument no
    string literal (``query('SELECT * FROM Tr' || 'ack')``): the table's name is computed at
    run time, so no text spells it and the count of forbidden tables takes it for any of them
    (issue 58, the twenty-eighth re-probe's H4: it was counted as none)."""


class TableComputedRead(TableComputed, ReadRefused):
    """A table function that reads the table its argument names, that argument computed
    (``pragma_storage_info('Tr' || 'ack')``): a read, as :class:`ReadRefused`, of a table
    no text names (:class:`TableComputed`)."""


class FormRefused(QueryRefused):
    """A statement the read-only guard does not run for its form alone (not one query: a
    ``PRAGMA``, ``EXPLAIN``, ``SHOW``, two ``SELECT``), nothing in it refused: it may only
    read, so an agent's try counts a write attempt only when the judge of writes calls it
    one."""


class QuerySyntaxError(QueryRefused):
    """The predicted text does not even start like a query (prose, a misspelled keyword).

    Not executed, like a refusal (hence the subclass: every guard caller stops it), but named
    for what it is: ``cannot parse: syntax error at ...``, not ``refused: not a read-only
    query``, which is kept for statements that would write or are not queries.
    """

    prefix = "cannot parse"


class QueryTimeout(QueryEvalError):
    """The per-query timeout ended the query."""

    prefix = "timeout"


class CountedTimeout(QueryTimeout):
    """The timeout of a statement whose reads the engine counted as it ran
    (:mod:`~.sources.pgreads`), with :attr:`tables`, the tables it read before it was
    cancelled: a routine that read ``employee`` and then slept past the timeout was counted
    as no read (the forty-sixth re-probe's P10). A timeout of a counted statement whose
    counts could not be read after it is a plain :class:`QueryTimeout`, and leaves the
    count unestablished."""

    def __init__(self, message: str, tables: frozenset[str]) -> None:
        super().__init__(message)
        self.tables = tables

    def __reduce__(self) -> tuple[object, ...]:
        return type(self), (str(self), self.tables)


class QueryFailed(QueryEvalError):
    """The engine rejected the query (syntax error, unknown table...)."""

    prefix = "query failed"


class QueryUnparsed(QueryFailed):
    """The engine could not parse the query, so it ran nothing (an embedded graph engine's
    ``Parser exception``): a failed query as before, which an agent's counts judge on its words (an
    unterminated comment after ``DETACH DELETE`` is still a write attempt)."""


class WorkerDied(QueryFailed):
    """The query's worker died or went over its memory ceiling: a failed query, which says
    nothing of what the query reads (an agent's count taken from the engine's account is then
    unknown, never the text's names alone: the thirty-seventh re-probe's H1)."""


class PartlyRead(QueryFailed):
    """The engine could not bind a query, yet its plan names tables it reads (DuckDB plans
    ``SELECT COLUMNS('Name') FROM Track``, which its binder refuses): a failed account, so the
    text is read as on a text no engine took, with :attr:`tables` beside it, never fewer."""

    def __init__(self, message: str, tables: frozenset[str]) -> None:
        super().__init__(message)
        self.tables = tables

    def __reduce__(self) -> tuple[object, ...]:
        return type(self), (str(self), self.tables)


class CountUnknown(QueryEvalError):
    """A count the database side cannot take for this datasource (an agent case's error):
    the engine's account, or the catalog of its views and routines, could not be read."""


class SourceUnavailable(QueryEvalError):
    """The data source could not be reached: an infrastructure error, not a model failure."""

    prefix = "source unavailable"


class PredictionError(QueryEvalError):
    """No prediction could be obtained for a case (missing, predictor crashed, HTTP error)."""

    prefix = "prediction error"


class SourceDown(PredictionError):
    """The source's server is not there: its preflight got no answer, or its circuit breaker
    stopped asking after consecutive connection failures (:mod:`.predict.breaker`). Always an
    infrastructure ``error`` (never the model's failure, whatever ``failures:`` says): a
    server that is down says nothing about the model."""

    def __init__(self, message: str, attempts: int = 0) -> None:
        super().__init__(message)
        #: The connection attempts the source had made in this process when it stopped (its
        #: preflight's included), recorded in the case's ``details.source_down``.
        self.attempts = attempts


class AnswerFailed(PredictionError):
    """The source was asked and gave no answer: it timed out, failed after its retries or
    crashed. An infrastructure ``error`` unless the suite counts it as the model's failure
    (``predictions: {failures: model}``); told apart from a source that cannot even be built
    (a bad key, a missing file), which stays an error of the suite."""


class SearchBudgetExhausted(QueryEvalError):
    """A comparison search (column alignment, column assignment) hit its deterministic work
    budget on a hostile or degenerate result: the score is unknown, never guessed."""

    prefix = "search budget exhausted"


class ComparisonTimeout(SearchBudgetExhausted):
    """Comparing the results outlasted the case's ``timeout`` (:mod:`._isolation.comparison_deadline`):
    like an exhausted budget, the score is unknown, never guessed."""

    prefix = "timeout"


class GoldError(QueryEvalError):
    """The gold side itself is broken: an error of the suite, not of the model."""

    prefix = "gold error"


class MissingDependency(QueryEvalError):
    """An optional extra is needed; the message says which and how to install it."""

    prefix = "missing dependency"
