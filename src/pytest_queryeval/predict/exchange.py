"""Predictions shared by the xdist workers of one session on one machine.

Why: xdist hands a worker its items a few at a time, and a worker's pool that knew only those
ran dry between batches: ``-n 2`` got 4.5x from ``concurrency: 16`` where a serial run got 11x.
With an exchange every worker queues the predictions of *all* the session's items, in run order,
and they share three things through a directory the xdist controller creates for the session:

* **claims** (``claims/<key>``): before a request starts, its worker claims the key, a file
  linked into place only if none exists (atomic on every local file system), holding the
  worker's pid. A claimed key is never requested by another worker, so each prediction is
  requested once per session, by whichever worker reached it first. Each worker holds a lock
  on ``alive/<pid>`` while it lives: the kernel drops it when the process ends, so a worker
  that died is known as such at once (its pid may still answer ``kill(pid, 0)`` as a zombie
  until the controller reaps it);
* **answers** (``answers/<key>``): the claiming worker publishes the prediction, or what its
  request raised, as a pickle renamed into place; the worker that runs the case reads it. A
  worker that stops with requests still running (Ctrl-C) publishes that they were abandoned;
  one that died publishes nothing, and a case waiting for it is told which process died;
* **slots** (``slots/<source>.<i>``): ``concurrency: N`` is the session's bound, not each
  worker's: a request runs while its thread holds one of N lock files (``flock``, released
  by the kernel when a process dies), so N workers together make at most N requests at once,
  as the model service sees it.
* **counts** (``counts/<name>``): a number every worker adds to under a lock; the judge's
  ``max_calls`` is a cap of the session through it.

Only for workers that share the controller's file system (``popen`` gateways, the default);
workers elsewhere request each case when the controller sends it (:mod:`..plugin.runahead`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import shutil
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path

from .._util.safefile import private_tempdir, write_atomic
from ..errors import PredictionError
from .base import Prediction

#: Seconds between two looks at an answer another worker is requesting (growing to this
#: from a few milliseconds: a fast model's answers must not wait a whole poll).
POLL_MAX = 0.05
#: Seconds between two checks that the worker requesting an awaited answer is still alive.
ALIVE_EVERY = 0.5


def create_root() -> Path:
    """The controller's directory for one session (removed with :func:`remove_root`)."""
    return Path(private_tempdir("queryeval-xdist-"))


def remove_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


def available() -> bool:
    """Whether this platform has what the slots need (``fcntl.flock``: POSIX)."""
    try:
        import fcntl  # noqa: F401
    except ImportError:  # pragma: no cover - Windows
        return False
    return True


def _name(key: Hashable) -> str:
    return hashlib.sha1(json.dumps(key, default=str).encode()).hexdigest()


