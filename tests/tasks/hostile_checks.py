"""Python checks for tests/tasks: honest ones and hostile ones (run in the sandbox worker)."""

from __future__ import annotations

from typing import Any


def prices_raised(conn: Any, predicted: list[str], gold: list[str]) -> bool:
    (n,) = conn.execute("SELECT count(*) FROM Track WHERE GenreId = 1 AND UnitPrice > 1.0"
                        ).fetchone()
    assert n == 1297, f"{n} rock tracks cost more than 1.00"
    return True


def spin(conn: Any, predicted: list[str], gold: list[str]) -> bool:
    while True:
        pass


def hog(conn: Any, predicted: list[str], gold: list[str]) -> bool:
    blocks = []
    while True:
        blocks.append(bytearray(64 << 20))


def big_file(conn: Any, predicted: list[str], gold: list[str]) -> bool:
    import tempfile

    chunk = b"x" * (1 << 20)
    with open(tempfile.gettempdir() + "/queryeval-hostile.bin", "wb") as fh:
        for _ in range(2048):  # 2 GiB, a MiB at a time
            fh.write(chunk)
    return True
