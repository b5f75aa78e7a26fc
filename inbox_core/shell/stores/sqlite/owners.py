"""Ownership of SQLite agent logs (R29): one OS lock per agent that dies with its process.

Agent ``a`` of database ``db`` is owned by whoever holds a write lock on one
byte of the sidecar file ``db + "-owners"`` (``realpath``), at an offset hashed
from ``a``. On Linux the lock is an open file description lock
(``F_OFD_SETLK``): it belongs to the descriptor this module keeps open, so
nothing else that opens and closes the file (a backup copying the data
directory, in this process or another) can drop it; elsewhere it is a POSIX
record lock, which any close of the file in this process drops. Either way
the kernel drops it when the process dies, however it dies: after a crash the
next process acquires at once, with no lease to wait out.

What must not touch the lock file: reading or copying it is harmless, but
deleting, renaming or replacing it while a process may own an agent would let
a second owner lock a new file; an owner notices at its next append
(``OwnerFile.intact``) and is fenced. Nothing in the process may close the
descriptor this module holds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import struct
import threading
from typing import Final

from inbox_core.errors import LogOwned
from inbox_core.shell.stores.errors import LogUnavailable

__all__ = ["OwnerFile", "drop_lock", "held_elsewhere", "take_lock"]

_OFD_SETLK: Final[int | None] = getattr(fcntl, "F_OFD_SETLK", None)
_OFD_GETLK: Final[int | None] = getattr(fcntl, "F_OFD_GETLK", None)
_FLOCK: Final = struct.Struct("hhqqi")  # struct flock: type, whence, start, len, pid
_FLOCK_SIZE: Final = 32  # the kernel's struct flock on 64-bit Linux; padding is harmless


def _set_lock(fd: int, offset: int, lock: bool) -> None:
    """Lock (or unlock) one byte at ``offset``, never waiting; a conflict raises OSError."""
    if _OFD_SETLK is not None:
        kind = fcntl.F_WRLCK if lock else fcntl.F_UNLCK
        request = _FLOCK.pack(kind, os.SEEK_SET, offset, 1, 0)
        fcntl.fcntl(fd, _OFD_SETLK, request.ljust(_FLOCK_SIZE, b"\0"))
    else:  # pragma: no cover - not Linux
        operation = fcntl.LOCK_EX | fcntl.LOCK_NB if lock else fcntl.LOCK_UN
        fcntl.lockf(fd, operation, 1, offset, os.SEEK_SET)


def _held(fd: int, offset: int) -> bool:
    """Whether another open file description (another process) holds the byte's lock."""
    if _OFD_GETLK is not None:
        request = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0).ljust(_FLOCK_SIZE, b"\0")
        answer = fcntl.fcntl(fd, _OFD_GETLK, request)
        return bool(_FLOCK.unpack(answer[: _FLOCK.size])[0] != fcntl.F_UNLCK)
    request = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)  # pragma: no cover
    answer = fcntl.fcntl(fd, fcntl.F_GETLK, request)  # pragma: no cover - not Linux
    return bool(_FLOCK.unpack(answer)[0] != fcntl.F_UNLCK)  # pragma: no cover


class OwnerFile:
    """This process's descriptor on one database's lock file, and the agents it holds there.

    The offset of agent ``a`` is 62 bits of SHA-256 of ``a`` (a collision,
    which would only make an acquire refuse, is never expected). Within the
    process, ``owners`` names the one ``SqliteLog`` object holding each agent
    (all of this process's locks are on the one descriptor, so they do not
    exclude each other). The descriptor stays open for the life of the
    process; a forked child closes its inherited copy at once
    (``_forget_in_child``): it owns nothing, and the locks still die with
    the parent.
    """

    __slots__ = ("fd", "identity", "owners", "path")

    def __init__(self, path: str, *, create: bool = True) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0), 0o644)
        stat = os.fstat(self.fd)
        self.identity = (stat.st_dev, stat.st_ino)
        self.owners: dict[str, object] = {}

    def intact(self) -> bool:
        """Whether the path still names this descriptor's file: a lock file that was deleted
        or replaced no longer excludes anyone (a new process locks a new file)."""
        try:
            stat = os.stat(self.path)
        except OSError:
            return False
        return (stat.st_dev, stat.st_ino) == self.identity