class Exchange:
    """One worker's view of the session's shared directory (see the module docstring)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.pid = os.getpid()
        for sub in ("claims", "answers", "slots", "alive", "counts"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        _hold_life_lock(self.root / "alive" / str(self.pid))

    # -- claims ------------------------------------------------------------------------
    def claim(self, key: Hashable) -> bool:
        """Claim ``key`` for this process; False when a process (this one included) has."""
        target = self.root / "claims" / _name(key)
        tmp = target.with_name(f".{target.name}.{self.pid}.{threading.get_ident()}")
        tmp.write_text(str(self.pid))
        try:
            os.link(tmp, target)  # fails when the claim exists: never two owners
            return True
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)

    def owner(self, key: Hashable) -> int | None:
        """The pid that claimed ``key`` (None: unclaimed)."""
        try:
            return int((self.root / "claims" / _name(key)).read_text())
        except FileNotFoundError:
            return None
        except ValueError:  # pragma: no cover - a claim is linked complete; belt and braces
            return -1

    # -- answers -----------------------------------------------------------------------
    def publish(self, key: Hashable, result: Prediction | None,
                error: BaseException | None) -> None:
        """Make the answer of ``key`` readable by every worker (written once, renamed)."""
        data = _dumps(result, error)
        # the session's own folder, read by its workers only: no fsync (safefile.atomic_output)
        write_atomic(self.root / "answers" / _name(key), data, special="replace", sync=False)

    def abandon(self, key: Hashable) -> None:
        """This worker stops with ``key``'s request running: tell who waits for it."""
        with contextlib.suppress(OSError):
            if not (self.root / "answers" / _name(key)).exists():
                self.publish(key, None, PredictionError(
                    "not answered: the session stopped while another xdist worker was "
                    "requesting this prediction"))

    def wait(self, key: Hashable, on_wait: Callable[[], None] | None = None,
             poll: float = 0.5) -> Prediction:
        """The answer another worker publishes for ``key``; re-raises what its request
        raised. ``on_wait`` is called about every ``poll`` seconds while waiting."""
        path = self.root / "answers" / _name(key)
        delay = 0.002
        last_call = last_alive = time.monotonic()
        while True:
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                data = None
            if data is not None:
                return _loads(data)
            now = time.monotonic()
            if now - last_alive >= ALIVE_EVERY:
                last_alive = now
                pid = self.owner(key)
                if pid is not None and pid != self.pid and not self.alive(pid):
                    if path.exists():
                        continue  # published just before it exited
                    raise PredictionError(
                        f"not answered: the xdist worker (pid {pid}) that was requesting this "
                        "prediction stopped before it answered (it crashed or was killed); "
                        "the prediction is not requested a second time")
            if on_wait is not None and now - last_call >= poll:
                last_call = now
                on_wait()
            time.sleep(delay)  # interruptible: Ctrl-C lands here
            delay = min(delay * 2, POLL_MAX)

    def alive(self, pid: int) -> bool:
        """Whether the worker ``pid`` of this session still runs (holds its life lock)."""
        import fcntl

        try:
            fd = os.open(self.root / "alive" / str(pid), os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # (releases the shared lock when it was taken)
        return False

    # -- counts ------------------------------------------------------------------------
    def take_count(self, name: str, n: int, limit: int) -> bool:
        """Add ``n`` to the session's counter ``name`` unless that passes ``limit`` (False
        then, nothing added): the judge's ``max_calls`` as a cap of the run, not of each
        worker. A locked read-add-write, so two workers never both take the last call."""
        import fcntl

        fd = os.open(self.root / "counts" / _name(name), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.read(fd, 64).strip()
            used = int(raw) if raw.isdigit() else 0
            if used + n > limit:
                return False
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, str(used + n).encode())
            return True
        finally:
            os.close(fd)  # releases the lock

    # -- slots -------------------------------------------------------------------------
    @contextlib.contextmanager
    def slot(self, group: str, index: int) -> Iterator[None]:
        """Hold slot ``index`` of ``group``'s session-wide bound while the block runs."""
        import fcntl

        path = self.root / "slots" / f"{_name(group)}.{index}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits while another worker's request holds it
            yield
        finally:
            os.close(fd)  # releases the lock


#: The life locks this process holds, by path: one per session directory, kept open (and so
#: locked) until the process ends.
_LIFE: dict[Path, int] = {}
_LIFE_LOCK = threading.Lock()


def _hold_life_lock(path: Path) -> None:
    import fcntl

    with _LIFE_LOCK:
        if path in _LIFE:
            return
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        _LIFE[path] = fd


def _dumps(result: Prediction | None, error: BaseException | None) -> bytes:
    """The answer as a pickle: the prediction (its value is what the source returned: a str,
    a list or a dict), or the error with its message (its type kept when it round-trips)."""
    if error is None:
        try:
            return pickle.dumps(("ok", result))
        except Exception as exc:
            error = PredictionError(
                f"the prediction cannot be passed between xdist workers ({exc}): a python "
                "source must return a str, a list or a dict")
    try:
        data = pickle.dumps(("error", error))
        pickle.loads(data)  # an exception whose __init__ cannot be replayed: keep its text
        return data
    except Exception:
        return pickle.dumps(("error", PredictionError(f"{type(error).__name__}: {error}")))


def _loads(data: bytes) -> Prediction:
    # the directory is the controller's mkdtemp (mode 0700): only this session writes it
    status, payload = pickle.loads(data)
    if status == "ok":
        assert isinstance(payload, Prediction)
        return payload
    assert isinstance(payload, BaseException)
    raise payload
