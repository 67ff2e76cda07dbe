"""A datasource whose ``path`` is no database of its engine, or whose ``engine_options`` hold
what a YAML file cannot give (issue 39 item 7): each is an error located at the file, line and
key of ``queryeval.yaml``, found when the suite loads, failing only the cases that use it.

Before: ``path: /etc/passwd`` was "internal error in kind sql: DatabaseError: file is not a
database", ``engine_options: {creator: os.system}`` "internal error in kind sql: TypeError:
'str' object is not callable", an unknown or misspelt option reached ``create_engine``, and
any ``connect_args`` mapping was "internal error ... unhashable type: 'dict'".
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.support import run_report

ROOT = Path(__file__).resolve().parents[2]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"

CONFIG = """\
datasources:
  good: {type: sqlite, path: chinook.sqlite}
  passwd: {type: sqlite, path: passwd}
  folder: {type: sqlite, path: data}
  fifo: {type: sqlite, path: fifo.sqlite}
  wrong_engine: {type: duckdb, path: chinook.sqlite}
  creator:
    type: sqlalchemy
    url: sqlite:///chinook.sqlite
    engine_options:
      creator: os.system
  options:
    type: sqlalchemy
    url: sqlite:///chinook.sqlite
    engine_options:
      pool_pre_ping: true
      pool_sise: 3
      connect_args: {timeout: 5, check_same_thread: false}
      echo: [1]
      poolclass: sqlalchemy.pool.NullPool
  not_a_mapping:
    type: sqlalchemy
    url: sqlite:///chinook.sqlite
    engine_options: [creator]
  factory:
    type: sqlalchemy
    url: sqlite:///chinook.sqlite
    engine_options: {connect_args: {factory: os.system}}
  number: {type: sqlite, path: 5}
  no_path: {type: duckdb}
  plain_data:
    type: sqlalchemy
    url: sqlite:///chinook.sqlite
    engine_options: {connect_args: {timeout: 5}, execution_options: {}, pool_pre_ping: true}
"""

EXPECTED = {
    "passwd": "queryeval.yaml:3: datasources.passwd.path: 'passwd' is not a SQLite database "
              "file (its first bytes are not the SQLite header)",
    "folder": "queryeval.yaml:4: datasources.folder.path: 'data' is a directory, not a SQLite "
              "database file",
    "fifo": "queryeval.yaml:5: datasources.fifo.path: 'fifo.sqlite': a FIFO (named pipe), not a "
            "regular file",
    "wrong_engine": "queryeval.yaml:6: datasources.wrong_engine.path: 'chinook.sqlite' is not a "
                    "DuckDB database file",
    "creator": "queryeval.yaml:11: datasources.creator.engine_options.creator: takes a Python "
               "object (a callable, class or module), which a queryeval.yaml cannot give; not "
               "allowed",
    "options": "queryeval.yaml:17: datasources.options.engine_options.pool_sise: unknown "
               "create_engine() argument (did you mean 'pool_size'?)",
    "not_a_mapping": "queryeval.yaml:24: datasources.not_a_mapping.engine_options: must be a "
                     "mapping of SQLAlchemy create_engine() arguments",
    "factory": "queryeval.yaml:28: datasources.factory.engine_options.connect_args: factory: "
               "takes a Python object, which a queryeval.yaml cannot give; not allowed",
    "number": "queryeval.yaml:29: datasources.number.path: must be the path of a SQLite "
              "database file (a string), not int",
    "no_path": "queryeval.yaml:30: datasources.no_path.path: missing: a duckdb datasource needs "
               "the path of its DuckDB database file",
}


def test_a_datasource_that_is_no_database_or_takes_objects_is_a_located_error(suite):
    shutil.copyfile(CHINOOK, suite.path / "chinook.sqlite")
    (suite.path / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (suite.path / "data").mkdir()
    os.mkfifo(suite.path / "fifo.sqlite")
    (suite.path / "queryeval.yaml").write_text(CONFIG)
    names = ["good", "plain_data", *EXPECTED]
    suite.makefile(".yaml", test_ds="kind: sql\ncases:\n" + "".join(
        f"  - {{id: {name}, datasource: {name}, gold: SELECT count(*) FROM Artist, "
        f"predicted: SELECT count(*) FROM Artist}}\n" for name in names))
    result, report = run_report(suite)
    out = result.stdout.str()
    # plain data in connect_args and execution_options is taken (before: an internal error,
    # "unhashable type: 'dict'", on the way to the sandbox worker)
    assert report.outcomes == {"good": "passed", "plain_data": "passed",
                               **{name: "error" for name in EXPECTED}}
    for name, message in EXPECTED.items():
        assert message in report.by_id[name]["error"], (name, report.by_id[name]["error"])
    options = report.by_id["options"]["error"]
    assert "queryeval.yaml:19: datasources.options.engine_options.echo: must be true, false " \
           "or debug, not [1]" in options
    assert "queryeval.yaml:20: datasources.options.engine_options.poolclass: takes a Python " \
           "object" in options
    assert "connect_args" not in options.split("(allowed:")[0]  # plain data is allowed
    assert "internal error" not in out and "Traceback" not in out
