"""Ray tasks: the same job on a Ray instance started here, or on the cluster at ``address``.

``pip install 'freqlab[ray]'``. At start, one probe per node (pinned to it) checks that the node runs the
driver's freqlab (version and a digest of its source) and can load the job; a node that differs is a one-line
error naming it. The job (and with it the tokenizer) is put in the object store once; each worker process loads
it and calls ``setup()`` once (tasks run with ``RAYON_NUM_THREADS=1``: one task per CPU already). A task first
checks that its node can open the shard's files (a one-line error naming the node and the file: every node
needs the data at the same path), then returns ``(node id, partial histogram)``.

A task whose node or worker dies (``NodeDiedError``, ``WorkerCrashedError``, a lost result) is resubmitted
by the engine, up to :data:`RAY_TASK_RETRIES` times per shard; Ray's own ``max_retries`` stays 0 so that
every retry is counted and reported (``summary["scan"]["retries"]``). A scan that still cannot finish ends
with one line, and its finished shards stay checkpointed for ``--resume``. :meth:`RayEngine.describe` says
what ran where: the nodes that ran tasks (id, host, CPUs, shards), the CPUs they hold (``workers``), the
cluster's CPUs and the retries. A scan that ends early (an error, Ctrl-C, SIGTERM) cancels no task (Ray's driver
can die of a cancel that crosses a finishing task): a Ray started here is shut down with its workers; in a session
the process joined, the tasks under way finish their shards and their results are dropped.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import sys
import threading
from collections import Counter
from collections.abc import Generator, Iterator
from typing import Any

from freqlab.errors import FreqlabError, terminate
from freqlab.scan.engines.base import Engine, Progress, Task, default_workers, fill

RAY_PROBE_SECONDS = 3.0  # how long check_ray_address waits for a TCP connection
RAY_OBJECT_STORE_BYTES = 80 * 2**20  # a scan moves only small partial histograms through the store
RAY_TASK_RETRIES = 3  # resubmissions of one shard after its node or worker died
RAY_NODE_CHECK_SECONDS = 300.0  # how long the start-up probes may take (workers start, the job loads)
# One task per CPU already: tokenizer thread pools stay at one thread (CountJob.setup does the same, but
# only before a pool starts; the runtime environment holds from the worker's first instruction).
TASK_ENV = {"RAYON_NUM_THREADS": "1", "FASTOKENS_BPE_THREADS": "1"}


def import_ray():
    """The ``ray`` module, or a one-line FreqlabError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise FreqlabError("the Ray engine needs Ray: pip install 'freqlab[ray]'") from None
    return ray


@contextlib.contextmanager
def _keeping_sigterm(ray) -> Iterator[None]:
    """The command's SIGTERM handler kept through ``ray.init``, which puts Ray's over it (a review): during the init,
    ``sys.exit(15)`` (status 15, no word) or the local node's cleanup and ``sys.exit(1)``; after it, the core
    worker's C++ stack dump and death by the signal, where the command ends a scan as one line with status 143, its
    finished shards checkpointed. Ray's setter is left out for the init (what it would install: the same as
    ``signal.signal``), and the handler put back over the C++ one after it. Only the command line's
    (:func:`~freqlab.errors.terminate`): a caller of the Python API keeps Ray's, and so does a thread other than the
    main one, where no handler can be set. Left: the ~2 s in which the driver connects, where the C++ handler is
    already in place (absl's stack dump, status -6); the finished shards are checkpointed by then all the same.
    """
    ours = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    if ours is not terminate:  # the Python API's caller keeps Ray's handling, as before (a review)
        yield
        return
    utils = getattr(getattr(ray, "_private", None), "utils", None)
    setter = getattr(utils, "set_sigterm_handler", None)
    if setter is not None:
        utils.set_sigterm_handler = lambda handler: None  # type: ignore[union-attr]
    try:
        yield
    finally:
        if setter is not None:
            utils.set_sigterm_handler = setter  # type: ignore[union-attr]
        signal.signal(signal.SIGTERM, ours)


