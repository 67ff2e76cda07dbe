"""The sandbox worker (pytest_queryeval._isolation.sandbox): hard deadline, memory ceiling, file-size cap,
reply cap, errors carried back, state kept between calls, and Ctrl-C while waiting. Real
processes throughout; the functions below run in the worker (imported there by name)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from pytest_queryeval._isolation.sandbox import (
    Sandbox,
    SandboxMemoryError,
    SandboxNotRun,
    SandboxNotStarted,
    SandboxTimeout,
    SandboxTooBig,
    in_worker,
    worker_state,
)
from pytest_queryeval.errors import QueryFailed, QueryTimeout

MIB = 1024 * 1024


def _add(a: int, b: int) -> tuple[int, bool, int]:
    return a + b, in_worker(), os.getpid()


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _spin_in_c(seconds: float) -> int:
    """One C call that never returns to the interpreter within ``seconds``: a regex with
    catastrophic backtracking (as SQLite's ``instr()`` on 16 MB strings: no check inside)."""
    import re

    n = 24 + int(seconds)
    return 1 if re.match(r"(a+)+$", "a" * n + "b") else 0


def _allocate(n: int) -> int:
    return len(bytearray(n))


def _blob(n: int) -> bytes:
    return b"x" * n


def _write_temp(n: int) -> str:
    import tempfile

    with tempfile.NamedTemporaryFile() as fh:
        fh.write(b"x" * n)
        fh.flush()
    return os.environ["TMPDIR"]


def _raise() -> None:
    raise QueryFailed("no such table: nowhere")


def _count() -> int:
    state = worker_state()
    state["n"] = state.get("n", 0) + 1
    return int(state["n"])


@pytest.fixture
def box() -> Sandbox:
    b = Sandbox("test", max_memory=256 * MIB, max_file=4 * MIB)
    yield b  # type: ignore[misc]
    b.close()


def test_call_runs_in_a_worker(box: Sandbox) -> None:
    total, inside, pid = box.call(_add, 2, 3, timeout=30)
    assert (total, inside) == (5, True)
    assert pid != os.getpid() and pid == box.pid
    assert not in_worker()


def test_hard_deadline_kills_and_restarts(box: Sandbox) -> None:
    first = box.call(_add, 1, 1, timeout=30)[2]
    with pytest.raises(SandboxTimeout) as info:
        box.call(_spin_in_c, 60, timeout=0.5)
    assert isinstance(info.value, QueryTimeout)
    assert "no result within 0.5 s" in str(info.value)
    assert box.kills == 1
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)  # the runaway worker is gone, not left spinning
    again = box.call(_add, 1, 1, timeout=30)
    assert again[0] == 2 and again[2] != first
    assert box.starts == 2


def test_memory_ceiling(box: Sandbox) -> None:
    with pytest.raises(SandboxMemoryError) as info:
        box.call(_allocate, 2048 * MIB, timeout=30)
    assert "over max_memory (268,435,456 bytes)" in str(info.value)
    assert box.call(_allocate, 32 * MIB, timeout=30) == 32 * MIB  # the worker survives
    assert box.kills == 0


def test_reply_cap(box: Sandbox) -> None:
    with pytest.raises(SandboxTooBig) as info:
        box.call(_blob, 2 * MIB, timeout=30, max_reply=MIB)
    assert info.value.size > 2 * MIB
    assert box.call(_blob, 10, timeout=30) == b"x" * 10


def test_file_size_cap_and_private_temp_dir(box: Sandbox) -> None:
    tmp = box.call(_write_temp, MIB, timeout=30)
    assert Path(tmp).is_dir() and Path(tmp).name.startswith("queryeval-test-")
    with pytest.raises(OSError, match="File too large"):
        box.call(_write_temp, 8 * MIB, timeout=30)
    box.close()
    assert not Path(tmp).exists()


def test_errors_and_state(box: Sandbox) -> None:
    with pytest.raises(QueryFailed, match="no such table: nowhere"):
        box.call(_raise, timeout=30)
    assert [box.call(_count, timeout=30) for _ in range(3)] == [1, 2, 3]


def _echo(blob: bytes) -> bytes:
    return blob * 2


def test_pipeline_sends_calls_at_once_and_keeps_each_outcome(box: Sandbox) -> None:
    """One write for several calls (the gold and the prediction of a case); each outcome
    returns or raises what :meth:`Sandbox.call` would, and the worker keeps its state."""
    outcomes = box.pipeline([(_count, (), 30, MIB), (_raise, (), 30, MIB),
                             (_blob, (2 * MIB,), 30, MIB), (_count, (), 30, MIB)])
    assert outcomes[0]() == 1
    with pytest.raises(QueryFailed, match="no such table: nowhere"):
        outcomes[1]()
    with pytest.raises(SandboxTooBig):  # over its max_reply, counted by the worker
        outcomes[2]()
    assert outcomes[3]() == 2  # which goes on
    assert box.kills == 0


