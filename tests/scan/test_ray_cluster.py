"""``freqlab scan --engine ray --address`` on a real multi-node Ray cluster started here.

A head and two worker nodes (``ray.cluster_utils.Cluster``: each its own raylet, object store and one CPU),
started in a folder of their own, so a path relative to the driver's folder means nothing on them. One cluster
serves the module (starting one takes seconds on this machine); tests that need a node of their own (to kill it,
or to give it another freqlab) add it and remove it. Select these tests with ``-m ray_cluster``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from freqlab.cli import main
from freqlab.histogram import LengthHistogram
from freqlab.scan import scan

from .conftest import SET_NAMES, assert_same_histogram, real_texts, write_slimpajama
from .ray_faults import blocking_task, crashing_task

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray_cluster

NODE = {"num_cpus": 1, "object_store_memory": 80 * 2**20}
FILES = 12  # shards: more than the 6 tasks Ray keeps in flight on 3 CPUs, so they spread over the nodes
WINDOW = ["--L", "512", "--regime", "natural", "-q"]
SOURCE = "meta.redpajama_set_name"
HERE = Path(__file__).parent


# --- the cluster --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from ray.cluster_utils import Cluster

    home = tmp_path_factory.mktemp("ray-nodes")
    previous = os.getcwd()
    os.chdir(home)  # the nodes (and the workers they start) run here, not in the driver's folder
    started = None
    try:
        # a killed node is declared dead after 5 missed 1-second health checks (Ray's default: 5 of 3 s)
        health = {"health_check_period_ms": 1000, "health_check_failure_threshold": 5}
        started = Cluster(
            initialize_head=True, head_node_args={**NODE, "include_dashboard": False, "_system_config": health}
        )
        for _ in range(2):
            started.add_node(wait=False, **NODE)  # both start at once
        started.wait_for_nodes()
        started.home = home
        os.chdir(previous)
        yield started
    finally:
        os.chdir(previous)
        if started is not None:
            shut_down(started)


def shut_down(cluster) -> None:
    """Stop the cluster, then kill by id whatever of its processes outlived the shutdown."""
    if ray.is_initialized():
        ray.shutdown()
    processes = [
        info.process for node in cluster.list_all_nodes() for infos in node.all_processes.values() for info in infos
    ]
    cluster.shutdown()
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def node_ids(cluster) -> set[str]:
    return {node.node_id for node in cluster.list_all_nodes()}


@pytest.fixture
def extra_node(cluster):
    """A fourth node for one test (killed or removed by it; removed here if still there)."""
    added = []

    def add(**env) -> object:
        saved = {key: os.environ.get(key) for key in env}
        os.environ.update(env)  # the raylet, and the workers it starts, inherit this environment
        try:
            node = cluster.add_node(**NODE)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        cluster.wait_for_nodes()
        added.append(node)
        return node

    yield add
    for node in added:
        if node in cluster.worker_nodes:
            cluster.remove_node(node)
    if ray.is_initialized():  # the next test starts once the cluster knows these nodes are gone
        gone = {node.node_id for node in added}
        deadline = time.monotonic() + 30
        while any(n["Alive"] for n in ray.nodes() if n["NodeID"] in gone) and time.monotonic() < deadline:
            time.sleep(0.2)


@pytest.fixture
def joined(cluster):
    """This process joined to the cluster as one Ray job, kept across tests: the engine uses the connection it
    finds, and the job's workers (one per node, seconds each to start here) serve scan after scan."""
    if not ray.is_initialized():
        previous = os.getcwd()
        os.chdir(cluster.home)  # Ray puts the driver's folder first on the workers' sys.path: not this checkout
        try:
            ray.init(address=cluster.address, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
        finally:
            os.chdir(previous)


# --- the data -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def driver_dir(tmp_path_factory) -> Path:
    """The driver's folder: ``data/part-NN.jsonl``, 12 files of real text in SlimPajama's schema."""
    folder = tmp_path_factory.mktemp("driver")
    texts = real_texts(60)
    for k in range(FILES):
        records = [(text, SET_NAMES[(k + j) % 3]) for j, text in enumerate(texts[5 * k : 5 * k + 5])]
        write_slimpajama(folder / "data" / f"part-{k:02d}.jsonl", [*records, ("", SET_NAMES[k % 3])])
    return folder


@pytest.fixture(scope="module")
def on_one_machine(driver_dir):
    """The same files counted by the local engine, in this process."""
    return scan(str(driver_dir / "data"), source_field=SOURCE, L=[512], regimes=["natural"], workers=1, progress=False)


def freqlab_scan(*args: str):
    return CliRunner().invoke(main, ["scan", *args])


def on_cluster(cluster, out: str, *args: str) -> list[str]:
    """Arguments of a scan of the folder ``data`` (relative to the driver's folder) on ``cluster``."""
    return [
        "--dataset",
        "data",
        "--source-field",
        SOURCE,
        "--engine",
        "ray",
        "--address",
        cluster.address,
        "--out",
        out,
        *WINDOW,
        *args,
    ]


def one_line_error(result) -> str:
    """The one error line of a failed scan, never a traceback. Ray's own notices of cluster events (``(raylet) A
    worker died ...``, with raylet log lines) may come around it: this process stays connected between tests, so
    notices of an earlier test's node death can arrive during a later one."""
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and errors[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    return errors[0]


# --- tests --------------------------------------------------------------------------------------------------
def test_a_relative_dataset_path_is_counted_on_every_node_as_on_one_machine(
    cluster, joined, driver_dir, on_one_machine, monkeypatch
):
    monkeypatch.chdir(driver_dir)  # the nodes run elsewhere: the driver resolves --dataset data
    result = freqlab_scan(*on_cluster(cluster, "out", "--json"))
    assert result.exit_code == 0, result.output
    assert ray.is_initialized()  # the engine leaves a connection it did not open
    summary = json.loads(result.stdout)
    assert_same_histogram(
        LengthHistogram.read_parquet(driver_dir / "out" / "lengths.parquet"), on_one_machine.histogram
    )
    assert summary["windows"] == on_one_machine.summary["windows"]
    run = summary["scan"]
    ran = {node["node_id"] for node in run["nodes"]}
    assert len(ran) >= 2 and ran <= node_ids(cluster)  # tasks ran on more than one node, each a cluster node
    assert sum(node["shards"] for node in run["nodes"]) == FILES
    assert all(node["cpus"] == 1 and node["ip"] for node in run["nodes"])
    assert run["workers"] == len(ran)  # the CPUs that ran tasks, not this machine's cores
    assert (run["cluster_cpus"], run["retries"], run["tasks_in_flight"]) == (3, 0, 6)
    assert json.loads((driver_dir / "out" / "summary.json").read_text())["scan"]["nodes"] == run["nodes"]


def test_the_builtin_corpus_on_the_cluster_equals_the_local_engine(cluster, joined, tmp_path):
    local = scan(max_docs=100, L=[512], regimes=["natural"], workers=1, progress=False)
    result = freqlab_scan(
        "--engine", "ray", "--address", cluster.address, "--max-docs", "100", "--out", str(tmp_path / "out"), *WINDOW
    )
    assert result.exit_code == 0, result.output
    assert_same_histogram(LengthHistogram.read_parquet(tmp_path / "out" / "lengths.parquet"), local.histogram)
    shown = re.search(r"\(ray, (\d) CPUs? on (\d) nodes?\)", result.output)  # one CPU a node
    assert shown is not None and shown[1] == shown[2], result.output


def test_without_an_address_a_scan_starts_its_own_instance_beside_a_running_cluster(cluster, tmp_path):
    # Ray's ray.init() with no address joins the cluster a `ray start` left on this machine, and refuses num_cpus
    # there: "could not start or reach a local Ray instance" (a fresh process: this one is joined to the cluster)
    command = [sys.executable, "-m", "freqlab", "scan", "--engine", "ray", "--workers", "2", "--max-docs", "100",
               "--out", str(tmp_path / "out"), *WINDOW]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(ray, 2 CPUs on 1 node)" in done.stdout + done.stderr, done.stdout + done.stderr


def test_a_worker_node_killed_mid_scan_is_survived(
    cluster, joined, extra_node, driver_dir, on_one_machine, tmp_path, monkeypatch
):
    import freqlab.scan.engines.ray as engine

    doomed = extra_node()
    signals = tmp_path / "signals"
    signals.mkdir()
    monkeypatch.setattr(engine, "_ray_count", blocking_task(node_id=doomed.node_id, signal_dir=str(signals)))

    def kill_when_busy() -> None:  # as soon as the doomed node runs a shard, the node goes
        deadline = time.monotonic() + 60
        while not any(signals.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.remove_node(doomed, allow_graceful=False)

    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    monkeypatch.chdir(driver_dir)
    result = freqlab_scan(*on_cluster(cluster, str(tmp_path / "out"), "--json"))
    killer.join()
    assert any(signals.iterdir()), "no shard ran on the doomed node"
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)["scan"]
    assert run["retries"] >= 1 and run["retried"][0].endswith(("NodeDiedError", "WorkerCrashedError"))
    assert doomed.node_id not in {node["node_id"] for node in run["nodes"]}
    assert sum(node["shards"] for node in run["nodes"]) == FILES
    assert_same_histogram(LengthHistogram.read_parquet(tmp_path / "out" / "lengths.parquet"), on_one_machine.histogram)


def test_a_shard_that_keeps_crashing_its_worker_is_one_line_and_the_rest_is_checkpointed(
    cluster, joined, driver_dir, tmp_path, monkeypatch
):
    import freqlab.scan.engines.ray as engine

    monkeypatch.setattr(engine, "_ray_count", crashing_task(shard_ids=["part-05.jsonl"]))
    monkeypatch.setattr(engine, "RAY_TASK_RETRIES", 1)  # each retry starts a worker: keep the test short
    monkeypatch.chdir(driver_dir)
    message = one_line_error(freqlab_scan(*on_cluster(cluster, str(tmp_path / "out"))))
    assert message.startswith("Error: shard part-05.jsonl was lost 2 times ")
    assert "WorkerCrashedError" in message and message.endswith("run again with --resume")
    assert len(list((tmp_path / "out" / "checkpoints").glob("*.parquet"))) >= 1


def test_a_scan_resumes_on_the_cluster_after_its_driver_is_killed(
    cluster, driver_dir, on_one_machine, tmp_path, monkeypatch
):
    blocked = ["part-10.jsonl", "part-11.jsonl"]
    signals = tmp_path / "signals"
    signals.mkdir()
    out = str(tmp_path / "out")
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); from ray_faults import patch_and_scan; "
        f"patch_and_scan({on_cluster(cluster, out)!r}, {blocked!r}, {str(signals)!r})"
    )
    driver = subprocess.Popen(
        [sys.executable, "-c", code], cwd=driver_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    checkpoints = Path(out) / "checkpoints"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and driver.poll() is None:
            done = list(checkpoints.glob("*.parquet")) if checkpoints.is_dir() else []
            if len(done) == FILES - len(blocked) and len(list(signals.iterdir())) == len(blocked):
                break
            time.sleep(0.05)
        assert driver.poll() is None, driver.communicate()[0]
        assert len(list(checkpoints.glob("*.parquet"))) == FILES - len(blocked), "the driver never got there"
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.communicate()
    assert not (Path(out) / "summary.json").exists()

    monkeypatch.chdir(driver_dir)
    result = freqlab_scan(*on_cluster(cluster, out, "--resume", "--json"))
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)["scan"]
    assert run["resumed_shards"] == FILES - len(blocked)
    assert sum(node["shards"] for node in run["nodes"]) == len(blocked)
    assert_same_histogram(LengthHistogram.read_parquet(Path(out) / "lengths.parquet"), on_one_machine.histogram)