def check_ray_address(address: str | None, timeout: float = RAY_PROBE_SECONDS) -> None:
    """Raise a one-line FreqlabError within ``timeout`` s when a ``host:port`` address takes no TCP connection.

    ``ray.init`` retries an unreachable GCS for ~25 s while logging C++ errors on stderr; a plain TCP
    connect fails fast with a clear reason. Other forms (``auto``, ``local``, ``ray://...``) are passed
    through to Ray, which resolves them itself.
    """
    if not address or "://" in address or address in ("auto", "local"):
        return
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise FreqlabError(
            f"Ray address {address!r}: expected HOST:PORT (e.g. 10.0.0.1:6379), 'auto' or ray://HOST:PORT"
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        reason = f"no answer within {timeout:g} s" if isinstance(exc, TimeoutError) else exc.strerror or exc
        raise FreqlabError(
            f"cannot reach the Ray cluster at {address} ({reason}); start one there with "
            "`ray start --head --port PORT`, check the address, or drop --address to run a local Ray"
        ) from None


# --- worker side --------------------------------------------------------------------------------------------
_JOBS: dict[str, Any] = {}  # this worker process's job, by object id: unpickled and set up once


def node_label(node_id: str, host: str, ip: str) -> str:
    """``node 3f2a9c1b (host, 10.0.0.2)``: how messages name a Ray node (its id's first 8 hex digits)."""
    return f"node {node_id[:8]} ({host}, {ip})" if host != ip else f"node {node_id[:8]} ({ip})"


def _this_node(ray) -> str:
    return node_label(ray.get_runtime_context().get_node_id(), socket.gethostname(), ray.util.get_node_ip_address())


def _check_visible(shard, ray) -> None:
    """A one-line FreqlabError naming this node and the file when a local file of ``shard`` cannot be opened
    here: the data is not where the driver saw it (not a truncated or corrupt file).
    """
    for path in shard.local_paths():
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:  # FileNotFoundError, PermissionError, NotADirectoryError, a stale mount...
            raise FreqlabError(
                f"{_this_node(ray)} cannot open {path} ({exc.strerror or type(exc).__name__}): every Ray node "
                "needs the data files at the same path as the driver (e.g. a shared filesystem)"
            ) from None


def _ray_count(job_refs: list, shard, options):
    """One shard on this node: ``(node id, ShardCount)``. ``job_refs`` holds the job's object ref (in a list,
    so Ray does not fetch and unpickle the job for every task).
    """
    import ray

    _check_visible(shard, ray)
    key = job_refs[0].hex()
    job = _JOBS.get(key)
    if job is None:
        job = ray.get(job_refs[0])
        job.setup()
        _JOBS.clear()  # a worker serves one scan (Ray workers are per job)
        _JOBS[key] = job
    return ray.get_runtime_context().get_node_id(), job(shard, options)


def node_probe():
    """The start-up probe, built as a closure so that cloudpickle ships its code by value: it has to run on a
    node whose freqlab differs from the driver's (or is missing) and report it, not fail to unpickle.

    ``probe(job_refs)`` returns the node's id, host, IP, its freqlab build (``version``, ``source``: a digest
    of the package's ``.py`` files) and ``error``: why freqlab does not import there or, when ``job_refs`` is
    given, why the job does not load (None when all is well).
    """

    def probe(job_refs: list | None) -> dict:
        import hashlib
        import socket

        import ray

        def why(exc: Exception) -> str:
            lines = str(exc).strip().splitlines()
            return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__

        context = ray.get_runtime_context()
        report = {
            "node_id": context.get_node_id(),
            "host": socket.gethostname(),
            "ip": ray.util.get_node_ip_address(),
            "version": None,
            "source": None,
            "error": None,
        }
        try:
            import freqlab

            root = os.path.dirname(os.path.abspath(freqlab.__file__))
            digest = hashlib.blake2b(digest_size=6)
            for folder, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
                for name in sorted(n for n in names if n.endswith(".py")):
                    path = os.path.join(folder, name)
                    digest.update(os.path.relpath(path, root).encode() + b"\0")
                    with open(path, "rb") as handle:
                        digest.update(handle.read())
            report["version"] = str(getattr(freqlab, "__version__", "unknown"))
            report["source"] = digest.hexdigest()
        except Exception as exc:  # no freqlab there, or one that does not import
            report["error"] = f"cannot import freqlab ({why(exc)})"
            return report
        if job_refs is not None:
            try:
                ray.get(job_refs[0]).setup()
            except Exception as exc:
                report["error"] = f"cannot load the scan job ({why(exc)})"
        return report

    return probe


# --- driver side --------------------------------------------------------------------------------------------
class RayEngine(Engine):
    """Shards as Ray tasks: on a Ray instance started here (``workers`` CPUs) unless ``address`` points to a
    running cluster (or Ray is already initialised in this process). Progress advances per shard.
    """

    name = "ray"

    def __init__(
        self,
        workers: int | None,
        address: str | None = None,
        object_store_memory: int = RAY_OBJECT_STORE_BYTES,
        retries: int | None = None,
    ) -> None:
        self.local_cpus = int(workers or default_workers())  # CPUs of a Ray instance started here
        self.address = address
        self.object_store_memory = object_store_memory
        self.retries = RAY_TASK_RETRIES if retries is None else retries
        self.cluster_cpus: int | None = None
        self.node_info: dict[str, dict] = {}  # node id -> {"host", "ip", "cpus"}
        self.shards_by_node: Counter[str] = Counter()
        self.retried: list[str] = []  # "shard id: why", one per resubmission
        self.window = 0

    @property
    def workers(self) -> int:  # type: ignore[override]
        """CPUs of the nodes that ran tasks (each task takes one CPU): the scan's parallelism."""
        return sum(self.node_info.get(node, {}).get("cpus", 0) for node in self.shards_by_node)

    @staticmethod
    def check(address: str | None) -> None:
        """Fail at once when Ray is missing or the cluster at ``address`` does not answer."""
        import_ray()
        check_ray_address(address)

    def describe(self) -> dict[str, Any]:
        """What ran where: ``workers`` (CPUs of the nodes that ran tasks), ``cluster_cpus``, ``nodes`` (each
        node that ran tasks: id, host, IP, CPUs, shards), ``retries`` (shards resubmitted after their node or
        worker died) and ``tasks_in_flight`` (Ray queues up to twice the cluster's CPUs).
        """
        nodes = [
            {"node_id": node, **self.node_info.get(node, {"host": None, "ip": None, "cpus": None}), "shards": count}
            for node, count in sorted(self.shards_by_node.items(), key=lambda item: (-item[1], item[0]))
        ]
        return {
            "engine": self.name,
            "workers": self.workers,
            "address": self.address or "local",
            "cluster_cpus": self.cluster_cpus,
            "nodes": nodes,
            "retries": len(self.retried),
            "retried": self.retried[:10],
            "tasks_in_flight": self.window,
        }

    def run(self, tasks: Iterator[Task], job, progress: Progress | None = None) -> Generator[tuple, None, None]:
        """Run ``job`` on the tasks as Ray tasks; yield the results as they finish."""
        tasks = iter(tasks)
        first = next(tasks, None)
        if first is None:  # every shard came from a checkpoint: no cluster needed
            return
        # Ray prints cluster events (a raylet died, a worker crashed) on this process's stdout from a thread
        # of its own; they go to stderr while the scan runs, so stdout stays the report (or --json).
        with contextlib.redirect_stdout(sys.stderr):
            yield from self._run(itertools.chain([first], tasks), job, progress)

    def _run(self, tasks: Iterator[Task], job, progress: Progress | None) -> Iterator[tuple]:
        ray = import_ray()
        owns = self._connect(ray)
        in_flight: dict = {}  # object ref -> task
        attempts: dict = {}  # object ref -> how many times its task ran before (resubmissions only)
        try:
            job_refs = [ray.put(job)]  # shipped once; each worker loads it once
            self._check_nodes(ray, job_refs)
            remote = ray.remote(num_cpus=1, max_retries=0, runtime_env={"env_vars": TASK_ENV})(_ray_count)
            self.window = 2 * max(self.cluster_cpus or 1, 1)

            def submit(task: Task):
                return remote.remote(job_refs, task.shard, task.options)

            fill(in_flight, tasks, self.window, submit)
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.5)
                for ref in ready:
                    task, attempt = in_flight.pop(ref), attempts.pop(ref, 0)
                    try:
                        node, part = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:  # the task itself raised
                        raise _task_error(exc, task) from None
                    except (
                        ray.exceptions.NodeDiedError,
                        ray.exceptions.WorkerCrashedError,
                        ray.exceptions.ObjectLostError,
                        ray.exceptions.OutOfMemoryError,
                    ) as exc:
                        if attempt >= self.retries:
                            raise FreqlabError(
                                f"shard {task.shard.id} was lost {attempt + 1} times (its Ray node or worker died: "
                                f"{_first_line(exc)}); finished shards are checkpointed: run again with --resume"
                            ) from None
                        self.retried.append(f"{task.shard.id}: {type(exc).__name__}")
                        retry = submit(task)
                        in_flight[retry], attempts[retry] = task, attempt + 1
                        continue
                    except ray.exceptions.RayError as exc:  # the cluster itself failed
                        raise FreqlabError(
                            f"the Ray cluster failed while counting shard {task.shard.id} ({_first_line(exc)}); "
                            "finished shards are checkpointed: run again with --resume"
                        ) from None
                    self._ran(ray, node)
                    if progress is not None:
                        progress(part.documents_read, part.tokens, task.shard.size() or 0)
                    yield task.index, part
                fill(in_flight, tasks, self.window, submit)
        finally:
            # what still runs is never cancelled: ray.cancel on a task whose result is on its way back makes Ray's
            # driver fail a check ("Tried to complete task that was not pending") and exit with status 1, which
            # ended a SIGTERM'd scan in CI and would end a notebook's kernel (Ray 2.60: 4 of 4 runs of a stress
            # script with cancel, 1 of 3 with force=True). Our own Ray: its shutdown ends the workers (0 of 12
            # shutdowns with tasks in flight failed). A session this process joined: the tasks finish their
            # shards (at most twice the cluster's CPUs) and their results are dropped.
            if owns:
                ray.shutdown()

    def _connect(self, ray) -> bool:
        """Start or join Ray unless this process already has; True when this engine must shut it down."""
        if ray.is_initialized():
            return False
        common = {"include_dashboard": False, "logging_level": "ERROR", "log_to_driver": False}
        try:
            with _keeping_sigterm(ray):
                self._init(ray, common)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {self.address}" if self.address else "a local Ray instance"
            raise FreqlabError(f"could not start or reach {where}: {_first_line(exc)}") from None
        return True

    def _init(self, ray, common: dict) -> None:
        if self.address:
            ray.init(address=self.address, **common)
        else:
            # "local": a new instance of its own, not a cluster a `ray start` on this machine left running (an
            # address of None joins that one, where num_cpus is refused)
            ray.init(address="local", num_cpus=self.local_cpus, object_store_memory=self.object_store_memory, **common)

    def _check_nodes(self, ray, job_refs: list) -> None:
        """Probe every live node with CPUs (pinned to it): the same freqlab as this driver, and the job loads.

        Raises a one-line FreqlabError naming the first node that differs, cannot load the job or does not
        answer within :data:`RAY_NODE_CHECK_SECONDS`.
        """
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
        none_there = FreqlabError(f"the Ray cluster at {self.address or 'local'} has no live node with CPUs")
        if not nodes:
            raise none_there
        probe = node_probe()
        mine = probe(None)
        remote = ray.remote(num_cpus=0, max_retries=0, runtime_env={"env_vars": TASK_ENV})(probe)
        pinned = {n["NodeID"]: NodeAffinitySchedulingStrategy(n["NodeID"], soft=False) for n in nodes}
        refs = {remote.options(scheduling_strategy=pinned[n["NodeID"]]).remote(job_refs): n for n in nodes}
        ready, waiting = ray.wait(list(refs), num_returns=len(refs), timeout=RAY_NODE_CHECK_SECONDS)
        if waiting:
            late = ", ".join(_node_of(refs[ref]) for ref in waiting)
            raise FreqlabError(f"no answer from {late} within {RAY_NODE_CHECK_SECONDS:g} s (cannot start a worker?)")
        for ref in ready:
            node, where = refs[ref], _node_of(refs[ref])
            try:
                report = ray.get(ref)
            except (ray.exceptions.TaskUnschedulableError, ray.exceptions.NodeDiedError):
                continue  # the node left the cluster since it was listed: not part of this scan
            except ray.exceptions.RayError as exc:
                raise FreqlabError(f"{where} cannot run freqlab's probe ({_first_line(exc)})") from None
            theirs = (report["version"], report["source"])
            if report["error"] and report["version"] is None:
                raise FreqlabError(f"{where} {report['error']}: install freqlab {mine['version']} there")
            if theirs != (mine["version"], mine["source"]):
                raise FreqlabError(
                    f"{where} runs freqlab {theirs[0]} (source {theirs[1]}), this driver freqlab {mine['version']} "
                    f"(source {mine['source']}): install the same freqlab on every node"
                )
            if report["error"]:
                raise FreqlabError(f"{where} {report['error']}")
            self.node_info[node["NodeID"]] = _info(node)
        if not self.node_info:
            raise none_there
        self.cluster_cpus = sum(info["cpus"] for info in self.node_info.values())

    def _ran(self, ray, node: str) -> None:
        """Count a shard finished on ``node`` (a node that joined after the start is looked up once)."""
        if node not in self.node_info:
            for n in ray.nodes():
                if n["NodeID"] == node:
                    self.node_info[node] = _info(n)
        self.shards_by_node[node] += 1


def _info(node: dict) -> dict:
    """What the summary says of a node (from an entry of ``ray.nodes()``)."""
    return {
        "host": node.get("NodeManagerHostname"),
        "ip": node.get("NodeManagerAddress"),
        "cpus": int(node.get("Resources", {}).get("CPU", 0)),
    }


def _node_of(node: dict) -> str:
    return node_label(node["NodeID"], node.get("NodeManagerHostname") or "?", node.get("NodeManagerAddress") or "?")


def _first_line(exc: BaseException) -> str:
    """``Type: first line of the message``, at most 300 characters."""
    message = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _task_error(exc, task: Task) -> Exception:
    """The error a failed task raised: a FreqlabError as is (it is already one line); anything else as one
    line naming the shard and the node it ran on.
    """
    cause = getattr(exc, "cause", None)
    if isinstance(cause, FreqlabError):
        return cause
    where = f"node at {exc.ip}" if getattr(exc, "ip", None) else "a Ray node"
    what = _first_line(cause) if isinstance(cause, BaseException) else _first_line(exc)
    return FreqlabError(f"shard {task.shard.id} failed on {where} ({what}); is freqlab the same on every node?")
