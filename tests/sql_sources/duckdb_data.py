"""A real DuckDB file for the tests, built from the example suite's Chinook SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"

#: The tables copied from Chinook (DuckDB DDL; rows are copied through Python and a CSV file,
#: since the sqlite scanner extension would need a download).
DDL = {
    "Artist": "CREATE TABLE artist (artist_id INTEGER PRIMARY KEY, name VARCHAR)",
    "Album": "CREATE TABLE album (album_id INTEGER PRIMARY KEY, title VARCHAR, "
             "artist_id INTEGER REFERENCES artist (artist_id))",
    "Genre": "CREATE TABLE genre (genre_id INTEGER PRIMARY KEY, name VARCHAR)",
    "Track": "CREATE TABLE track (track_id INTEGER PRIMARY KEY, name VARCHAR, "
             "album_id INTEGER REFERENCES album (album_id), "
             "genre_id INTEGER REFERENCES genre (genre_id), milliseconds INTEGER, "
             "unit_price DECIMAL(10, 2))",
}
COLUMNS = {
    "Artist": "ArtistId, Name",
    "Album": "AlbumId, Title, ArtistId",
    "Genre": "GenreId, Name",
    "Track": "TrackId, Name, AlbumId, GenreId, Milliseconds, UnitPrice",
}


def build_chinook_duckdb(dst: Path, work: Path) -> Path:
    """A DuckDB copy of four Chinook tables (with their keys), written by an unrestricted
    connection of the test, never by the source under test."""
    import csv

    import duckdb

    src = sqlite3.connect(CHINOOK)
    con = duckdb.connect(str(dst))
    for table, ddl in DDL.items():
        con.execute(ddl)
        path = work / f"{table}.csv"
        with path.open("w", newline="") as f:
            csv.writer(f).writerows(src.execute(f"SELECT {COLUMNS[table]} FROM {table}"))
        con.execute(f"INSERT INTO {ddl.split()[2]} SELECT * FROM read_csv(?, header = false, "
                    "nullstr = '')", [str(path)])
    con.close()
    src.close()
    return dst