def test_pipeline_timeout_ends_the_rest_and_each_call_has_its_own_deadline(box: Sandbox,
                                                                          ) -> None:
    first, hung, never = box.pipeline([(_sleep, (0.3,), 30, MIB), (_spin_in_c, (60,), 0.5, MIB),
                                       (_add, (1, 2), 30, MIB)])
    assert first() == 0.3
    with pytest.raises(SandboxTimeout, match=r"no result within 0\.5 s"):
        hung()
    with pytest.raises(SandboxNotRun, match="ended at an earlier call"):
        never()
    assert box.kills == 1
    # the deadline of a call counts from the reply before it: two 2 s calls both fit their
    # 3 s deadlines, though together they take longer
    slow = box.pipeline([(_sleep, (2.0,), 3, MIB), (_sleep, (2.0,), 3, MIB)])
    assert [o() for o in slow] == [2.0, 2.0]
    assert box.kills == 1


def test_pipeline_of_requests_larger_than_a_pipe(box: Sandbox) -> None:
    """Requests over a pipe's smallest capacity go one by one: all at once, the worker would
    block writing its first large reply while the parent still wrote the second request."""
    blobs = [bytes([65 + i]) * (300 * 1024) for i in range(3)]
    outcomes = box.pipeline([(_echo, (b,), 30, 4 * MIB) for b in blobs])
    assert [o() for o in outcomes] == [b * 2 for b in blobs]
    assert box.kills == 0


def test_calls_sent_ahead_run_before_later_calls_and_keep_their_outcomes(box: Sandbox,
                                                                        ) -> None:
    """submit() writes now and reads later (issue 30: the next case's queries run while this
    one is scored): a later call's reply is read after the replies sent before it, each
    reaching its own ticket, and a ticket's outcomes are what pipeline() gives."""
    box.start()
    first = box.submit([(_count, (), 30, MIB), (_raise, (), 30, MIB)])
    second = box.submit([(_count, (), 30, MIB)])
    assert box.round_trips == 2 and box.sent_ahead == 1  # second: first's replies unread
    assert box.call(_count, timeout=30) == 3  # the worker ran both tickets first
    assert box.round_trips == 3
    assert second.outcomes()[0]() == 2
    one, failed = first.outcomes()
    assert one() == 1
    with pytest.raises(QueryFailed, match="no such table: nowhere"):
        failed()
    assert box.kills == 0


def test_a_call_sent_ahead_gets_its_whole_deadline(box: Sandbox) -> None:
    """Its deadline counts from the reply before it (or from when the parent comes to wait,
    if later), never from when it was sent: the second call, sent with the first, finishes
    1.6 s after it was sent and keeps within its 1.5 s."""
    box.start()
    first = box.submit([(_sleep, (0.8,), 1.5, MIB)])
    second = box.submit([(_sleep, (0.8,), 1.5, MIB)])
    time.sleep(0.3)  # the parent busy elsewhere meanwhile
    assert second.outcomes()[0]() == 0.8
    assert first.outcomes()[0]() == 0.8
    assert box.kills == 0


def test_a_call_sent_ahead_gets_no_more_than_its_deadline(box: Sandbox) -> None:
    """The parent busy elsewhere for longer than a sent-ahead call's deadline does not lend
    the call its own time: the call (2 s of work, a 1 s deadline, started at once) is over
    its deadline when the parent comes to wait after 1.5 s, and is killed then, as
    :meth:`Sandbox.call` would have killed it; counted from the parent's wait, its deadline
    would have run to 2.5 s and let it finish (a sort no interrupt reaches filled
    ``max_memory`` that way instead of being stopped at its deadline)."""
    box.start()
    ticket = box.submit([(_sleep, (2.0,), 1.0, MIB)])
    time.sleep(1.5)
    with pytest.raises(SandboxTimeout):
        ticket.outcomes()[0]()
    assert box.kills == 1


def test_a_kill_sends_the_calls_behind_it_again(box: Sandbox) -> None:
    """A call that ends the worker (past its deadline) is reported as in a pipeline; the tickets sent after it, which the worker never reached, run again on
    the next worker when their owners ask: never a wrong or lost outcome."""
    box.start()
    hung = box.submit([(_spin_in_c, (60,), 0.5, MIB), (_count, (), 30, MIB)])
    behind = box.submit([(_count, (), 30, MIB), (_add, (1, 2), 30, MIB)])
    counted, added = behind.outcomes()
    assert counted() == 1  # a fresh worker's first call
    assert added()[0] == 3
    timed_out, never = hung.outcomes()
    with pytest.raises(SandboxTimeout, match=r"no result within 0\.5 s"):
        timed_out()
    with pytest.raises(SandboxNotRun):
        never()
    assert box.kills == 1
    big = box.submit([(_blob, (2 * MIB,), 30, 16 * 1024)])  # capped by the worker: no kill
    after = box.submit([(_count, (), 30, MIB)])
    assert after.outcomes()[0]() == 2
    with pytest.raises(SandboxTooBig):
        big.outcomes()[0]()
    assert box.kills == 1


