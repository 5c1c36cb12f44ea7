"""Faults injected with real signals into a real ``freqlab scan`` process (issue 14): one line and a documented exit
status every time, checkpoints kept, and no process left behind.

Each test runs ``python -m freqlab scan`` on the built-in corpus (2 workers, a few seconds) in its own session, so
a signal can go to the whole process group as a terminal's Ctrl-C does.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def start(*args: str, preexec_fn=None) -> subprocess.Popen:
    command = [sys.executable, "-m", "freqlab", "scan", "-q", "--workers", "2", *args]
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=preexec_fn,
    )


def parents() -> dict[int, int]:
    """pid -> parent pid of every living (not zombie) process, from /proc."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if fields[0] != "Z":
                found[int(entry.name)] = int(fields[1])
    return found


def descendants(pid: int) -> set[int]:
    """Every living process below ``pid`` (children, their children...)."""
    table = parents()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in table.items() if parent in frontier} - found
        found |= frontier
    return found


def workers(driver: int) -> list[int]:
    """The pool's workers: the forkserver's children (the forkserver is the driver's child)."""
    table = parents()
    servers = {
        pid
        for pid, parent in table.items()
        if parent == driver and b"forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes()
    }
    return sorted(pid for pid, parent in table.items() if parent in servers)


def alive(pids: set[int]) -> set[int]:
    def running(pid: int) -> bool:
        try:
            return (Path("/proc") / str(pid) / "stat").read_text().split(") ")[1][0] != "Z"
        except (OSError, IndexError):
            return False

    return {pid for pid in pids if running(pid)}


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


def checkpoints(out: Path) -> int:
    return len(list((out / "checkpoints").glob("*.parquet"))) if (out / "checkpoints").is_dir() else 0


def finish(process: subprocess.Popen) -> tuple[int, str]:
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr


@pytest.mark.parametrize("delay", [0.15, 0.4, 0.8, 1.5])
def test_ctrl_c_at_any_moment_is_one_line_and_exit_130(tmp_path, delay):
    process = start("--out", str(tmp_path / "out"))
    time.sleep(delay)
    os.killpg(process.pid, signal.SIGINT)  # the whole group, as a terminal does: driver, forkserver, workers
    status, stderr = finish(process)
    # -SIGINT: the signal came while the interpreter itself starts or tears down (no Python handler is installed
    # then); the shell reports that as 130 too, and nothing is printed (checked below)
    assert status in (130, 0, -signal.SIGINT), stderr
    for noise in ("Traceback", "Exception ignored", "KeyboardInterrupt", "UnpicklingError"):
        assert noise not in stderr, stderr
    if status == 130:
        said = stderr.strip().splitlines()[-1]
        assert said.startswith("interrupted")
        if "interrupted:" in said:  # the scan's own line: --resume only where a shard was checkpointed
            saved = checkpoints(tmp_path / "out")
            assert ("--resume" in said) == (saved > 0) and ("nothing is checkpointed" in said) == (saved == 0)


def test_sigterm_keeps_the_checkpoints_says_how_to_resume_and_exits_143(tmp_path):
    out = tmp_path / "out"
    process = start("--out", str(out))
    wait_for(lambda: checkpoints(out) >= 1 or process.poll() is not None)
    below = descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    status, stderr = finish(process)
    if status == 0:
        pytest.skip("the scan finished before the signal arrived")
    assert status == 143 and "Traceback" not in stderr
    assert "interrupted: finished shards are checkpointed" in stderr and "--resume" in stderr
    assert checkpoints(out) >= 1
    wait_for(lambda: not alive(below), timeout=10)


def test_sigterm_on_the_ray_engine_is_the_same_one_line_and_143(tmp_path):
    """A review: ray.init put Ray's SIGTERM handler over the command's, and a SIGTERM mid-scan ended in a C++ stack
    dump (status -6 or 15) where the local pool's scan says how to resume and exits 143."""
    pytest.importorskip("ray")
    out = tmp_path / "out"
    process = start("--engine", "ray", "--batch-size", "64", "--out", str(out))
    wait_for(lambda: checkpoints(out) >= 1 or process.poll() is not None, timeout=120)
    process.send_signal(signal.SIGTERM)
    status, stderr = finish(process)
    if status == 0:
        pytest.skip("the scan finished before the signal arrived")
    assert status == 143 and "SIGTERM received" not in stderr and "Traceback" not in stderr, stderr
    assert "interrupted: finished shards are checkpointed" in stderr.strip().splitlines()[-1]