def test_a_file_a_node_cannot_see_is_one_line_naming_the_node_and_the_file(cluster, joined, tmp_path, monkeypatch):
    import freqlab.scan.engines.ray as engine

    data = tmp_path / "data"
    for k in range(3):
        write_slimpajama(data / f"part-{k:02d}.jsonl", [("some text", SET_NAMES[0])])
    gone = data / "part-01.jsonl"
    check_nodes = engine.RayEngine._check_nodes

    def vanish_first(self, *args):  # the driver saw the file; the nodes will not
        gone.unlink()
        return check_nodes(self, *args)

    monkeypatch.setattr(engine.RayEngine, "_check_nodes", vanish_first)
    monkeypatch.chdir(tmp_path)
    message = one_line_error(freqlab_scan(*on_cluster(cluster, "out", "--on-error", "skip")))
    shown = re.match(
        r"Error: node ([0-9a-f]{8}) \(([^)]*)\) cannot open (\S+) \(No such file or directory\): "
        r"every Ray node needs the data files at the same path as the driver",
        message,
    )
    assert shown is not None, message
    assert shown[1] in {node[:8] for node in node_ids(cluster)}
    assert shown[3] == str(gone)  # absolute: the path the driver resolved
    assert "truncated or corrupt" not in message


def test_a_node_with_another_freqlab_is_named_before_any_shard_runs(cluster, joined, extra_node, tmp_path, monkeypatch):
    fake = tmp_path / "site" / "freqlab"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('__version__ = "0.0.1"\n')
    other = extra_node(PYTHONPATH=str(fake.parent))  # its workers import this freqlab first
    monkeypatch.chdir(tmp_path)
    write_slimpajama(tmp_path / "data" / "part.jsonl", [("some text", SET_NAMES[0])])
    message = one_line_error(freqlab_scan(*on_cluster(cluster, "out")))
    import freqlab

    expected = (
        rf"Error: node {other.node_id[:8]} \([^)]*\) runs freqlab 0\.0\.1 \(source [0-9a-f]+\), "
        rf"this driver freqlab {re.escape(freqlab.__version__)} \(source [0-9a-f]+\): "
        "install the same freqlab on every node"
    )
    assert re.fullmatch(expected, message), message
    assert not list((tmp_path / "out").glob("checkpoints/*.parquet"))  # stopped before any shard ran