def test_close_with_calls_sent_ahead_does_not_wait_for_them(box: Sandbox) -> None:
    box.start()
    pid = box.pid
    assert pid is not None
    pending = box.submit([(_sleep, (60,), 120, MIB)])
    closer = threading.Thread(target=box.close)
    closer.start()
    closer.join(30)  # liveness bound: far less than the call's 60 s
    assert not closer.is_alive()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert box.pid is None
    again = box.submit([(_count, (), 30, MIB)])  # no worker now: sent when asked for
    assert box.starts == 1
    assert again.outcomes()[0]() == 1 and box.starts == 2
    assert pending.done is None  # never asked for: nothing ran it again


def test_requests_that_could_fill_the_pipe_are_not_sent_ahead(box: Sandbox) -> None:
    """A write that might block (the worker may not read while its own reply waits) is not
    made ahead: the ticket runs as a pipeline when asked for."""
    box.start()
    blob = b"x" * 8192
    ticket = box.submit([(_echo, (blob,), 30, MIB)])
    assert box.round_trips == 0
    assert ticket.outcomes()[0]() == blob * 2
    assert box.round_trips == 1


def test_ctrl_c_while_waiting_kills_the_worker(box: Sandbox) -> None:
    # Python's own handler, whatever an earlier test of this xdist worker installed (once,
    # in a full run, the SIGINT was lost and the 60 s call completed)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupt_the_wait(box)
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupt_the_wait(box: Sandbox) -> None:
    pid = box.call(_add, 0, 0, timeout=30)[2]
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        box.call(_sleep, 60, timeout=120)
    assert time.monotonic() - t0 < 30  # liveness: far less than the call's 60 s
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert box.call(_add, 1, 2, timeout=30)[0] == 3


def _cwd() -> str:
    return os.getcwd()


def test_worker_follows_the_callers_directory(box: Sandbox, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert box.call(_cwd, timeout=30) == str(tmp_path)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert box.call(_cwd, timeout=30) == str(tmp_path / "sub")


def _keep(n: int) -> tuple[int, int]:
    """A setup step: data every call of the worker reads (as a loaded graph)."""
    worker_state()["kept"] = b"k" * n
    return n, threading.active_count()


def _kept_and_allocate(n: int) -> tuple[int, int]:
    return len(worker_state()["kept"]), len(bytearray(n))


def _never_ready() -> None:
    time.sleep(60)


def test_setup_runs_in_every_worker_before_its_cap_and_threads() -> None:
    # 192 MiB kept by the setup, then 160 MiB more in a call: over a 256 MiB budget counted
    # from the worker's start, within it counted from after the setup
    b = Sandbox("test-setup", max_memory=256 * MIB, setup=(_keep, (192 * MIB,)))
    try:
        assert b.call(_kept_and_allocate, 160 * MIB, timeout=60) == (192 * MIB, 160 * MIB)
        assert b.setup_value == (192 * MIB, 1)  # no thread yet: the setup may unshare
        first = b.pid
        with pytest.raises(SandboxTimeout):
            b.call(_spin_in_c, 60, timeout=0.5)
        assert b.call(_kept_and_allocate, 0, timeout=60) == (192 * MIB, 0)  # loaded again
        assert b.pid != first and b.starts == 2
    finally:
        b.close()


def test_a_setup_past_its_start_timeout() -> None:
    b = Sandbox("test-slow-setup", setup=(_never_ready, ()), start_timeout=1.0)
    with pytest.raises(SandboxNotStarted) as info:
        b.start()
    assert info.value.timed_out
    assert b.pid is None  # killed, not left loading


def _reserve_and_touch(reserve: int, touch: int) -> int:
    """Map ``reserve`` bytes of address space (as an engine's buffer pool) and fill ``touch``
    of them: only what is touched is resident."""
    import mmap

    area = mmap.mmap(-1, reserve)
    for offset in range(0, touch, 4096):
        area[offset] = 1
    time.sleep(0.2)  # resident long enough for the parent to look
    return len(area)


def _segfault() -> None:
    import ctypes

    ctypes.string_at(0)


def test_resident_memory_bound_where_the_address_space_cannot_be() -> None:
    """``max_rss``: no ``RLIMIT_AS`` (a 4 GiB map is fine, as ladybug's at open), and a worker
    holding more than the bound beyond its size when ready is killed (issue 58); a crash's
    signal is kept in ``last_exit``."""
    b = Sandbox("test-rss", max_memory=64 * MIB, max_rss=128 * MIB)
    try:
        assert b.call(_reserve_and_touch, 4096 * MIB, 16 * MIB, timeout=30) == 4096 * MIB
        with pytest.raises(SandboxMemoryError, match=r"over max_rss \(134,217,728 bytes\)"):
            b.call(_reserve_and_touch, 4096 * MIB, 1024 * MIB, timeout=60)
        assert b.kills == 1 and b.call(_add, 1, 2, timeout=30)[0] == 3
        with pytest.raises(QueryFailed, match="died during the call"):
            b.call(_segfault, timeout=30)
        assert b.last_exit == -signal.SIGSEGV
    finally:
        b.close()
