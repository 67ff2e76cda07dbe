"""Entries of a cache directory that others may reach, trusted only when this user wrote them.

Why: the shared gold cache (``--queryeval-gold-cache``) and the prediction cache
(``--queryeval-prediction-cache``) keep what decides whether a prediction passes in files of a
directory that a CI cache, a cluster file system or another user may also write. An edited
gold result or stored answer makes a wrong model pass. Both caches read and write their entries
here, so they give the same guarantees (issues 39 and 50):

* an entry is read only when it is a regular file (no link followed, neither the entry nor the
  folder that holds it), owned by the user running the tests and not writable by group or
  others; the checks are made on the descriptors opened (``fstat``), not on the names, so
  nothing can be swapped in between;
* its content is bound by :func:`content_digest`, which the caller stores and compares (an edit
  or a damaged copy does not match; another user can compute the digest too, which is why the
  owner and mode checks are what hold against them);
* :func:`directory_problem` says why a directory is one others may plant entries in, for the
  caller's one warning naming it;
* :func:`write_private` writes an entry atomically, the file and any folder made on the way not
  writable by group or others whatever the umask, and never through a linked folder.

The callers word their own warnings (this utility imports nothing of the package but
:mod:`.safefile`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from pathlib import Path

#: Mode bits that let someone other than the owner change a file or a directory's entries.
OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def content_digest(*parts: object) -> str:
    """SHA-256 of ``parts`` as canonical JSON (sorted keys, ASCII): what a stored entry must
    still hold when it is read."""
    text = json.dumps(list(parts), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def others_may_write(st: os.stat_result) -> str | None:
    """Why someone else could change a file or a directory's entries (None: nobody can)."""
    if st.st_uid != os.geteuid():
        return f"owned by another user (uid {st.st_uid})"
    if st.st_mode & OTHERS_WRITE:
        who = "group and others" if st.st_mode & OTHERS_WRITE == OTHERS_WRITE else \
            "group" if st.st_mode & stat.S_IWGRP else "others"
        return f"writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def directory_problem(directory: Path, *, link_allowed: bool = False) -> str | None:
    """Why ``directory`` is one whose entries others may plant (a symbolic link, unless
    ``link_allowed``: the root a user named; another user's; writable by group or others), or
    None (also when it does not exist yet)."""
    try:
        if not link_allowed and stat.S_ISLNK(os.lstat(directory).st_mode):
            return "a symbolic link (not followed)"
        st = os.stat(directory)
    except OSError:
        return None
    return others_may_write(st)


def read_own(path: Path, max_bytes: int) -> tuple[str, str | None]:
    """The entry's text, or why it is not to be trusted (its folder or itself a link, not a
    regular file, another user's, writable by others, over ``max_bytes``). OSError when there
    is none (FileNotFoundError) or it cannot be read; UnicodeDecodeError when it is not UTF-8.
    The folder is opened without following a link and the entry opened relative to it, so a
    folder replaced by a link to a folder of forged entries is not read."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | nofollow)
    except OSError as exc:
        if os.path.islink(path.parent):
            return "", f"its folder {path.parent.name!r} is a symbolic link (not followed)"
        raise exc
    try:
        flags = os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(path.name, flags, dir_fd=dir_fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(os.lstat(path.name, dir_fd=dir_fd).st_mode):
                    return "", "it is a symbolic link (not followed)"
            raise exc
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "", "it is not a regular file"
        problem = others_may_write(st)
        if problem:
            return "", f"it is {problem}"
        if st.st_size > max_bytes:
            return "", f"{st.st_size:,} bytes, over the {max_bytes >> 20} MiB limit"
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(max_bytes + 1).decode("utf-8"), None
    finally:
        os.close(fd)


def write_private(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` through a temporary file renamed into place, the file and
    any directory made on the way not writable by group or others whatever the umask (this
    user's entries must pass :func:`read_own`). A folder of ``target`` that is a symbolic link
    is not written through (OSError): it could lead into a folder of someone else's."""
    from .safefile import atomic_output

    for directory in reversed([target.parent, *target.parent.parents]):
        if not directory.exists():
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, 0o755)
    if os.path.islink(target.parent):
        raise OSError(f"{target.parent.name!r} is a symbolic link: not written through")
    # an entry of a folder this user owns: a special file there is planted, and replaced
    with atomic_output(target, special="replace") as fh:
        os.fchmod(fh.fileno(), stat.S_IMODE(os.fstat(fh.fileno()).st_mode) & ~OTHERS_WRITE)
        fh.write(data)
