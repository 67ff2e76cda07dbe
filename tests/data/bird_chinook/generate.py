"""Writes this folder's BIRD-format inputs: 60 Chinook pairs as bench/bench_bird_run.py writes
them (mini_dev's files), the predictions' empty and unparsable answers at fixed places.

Run from the repository root: ``python tests/data/bird_chinook/generate.py``. The database is
not copied here: it is ``tests/data/chinook/Chinook_Sqlite.sqlite`` (the example suite's
``data/chinook.sqlite``), laid out as ``dbs/chinook/chinook.sqlite`` for a run.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
LEVELS = ("simple", "moderate", "challenging")
GENRES = ("Rock", "Jazz", "Metal", "Blues", "Latin", "Reggae", "Classical", "Pop")
COUNTRIES = ("USA", "Canada", "France", "Brazil", "Germany", "India", "Portugal", "Chile")

#: Predictions that are not SQL the way the model meant it, by index: "" (an empty answer),
#: text SQLite cannot parse, and a query that fails on the schema.
SPECIAL = {
    4: "", 11: "", 18: "   ", 27: "",  # empty answers, one in each difficulty and a blank one
    7: "SELEC Name FRM Artist",  # unparsable
    23: "SELECT Name FROM Artist WHERE",  # unparsable (truncated)
    38: "Sorry, I cannot answer that question.",  # unparsable: prose
    52: "SELECT Nme FROM Artist",  # no such column
    59: "SELECT * FROM Artists",  # no such table
}


def pair(i: int) -> tuple[str, str]:
    """(gold, prediction) for question ``i``: right about two times in three (the same result
    set, written differently), otherwise wrong in one place."""
    g = GENRES[i % len(GENRES)]
    c = COUNTRIES[i % len(COUNTRIES)]
    k = 3 + i % 7
    wrong = i % 3 == 1 or i % 10 == 9
    t = i % 6
    if t == 0:
        gold = (f"SELECT t.name FROM track t JOIN genre g ON t.genreid = g.genreid "
                f"WHERE g.name = '{g}' ORDER BY t.milliseconds DESC, t.trackid LIMIT {k}")
        pred = (f"SELECT Track.Name FROM Track JOIN Genre ON Track.GenreId = Genre.GenreId "
                f"WHERE Genre.Name = '{g}' ORDER BY Track.Milliseconds DESC, Track.TrackId "
                f"LIMIT {k + 1 if wrong else k}")
    elif t == 1:
        gold = (f"SELECT billingcountry, sum(total) FROM invoice WHERE billingcountry = '{c}' "
                "GROUP BY billingcountry")
        pred = (f"SELECT BillingCountry, {'COUNT(*)' if wrong else 'SUM(Total)'} FROM Invoice "
                f"WHERE BillingCountry = '{c}' GROUP BY 1")
    elif t == 2:  # the rows in another order: BIRD compares sets
        gold = f"SELECT firstname, lastname FROM customer WHERE country = '{c}' ORDER BY 2, 1"
        pred = (f"SELECT FirstName, {'City' if wrong else 'LastName'} FROM Customer "
                f"WHERE Country = '{c}' ORDER BY FirstName DESC")
    elif t == 3:  # duplicates: a set has none
        gold = (f"SELECT DISTINCT billingcity FROM invoice WHERE billingcountry = '{c}'")
        pred = (f"SELECT BillingCity FROM Invoice WHERE BillingCountry = "
                f"'{COUNTRIES[(i + 1) % len(COUNTRIES)] if wrong else c}'")
    elif t == 4:
        gold = (f"SELECT ar.name, count(*) FROM artist ar JOIN album al ON ar.artistid = "
                f"al.artistid GROUP BY ar.artistid HAVING count(*) >= {k}")
        pred = (f"SELECT a.Name, COUNT(al.AlbumId) FROM Album al JOIN Artist a ON "
                f"a.ArtistId = al.ArtistId GROUP BY a.ArtistId HAVING COUNT(al.AlbumId) "
                f"{'>' if wrong else '>='} {k}")
    else:  # a count as an integer against the same count as a real: 3 == 3.0 in a set
        gold = f"SELECT count(*) FROM track t JOIN genre g USING (genreid) WHERE g.name = '{g}'"
        pred = (f"SELECT COUNT(TrackId) * 1.0 FROM Track WHERE GenreId = (SELECT GenreId FROM "
                f"Genre WHERE Name = '{GENRES[(i + 1) % len(GENRES)] if wrong else g}')")
    if i == 45:  # a question whose answer is no rows, answered by a query with no rows
        gold = "SELECT name FROM artist WHERE name = 'No Such Artist'"
        pred = "SELECT Name FROM Artist WHERE ArtistId < 0"
    return gold, SPECIAL.get(i, pred)


def main() -> None:
    data = [pair(i) for i in range(60)]
    items = [{"question_id": i, "db_id": "chinook", "question": f"question {i}", "evidence": "",
              "SQL": gold, "difficulty": LEVELS[i % 3]} for i, (gold, _) in enumerate(data)]
    (HERE / "mini_dev_sqlite.json").write_text(json.dumps(items, indent=1) + "\n")
    (HERE / "predict_mini_dev.json").write_text(json.dumps(
        {str(i): f"{pred}\t----- bird -----\tchinook" for i, (_, pred) in enumerate(data)},
        indent=1) + "\n")
    (HERE / "mini_dev_gold.sql").write_text("".join(f"{gold}\tchinook\n" for gold, _ in data))
    (HERE / "mini_dev_diff.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))


if __name__ == "__main__":
    main()
