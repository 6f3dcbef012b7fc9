"""One `up` per state directory: an exclusive `flock` on `<state-dir>/lock`, holding the
owner's pid. The kernel drops the lock when its process dies however it dies (SIGKILL
included), so a lock file left by a killed process is stale by construction: the next
`up` takes it over, along with the `ready` file the killed one could not remove."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

LOCK_FILE = "lock"


class StateDirInUse(Exception):
    """Another live process holds the state directory."""

    def __init__(self, shown: str, pid: int | None) -> None:
        self.pid = pid
        owner = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(f"a federation is already running with --state-dir {shown} ({owner})")


class StateLock:
    """Held for the life of `up`; `shown` is the directory as the user gave it."""

    def __init__(self, state_dir: Path, shown: str) -> None:
        self.path = state_dir / LOCK_FILE
        self.shown = shown
        self._fd: int | None = None
        self.took_over_from: int | None = None  # the pid of a dead owner whose lock was taken over

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise StateDirInUse(self.shown, pid) from None
        self.took_over_from = _read_pid(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        # empty the file before unlocking: a reader never sees our pid once we are gone
        os.ftruncate(self._fd, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> StateLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None
