"""Confine a sandbox worker's file and network access with Linux Landlock.

Why: an engine that reads files by itself (a graph database's ``LOAD FROM '/etc/passwd'``, a
glob, a relative path under a ``file_search_path`` it was told to change) can be refused by a guard
only as far as the guard understands the text; the kernel refuses it whatever the text. A
worker that calls :func:`confine` before it opens its database (and before it has a thread:
Landlock binds the calling thread and the threads it starts later) may then open only the
paths it named, and, where the kernel has Landlock's network rules (ABI 4, Linux 6.7), neither
connect nor bind a TCP socket. What was open before stays usable (the worker's pipes).

Unprivileged and process-wide for good (no way back), so only a worker process calls it.
Linux 5.13 and later with Landlock enabled; elsewhere :func:`confine` returns "" and the
caller's other layers are all there is.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
import sys
from collections.abc import Iterable

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # every Linux architecture
_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_PATH_BENEATH = 1  # LANDLOCK_RULE_PATH_BENEATH
_NO_NEW_PRIVS = 38  # PR_SET_NO_NEW_PRIVS
_O_PATH = getattr(os, "O_PATH", 0o10000000)

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
#: Rights that apply to a file itself (the others only to a directory's entries).
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | (1 << 14) | (1 << 15)
#: Every filesystem right each ABI version knows (1: bits 0-12, 2: REFER, 3: TRUNCATE,
#: 5: IOCTL_DEV).
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1,
              5: (1 << 16) - 1}
_NET_TCP = 0b11  # BIND_TCP | CONNECT_TCP (ABI 4)


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when there is none (not Linux, disabled)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        version = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0),
                               ctypes.c_uint32(_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def confine(readable: Iterable[str] = (), writable: Iterable[str] = ()) -> str:
    """Let this process open only ``readable`` (read) and ``writable`` (read, write, create,
    remove: beneath a directory) from now on, and no TCP socket where the kernel can refuse
    it. Returns what holds ("landlock" or "landlock, no TCP"), "" when Landlock is missing:
    then nothing changed."""
    version = abi()
    if version <= 0:
        return ""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fs = _FS_BY_ABI.get(version, _FS_BY_ABI[5])
    net = _NET_TCP if version >= 4 else 0
    attr = struct.pack("=QQ", fs, net) if net else struct.pack("=Q", fs)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        return ""
    try:
        for path in readable:
            _allow(libc, ruleset, path, READ_FILE | READ_DIR, fs)
        for path in writable:
            _allow(libc, ruleset, path, fs, fs)
        if libc.prctl(_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return "landlock, no TCP" if net else "landlock"


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, rights: int, handled: int) -> None:
    """One path-beneath rule (a file gets only the rights a file can have)."""
    fd = os.open(path, _O_PATH | os.O_CLOEXEC)
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        rule = struct.pack("=Qi", rights & handled, fd)
        if libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_uint32(_PATH_BENEATH),
                        ctypes.c_char_p(rule), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path!r}")
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
