"""A workload where execution dominates, as on BIRD's own databases (issue 53 item 3): one
SQLite table of a million rows and query pairs that each scan it (about 50-100 ms a query on
the benchmark machine), with small results, so that what a run costs is mostly the engine's
work and what the gold cache saves on a rerun (the golds' execution) can be seen.

The pairs follow ``bench_sql_suite.pairs``: about 70 % of predictions are right (the same
query written differently), the rest wrong in one place (a bound, a filter, a column).
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

ROWS = 1_000_000
KINDS = ("view", "click", "cart", "buy", "refund", "share", "login", "logout")


def build_db(path: Path, rows: int = ROWS, seed: int = 0) -> Path:
    """``events(id, user_id, kind, amount, day)`` with ``rows`` rows and no index but the key:
    every query of :func:`pairs` scans the table."""
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    try:
        con.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, user_id INTEGER, kind TEXT, "
                    "amount REAL, day INTEGER)")
        con.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", (
            (i, rng.randrange(50_000), KINDS[rng.randrange(len(KINDS))],
             round(rng.random() * 500, 2), rng.randrange(365)) for i in range(rows)))
        con.commit()
    finally:
        con.close()
    return path


def _pair(i: int, rng: random.Random) -> tuple[str, str]:
    """One (gold, prediction) pair of template ``i % 6``; ``right`` decides the prediction."""
    a = rng.randrange(0, 300)
    b = a + rng.randrange(10, 60)
    k = rng.choice(KINDS)
    x = rng.randrange(50, 450)
    right = rng.random() < 0.7
    t = i % 6
    if t == 0:
        gold = f"SELECT kind, COUNT(*) FROM events WHERE day BETWEEN {a} AND {b} GROUP BY kind"
        pred = (f"SELECT kind, count(1) FROM events WHERE day >= {a} AND day <= {b} "
                "GROUP BY kind" if right else
                f"SELECT kind, COUNT(*) FROM events WHERE day BETWEEN {a} AND {b + 1} "
                "GROUP BY kind")
    elif t == 1:
        gold = f"SELECT COUNT(*) FROM events WHERE amount > {x} AND kind = '{k}'"
        pred = (f"SELECT count(id) FROM events WHERE kind = '{k}' AND amount > {x}" if right
                else f"SELECT COUNT(*) FROM events WHERE amount >= {x - 1} AND kind = '{k}'")
    elif t == 2:
        gold = (f"SELECT user_id, COUNT(*) AS n FROM events WHERE kind = '{k}' "
                f"AND day < {b} GROUP BY user_id ORDER BY n DESC, user_id LIMIT 5")
        pred = (f"SELECT user_id, count(*) AS c FROM events WHERE day < {b} AND kind = '{k}' "
                "GROUP BY user_id ORDER BY c DESC, user_id LIMIT 5" if right else
                f"SELECT user_id, COUNT(*) AS n FROM events WHERE kind = '{k}' "
                f"AND day < {b} GROUP BY user_id ORDER BY n DESC, user_id DESC LIMIT 5")
    elif t == 3:
        gold = (f"SELECT day, MAX(amount) FROM events WHERE kind = '{k}' AND day BETWEEN {a} "
                f"AND {b} GROUP BY day ORDER BY day")
        pred = (f"SELECT day, max(amount) AS m FROM events WHERE day BETWEEN {a} AND {b} "
                f"AND kind = '{k}' GROUP BY day ORDER BY day" if right else
                f"SELECT day, MIN(amount) FROM events WHERE kind = '{k}' AND day BETWEEN {a} "
                f"AND {b} GROUP BY day ORDER BY day")
    elif t == 4:
        u = rng.randrange(0, 49_000)
        gold = f"SELECT COUNT(*), SUM(amount) FROM events WHERE user_id BETWEEN {u} AND {u + 500}"
        pred = (f"SELECT count(id), sum(amount) FROM events WHERE user_id >= {u} "
                f"AND user_id <= {u + 500}" if right else
                f"SELECT COUNT(*), SUM(amount) FROM events WHERE user_id > {u} "
                f"AND user_id <= {u + 500}")
    else:
        gold = (f"SELECT kind, ROUND(AVG(amount), 2) FROM events WHERE amount BETWEEN {x - 40} "
                f"AND {x} GROUP BY kind ORDER BY kind")
        pred = (f"SELECT kind, round(avg(amount), 2) FROM events WHERE amount >= {x - 40} "
                f"AND amount <= {x} GROUP BY kind ORDER BY kind" if right else
                f"SELECT kind, ROUND(AVG(amount), 1) FROM events WHERE amount BETWEEN {x - 40} "
                f"AND {x} GROUP BY kind ORDER BY kind")
    return gold, pred


def pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` (gold, prediction) pairs over :func:`build_db`'s table."""
    rng = random.Random(seed)
    return [_pair(i, rng) for i in range(n)]
