"""Schema-only SQLite files ``<out>/<db_id>/<db_id>.sqlite`` from a Spider ``tables.json``.

The reference's match mode reads each database's tables and columns from its SQLite file
(``process_sql.get_schema``); Spider's databases are not here, so these files hold only the
schema (one ``CREATE TABLE`` per table of ``table_names_original`` with the columns of
``column_names_original``; ``sqlite_sequence`` made by SQLite itself). Exact set match never
reads a row.

    python make_schema_dbs.py tables.json OUT_DIR
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path


def main(tables: str, out: str) -> None:
    for entry in json.loads(Path(tables).read_text(encoding="utf-8")):
        db = entry["db_id"]
        path = Path(out) / db / f"{db}.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        names = entry["table_names_original"]
        cols: dict[int, list[str]] = {i: [] for i in range(len(names))}
        for t, c in entry["column_names_original"]:
            if t >= 0:
                cols[t].append(c)
        con = sqlite3.connect(path)
        for i, table in enumerate(names):
            if table.lower() == "sqlite_sequence":
                con.execute('CREATE TABLE "__seq" (id INTEGER PRIMARY KEY AUTOINCREMENT)')
                con.execute('INSERT INTO "__seq" DEFAULT VALUES')
                con.execute('DROP TABLE "__seq"')
                continue
            columns = ", ".join(f'"{c}"' for c in cols[i])
            con.execute(f'CREATE TABLE "{table}" ({columns})')
        con.commit()
        con.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