def test_a_driver_killed_with_sigkill_leaves_no_worker_running(tmp_path):
    out = tmp_path / "out"
    process = start("--out", str(out))
    wait_for(lambda: checkpoints(out) >= 1 or process.poll() is not None)
    below = descendants(process.pid)
    if process.poll() is not None:
        pytest.skip("the scan finished before the signal arrived")
    assert below, "workers and the forkserver run below the driver"
    process.kill()
    process.communicate()
    wait_for(lambda: not alive(below), timeout=10)  # the forkserver, workers and resource tracker all go


def test_a_worker_killed_with_sigkill_is_one_line_with_the_resume_hint(tmp_path):
    out = tmp_path / "out"
    process = start("--out", str(out))
    wait_for(lambda: checkpoints(out) >= 1 or process.poll() is not None)
    running = workers(process.pid)
    if process.poll() is not None or not running:
        pytest.skip("the scan finished before the signal arrived")
    os.kill(running[0], signal.SIGKILL)
    status, stderr = finish(process)
    if status == 0:
        pytest.skip("the killed process was not a busy worker")
    assert status == 1 and "Traceback" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("Error: a worker process died") and "--resume" in last


def test_a_result_half_written_by_a_killed_worker_does_not_hang_the_pool_s_shutdown():
    # What a SIGKILL in the middle of a worker's reply leaves behind, made deterministic: a message header
    # announcing 1,000 bytes and 10 of them in the result pipe. The standard library's manager thread then waits
    # in recv() for bytes no living process will send, and the interpreter joins that thread at exit.
    import struct
    from concurrent.futures import ProcessPoolExecutor

    from freqlab.scan.engines import local

    pool = ProcessPoolExecutor(1, mp_context=local._context())
    assert pool.submit(os.getpid).result(timeout=60) > 0
    manager = pool._executor_manager_thread
    os.write(pool._result_queue._writer.fileno(), struct.pack("!i", 1000) + bytes(10))
    wait_for(lambda: local._reading_a_result(manager), timeout=10)
    local._stop(pool, kill=True)
    manager.join(timeout=10)
    assert not manager.is_alive()


def test_a_full_disk_while_checkpointing_is_one_line(tmp_path):
    def small_files() -> None:  # files of at most 2 kB: writing a checkpoint fails as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    process = start("--out", str(tmp_path / "out"), "--max-docs", "300", preexec_fn=small_files)
    status, stderr = finish(process)
    assert status == 1 and "Traceback" not in stderr, stderr
    assert stderr.strip().startswith("Error: ") and "cannot write (File too large)" in stderr
    assert len(stderr.strip().splitlines()) == 1


RACE = """
import multiprocessing as mp, sys, time
from concurrent.futures import ProcessPoolExecutor
from freqlab.scan.engines import local

pool = ProcessPoolExecutor(1, mp_context=mp.get_context("fork"))
if GUARD:
    local._guard_exit(pool)
pool.submit(time.sleep, 0).result()
wakeup, manager = pool._executor_manager_thread_wakeup, pool._executor_manager_thread
local._stop(pool, kill=True)  # as an interrupted scan stops its pool
manager.join(5)  # the manager thread closed the wake-up pipe
assert wakeup._closed
wakeup._closed = False  # the exit hook's "not closed" check passed just before that close
sys.exit(143)
"""


@pytest.mark.parametrize("guard", [False, True])
def test_the_pools_exit_race_prints_nothing_after_an_interrupt(guard):
    """The flaky SIGTERM test's traceback (Python 3.11's concurrent.futures exit hook writing to the wake-up pipe its
    manager thread closes, unlocked), made certain: the race's window is held open, so the write always fails.
    Unguarded, Python prints it from threading._shutdown; the engine's guard drops it."""
    run = subprocess.run(
        [sys.executable, "-c", RACE.replace("GUARD", str(guard))], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 143
    if guard:
        assert run.stderr == ""
    elif sys.version_info < (3, 12):  # the case as the flaky test saw it
        assert "in _python_exit" in run.stderr and "Traceback" in run.stderr
