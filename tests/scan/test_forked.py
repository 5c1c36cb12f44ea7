"""A scan in a process forked from one that had already scanned: what fork does not copy (polars' threads, the
parent's forkserver, a daemonic Pool worker's right to start processes) is a clear error or is worked around, never
a hang."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import subprocess
import sys

import polars as pl
import pytest

from freqlab.errors import FreqlabError
from freqlab.scan import forked, scan

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="fork and /proc/self/task: Linux"),
    # these tests fork a multi-threaded process on purpose (Python 3.12+ warns that it may deadlock)
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"),
]
FORK = multiprocessing.get_context("fork")


def scan_here(folder: str, **options) -> tuple[int, int, int | str]:
    """In the forked process: (tokens, documents, workers) of a scan, or the FreqlabError's message."""
    try:
        result = scan(folder, progress=False, **options)
    except FreqlabError as exc:
        return -1, -1, str(exc)
    return result.histogram.tokens, result.histogram.documents, result.summary["scan"]["workers"]


@pytest.fixture
def parent_scanned(slimpajama_dir, tmp_path):
    """The parent's scan on a pool of 2 (its forkserver started), its outputs written with polars."""
    result = scan(str(slimpajama_dir), progress=False, workers=2, out=tmp_path / "parent")
    pl.DataFrame({"a": [1, 2]}).write_parquet(tmp_path / "started-polars-threads.parquet")
    assert forked._polars_thread_names() and not forked.polars_pool_lost()
    return result.histogram


def in_forked_executor(*args, **options):
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=FORK) as pool:
        return pool.submit(scan_here, *args, **options).result(timeout=120)


def test_writing_outputs_after_polars_ran_in_the_parent_is_refused_not_a_hang(parent_scanned, slimpajama_dir, tmp_path):
    tokens, documents, message = in_forked_executor(str(slimpajama_dir), workers=1, out=str(tmp_path / "child"))
    assert (tokens, documents) == (-1, -1)
    assert "forked from a process that had used polars" in message
    assert "multiprocessing.get_context('spawn')" in message
    assert not (tmp_path / "child").exists()


def test_without_outputs_a_forked_process_counts_on_a_pool_of_its_own(parent_scanned, slimpajama_dir):
    # the parent's forkserver is forgotten (waiting for it failed: ChildProcessError); the child starts its own
    assert in_forked_executor(str(slimpajama_dir), workers=2) == (parent_scanned.tokens, parent_scanned.documents, 2)


def test_a_daemonic_pool_worker_counts_on_its_own_threads(parent_scanned, slimpajama_dir):
    with FORK.Pool(1) as pool:
        default = pool.apply_async(scan_here, (str(slimpajama_dir),)).get(timeout=120)
        two = pool.apply_async(scan_here, (str(slimpajama_dir),), {"workers": 2}).get(timeout=120)
    assert default == (parent_scanned.tokens, parent_scanned.documents, 1)
    assert "daemonic multiprocessing process" in two[2] and "workers=1" in two[2]


def fork_again(folder: str, out: str):
    """In a forked process: the result of a scan in a process forked from this one."""
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=FORK) as pool:
        return pool.submit(scan_here, folder, workers=1, out=out).result(timeout=120)


def test_a_process_forked_from_such_a_child_is_refused_too(parent_scanned, slimpajama_dir, tmp_path):
    # the grandchild has the parent's polars pool without its threads as well: writing would hang there too
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=FORK) as pool:
        _, _, message = pool.submit(fork_again, str(slimpajama_dir), str(tmp_path / "grandchild")).result(timeout=240)
    assert "polars" in message and not (tmp_path / "grandchild").exists()


def test_a_forked_child_keeps_none_of_its_parents_answers(parent_scanned):
    # answers are kept by process id; a child's id may be a dead ancestor's (ids wrap), whose answer is not its own
    assert forked.polars_pool_lost() is False and forked._POOL_LOST
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.write(write, str(len(forked._POOL_LOST)).encode())
        os._exit(0)
    os.close(write)
    assert os.read(read, 16) == b"0"
    os.waitpid(child, 0)


def fork_then_scan(folder: str, out: str):
    """In a forked process: fork once (any fork: a pool of its own), then scan here."""
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=FORK) as pool:
        pool.submit(abs, -1).result(timeout=60)
    return scan_here(folder, workers=1, out=out)


def test_a_forked_process_that_forked_before_it_scans_is_refused_too(parent_scanned, slimpajama_dir, tmp_path):
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=FORK) as pool:
        _, _, message = pool.submit(fork_then_scan, str(slimpajama_dir), str(tmp_path / "child")).result(timeout=240)
    assert "polars" in message and not (tmp_path / "child").exists()


@pytest.mark.parametrize("used", [True, False])
def test_polars_used_before_freqlab_was_imported_is_seen_and_only_imported_is_no_refusal(
    slimpajama_dir, tmp_path, used
):
    # a fresh interpreter: polars imported (and used, or not) first, freqlab.scan imported only in the child
    use = f"pl.DataFrame({{'a': [1]}}).write_parquet({str(tmp_path / 'x.parquet')!r})" if used else ""
    script = f"""
import os, polars as pl
{use}
pid = os.fork()
if pid == 0:
    from freqlab.errors import FreqlabError
    from freqlab.scan import scan
    try:
        scan({str(slimpajama_dir)!r}, progress=False, workers=1, out={str(tmp_path / "child")!r})
    except FreqlabError as exc:
        print("refused:", exc, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    if used:
        assert "refused: cannot write" in done.stdout and "spawn" in done.stdout, done.stderr
    else:
        assert not done.stdout and (tmp_path / "child" / "lengths.parquet").is_file(), done.stderr


def test_a_forkserver_started_before_freqlab_was_imported_is_not_the_childs(slimpajama_dir):
    # the parent starts multiprocessing's forkserver itself (no freqlab yet); its forked child scans on a pool
    script = f"""
import concurrent.futures, multiprocessing, os
with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as pool:
    pool.submit(abs, -1).result()
pid = os.fork()
if pid == 0:
    from freqlab.scan import scan
    result = scan({str(slimpajama_dir)!r}, progress=False, workers=2)
    print(result.histogram.tokens, result.summary["scan"]["workers"], flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    expected = scan(str(slimpajama_dir), progress=False, workers=1).histogram.tokens
    assert done.stdout.split() == [str(expected), "2"], done.stderr
