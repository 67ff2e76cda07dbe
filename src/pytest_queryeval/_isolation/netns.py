"""Give a process a network of its own: a new user and network namespace whose only
interface is its own loopback, up.

Why: a server the plugin starts for itself may listen where it cannot be told not to
(FalkorDB's Bolt listener binds every interface and asks no password, whatever redis's
``requirepass`` says). In a network namespace of its own, "every interface" is one loopback
nobody else can reach; the process still reaches files, so a Unix socket in a private folder
is the way in from outside.

Linux with unprivileged user namespaces (``unshare -rn`` works); elsewhere :func:`enter`
raises ``OSError`` with the reason. Only a single-threaded process may call it (the kernel
refuses a new user namespace to a process with threads), so it is called first thing in a
worker, before any library starts a thread.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS = 0x8913, 0x8914
_IFF_UP = 0x1
_IFREQ = "16sH14x"


def enter() -> None:
    """Move this process into a new user and network namespace, its user and group mapped
    to themselves (files it writes keep their owner; it keeps no privilege past ``exec``),
    and bring its loopback up."""
    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"no network namespace of its own: unshare: {os.strerror(errno)}")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as out:
            out.write(text)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(_IFREQ, b"lo", 0)
        flags = struct.unpack(_IFREQ, fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))

