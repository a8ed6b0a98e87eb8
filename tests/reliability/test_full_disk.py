"""A full disk: ``run`` says the store cannot be written (not that another scheduler collects),
backs off instead of logging twice a second, and takes the lead once space returns. Tested on
a real small filesystem (a 4 MiB tmpfs; skipped where mounting is not permitted)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from tests.tracker.test_scheduler import FakeCollect, plan, wait_for
from tracker.config.settings import Settings
from tracker.pipeline.opening import open_store
from tracker.service import leader, scheduler
from tracker.service.scheduler import SchedulerService


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "fs"
    where.mkdir()
    mount = shutil.which("mount")
    if mount is None:
        pytest.skip("no mount command: a small filesystem cannot be made here")
    done = subprocess.run([mount, "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here ({done.stderr.strip()[:80]})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(directory: Path) -> Path:
    """Fill the filesystem to the last byte."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_is_named_backed_off_and_recovered(small_fs: Path, monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    url = f"sqlite:///{small_fs / 'tracker.db'}"
    engine = open_store(Settings(database=url))
    fake = FakeCollect()
    monkeypatch.setattr(scheduler, "collect", fake)
    filler = fill(small_fs)
    service = SchedulerService(engine, Settings(database=url), [plan("lambda", 1)])
    attempts: list[float] = []
    real = service.lock.try_acquire

    def counted() -> bool:
        attempts.append(time.monotonic())
        return real()

    monkeypatch.setattr(service.lock, "try_acquire", counted)
    thread = threading.Thread(target=service.run, daemon=True)
    with caplog.at_level(logging.INFO):
        thread.start()
        try:
            time.sleep(4)
            assert not service.is_leader and fake.calls == []
            messages = [r.getMessage() for r in caplog.records]
            full = [m for m in messages if "disk holding the store is full" in m]
            assert len(full) == 1, messages  # said once, not twice a second
            assert not any("another scheduler collects" in m for m in messages), messages
            assert len(attempts) <= 4, attempts  # 1 s, 2 s, 4 s ... apart, not 0.25 s
            filler.unlink()  # space returns
            assert wait_for(lambda: service.is_leader and "lambda" in fake.calls, timeout=20)
            assert any("can be used again" in r.getMessage() for r in caplog.records)
        finally:
            service.stop()
            thread.join(10)
            engine.dispose()
    assert not thread.is_alive()


class _Orig(Exception):
    def __init__(self, text: str, *, sqlstate: str = "", name: str = "") -> None:
        super().__init__(text)
        self.sqlstate, self.sqlite_errorname = sqlstate, name


@pytest.mark.parametrize(("orig", "expected"), [
    (_Orig("database or disk is full", name="SQLITE_FULL"), "full"),
    (_Orig('could not extend file "base/16384/2619": No space left on device', sqlstate="53100"), "full"),
    (_Orig("attempt to write a readonly database", name="SQLITE_READONLY"), "read-only"),
    (_Orig("cannot execute INSERT in a read-only transaction", sqlstate="25006"), "read-only"),
    (_Orig("connection refused"), None),
])
def test_why_a_store_cannot_be_written(orig: Exception, expected: str | None) -> None:
    """Both backends' ways of saying it (SQLite's error name, PostgreSQL's SQLSTATE)."""
    why = leader.unwritable_reason(OperationalError("INSERT", {}, orig))
    assert (why is None) if expected is None else (expected in (why or "")), why
