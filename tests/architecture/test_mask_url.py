"""secrets.mask_url, the one URL masker: the rules of the two maskers it replaces, together.

secrets.py allowed ``/`` in a password (SQLAlchemy accepts it unencoded), the sqlalchemy
source's copy did not but also masked ``?password=``: each missed what the other masked.
"""

from __future__ import annotations

from pytest_queryeval._util.secrets import Scrubber, mask_url
from pytest_queryeval.sources import sqlalchemy


def test_a_slash_in_the_password_is_masked_whole() -> None:
    assert mask_url("postgresql://u:pa/ss@127.0.0.1/db") == "postgresql://u:***@127.0.0.1/db"


def test_a_password_in_the_query_string_is_masked() -> None:
    url = "mssql+pyodbc://127.0.0.1/db?driver=ODBC+18&PWD=s3cret&encrypt=no"
    assert mask_url(url) == "mssql+pyodbc://127.0.0.1/db?driver=ODBC+18&PWD=***&encrypt=no"
    assert mask_url("x://h/db?password=s3cret") == "x://h/db?password=***"


def test_both_rules_in_one_text() -> None:
    text = "postgresql://u:a/b@h/db?passwd=c and x://a:b@c"
    assert mask_url(text) == "postgresql://u:***@h/db?passwd=*** and x://a:***@c"


def test_the_sqlalchemy_source_and_the_scrubber_mask_alike() -> None:
    url = "postgresql://u:pa/ss@127.0.0.1/db?password=s3cret"
    masked = "postgresql://u:***@127.0.0.1/db?password=***"
    assert sqlalchemy.mask_url(url) == masked
    assert Scrubber().text(url) == masked


def test_text_without_a_password_is_unchanged() -> None:
    for text in ("sqlite:///tmp/x.db", "http://127.0.0.1:7878/query", "u:p@h", "a password=x"):
        assert mask_url(text) == text