_OWNER_FILES: dict[str, OwnerFile] = {}
_OWNER_LOCK: Final = threading.RLock()  # reentrant: a finalizer may run inside a held section


def _forget_in_child() -> None:  # pragma: no cover - runs in a forked child
    """A forked child owns nothing: drop the registry and close the inherited descriptors
    (an inherited copy would keep the parent's locks alive after the parent died)."""
    for owner_file in _OWNER_FILES.values():
        owner_file.owners.clear()
        with contextlib.suppress(OSError):
            os.close(owner_file.fd)
    _OWNER_FILES.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _lock_offset(agent_id: str) -> int:
    return int.from_bytes(hashlib.sha256(agent_id.encode("utf-8")).digest()[:8], "big") >> 2


def take_lock(db_path: str, agent_id: str, token: object) -> OwnerFile:
    lock_path = os.path.realpath(db_path) + "-owners"
    with _OWNER_LOCK:
        owner_file = _OWNER_FILES.get(lock_path)
        if owner_file is None or not owner_file.intact():  # never lock a deleted file
            try:
                owner_file = OwnerFile(lock_path)
            except OSError as error:
                raise LogUnavailable(
                    f"SqliteLog {db_path!r}: cannot open the lock file {lock_path!r}: "
                    f"{error.strerror}"
                ) from error
            _OWNER_FILES[lock_path] = owner_file
        if agent_id in owner_file.owners:
            raise LogOwned(
                f"agent {agent_id!r} of {db_path!r} is owned by another SqliteLog in this "
                "process; nothing was written"
            )
        try:
            _set_lock(owner_file.fd, _lock_offset(agent_id), lock=True)
        except OSError as error:
            if error.errno in (errno.EACCES, errno.EAGAIN):
                raise LogOwned(
                    f"agent {agent_id!r} of {db_path!r} is owned by another live process "
                    f"(lock on {lock_path!r}); nothing was written"
                ) from None
            raise LogUnavailable(
                f"SqliteLog {db_path!r}: cannot lock {lock_path!r}: {error.strerror}"
            ) from error
        owner_file.owners[agent_id] = token
        return owner_file


def held_elsewhere(db_path: str, agent_ids: list[str]) -> set[str]:
    """Of ``agent_ids``, those owned now by another process or by another object of this one
    (a lock test: nothing is taken, nothing created: with no lock file nobody owns any).
    A worker's placement asks this first, so it tries only agents nobody holds (R37)."""
    lock_path = os.path.realpath(db_path) + "-owners"
    with _OWNER_LOCK:
        owner_file = _OWNER_FILES.get(lock_path)
        if owner_file is None and not os.path.exists(lock_path):
            return set()  # no owner ever locked in this file's lock file (R36 v4: create none)
        if owner_file is None or not owner_file.intact():
            try:
                owner_file = OwnerFile(lock_path, create=False)
            except PermissionError:  # a user who may only read: test through a read-only fd
                return _held_read_only(lock_path, agent_ids)
            except OSError:
                return set()  # none there (acquire says what else is wrong)
            _OWNER_FILES[lock_path] = owner_file
        fd, mine = owner_file.fd, owner_file.owners
        return {agent for agent in agent_ids if agent in mine or _held(fd, _lock_offset(agent))}


def _held_read_only(lock_path: str, agent_ids: list[str]) -> set[str]:
    """``held_elsewhere`` through a descriptor of its own, opened read-only (the lock test
    needs no write access) and closed again: this process holds no lock on that file, as
    it has no writable descriptor of it, so closing one drops nothing."""
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return set()
    try:
        return {agent for agent in agent_ids if _held(fd, _lock_offset(agent))}
    finally:
        os.close(fd)


def drop_lock(owner_file: OwnerFile, agent_id: str, token: object) -> None:
    """Release the lock if ``token`` still holds it (a finalizer: never raises)."""
    with _OWNER_LOCK:
        if owner_file.owners.get(agent_id) is not token:
            return
        del owner_file.owners[agent_id]
        with contextlib.suppress(OSError):  # unlocking a held lock does not fail
            _set_lock(owner_file.fd, _lock_offset(agent_id), lock=False)
