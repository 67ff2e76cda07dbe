"""How ``max_bytes`` measures a fetched batch, and how many rows SQLite fetches at a time."""

from __future__ import annotations

import sys
from datetime import date
from decimal import Decimal

from pytest_queryeval.sources.base import payload_bytes
from pytest_queryeval.sources.sqlite import MAX_VALUE_BYTES, batch_rows


def test_text_and_binary_count_their_length() -> None:
    size = payload_bytes([("x" * 1000, 1, 2.5, None), ("y" * 500, 2, 0.5, b"z" * 300)])
    assert 1800 <= size < 1900  # the values' length plus a few bytes per value


def test_values_marshal_cannot_write_are_measured_one_by_one() -> None:
    doc = {"a": [1, 2, 3]}
    rows = [(Decimal("1.5"), "y" * 500, b"z" * 300, doc, date(2026, 1, 2))]
    assert payload_bytes(rows) == (sys.getsizeof(Decimal("1.5")) + 500 + 300 + len(repr(doc))
                                   + sys.getsizeof(date(2026, 1, 2)))


def test_sqlite_batches_bound_the_worst_case() -> None:
    # rows x columns x the per-value length cap stays within 512 MiB, from 1 to 1,000 rows
    assert batch_rows(1) == 32
    assert batch_rows(3) == 10
    assert batch_rows(40) == 1
    assert batch_rows(0) == 32
    for columns in range(1, 40):
        assert batch_rows(columns) * columns * MAX_VALUE_BYTES <= 512 * 1024 * 1024 or \
            batch_rows(columns) == 1
