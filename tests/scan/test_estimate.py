"""The cost model (``freqlab scan --estimate``): core-hours, nodes and wall time from the throughput table, and
the error bar a sampled scan would give, predicted from a smaller sample by the 1/√n law."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from freqlab.cli import main
from freqlab.errors import FreqlabError
from freqlab.histogram import LengthHistogram
from freqlab.scan.estimate import (
    Family,
    ThroughputTable,
    estimate_cost,
    format_estimate,
    load_throughput,
    sampled_error,
)
from freqlab.scan.uncertainty import share_intervals

# 2M tokens per core-second at 4 bytes per token; reading alone 100 MB per core-second; 90% parallel efficiency
TABLE = ThroughputTable(
    measured="2026-01-01",
    machine="test",
    source="by hand",
    read_bytes_per_core_second=100e6,
    parallel_efficiency=0.9,
    families={"tiktoken": Family(2e6, 4.0, "tekken")},
)


def test_a_full_scan_costs_tokens_over_the_per_core_throughput():
    cost = estimate_cost(TABLE, "tiktoken", tokens=720_000_000_000, node_cores=10)
    assert cost.core_hours == 100.0  # 7.2e11 / 2e6 core-seconds
    assert cost.bytes == 2_880_000_000_000
    assert cost.wall_hours_one_node == pytest.approx(100 / 9)  # 10 cores at 90%
    assert (cost.nodes, cost.wall_hours) == (12, pytest.approx(100 / 108))  # ceil(100 / 9): within the hour
    assert estimate_cost(TABLE, "tiktoken", bytes=2_880_000_000_000, node_cores=10) == cost


def test_a_target_below_a_worker_s_start_up_is_out_of_reach_not_a_huge_cluster():
    # "563 nodes finish within 1e-09 h (3 s)" contradicted itself: the wall time tends to the start-up
    startup = TABLE.worker_startup_core_seconds
    with pytest.raises(FreqlabError, match=r"a target of 1e-09 h \(3\.6e-06 s\) is out of reach: every worker"):
        estimate_cost(TABLE, "tiktoken", tokens=720_000_000_000, node_cores=10, target_hours=1e-9)
    just = (startup + 2) / 3600
    cost = estimate_cost(TABLE, "tiktoken", tokens=720_000_000_000, node_cores=10, target_hours=just)
    assert cost.nodes == math.ceil(7.2e11 / 2e6 / (10 * 0.9 * 2))  # 2 s of counting per node after its start-up


def test_a_sampled_scan_reads_every_byte_and_tokenizes_its_share():
    tokens, rate = 720_000_000_000, 0.001
    cost = estimate_cost(TABLE, "tiktoken", tokens=tokens, sample_rate=rate, node_cores=10, target_hours=0.5)
    reading = 4 * tokens / 100e6  # every byte read and parsed
    tokenizing = rate * tokens * (1 / 2e6 - 4 / 100e6)  # what tokenizing adds, for the sampled share
    assert cost.core_hours == pytest.approx((reading + tokenizing) / 3600)
    assert cost.nodes == math.ceil(cost.core_hours / (9 * 0.5))
    near_full = estimate_cost(TABLE, "tiktoken", tokens=tokens, sample_rate=1 - 1e-12, node_cores=10)
    assert near_full.core_hours == pytest.approx(100.0)  # the model is continuous at rate 1


def test_a_corpus_estimate_counts_at_the_steady_state_rate_where_measured():
    steady = replace(TABLE, families={"fastokens": Family(30e6, 4.0, "", 1.0, steady_tokens_per_core_second=36e6)})
    cost = estimate_cost(steady, "fastokens", tokens=36 * 3600 * 10**6, node_cores=10)
    assert cost.core_hours == 1.0 and cost.throughput["first_pass_tokens_per_core_second"] == 30e6


def test_bad_requests_are_one_line_errors():
    with pytest.raises(FreqlabError, match="no throughput measured for tokenizer family 'fastokens'"):
        estimate_cost(TABLE, "fastokens", tokens=10**9)
    with pytest.raises(FreqlabError, match="in tokens or in bytes"):
        estimate_cost(TABLE, "tiktoken", tokens=10**9, bytes=10**9)


def test_the_shipped_table_says_when_and_where_it_was_measured():
    table = load_throughput()
    assert table.measured and table.machine and "bench_cost.py" in table.source
    assert set(table.families) >= {"tiktoken", "hf-tokenizers"}
    for family in table.families.values():
        assert family.tokens_per_core_second > 0 and 1 < family.bytes_per_token < 10
    # the fast path is the fast one
    assert table.families["tiktoken"].tokens_per_core_second > table.families["hf-tokenizers"].tokens_per_core_second
    assert 0 < table.parallel_efficiency <= 1 and table.read_bytes_per_core_second > 0
    # first passes (a fresh counter on text never seen): fastokens' piece cache makes a repeated text faster
    fast = table.families["fastokens"]
    assert "first passes" in table.source
    assert fast.tokens_per_core_second < fast.repeat_tokens_per_core_second
    assert set(table.file_core_seconds) == {"plain", "compressed"} and table.in_process_speedup >= 1


def test_a_table_written_before_the_per_file_terms_still_loads(tmp_path):
    old = {
        "measured": "2026-11-23",
        "machine": "2 cores",
        "source": "scripts/bench_cost.py",
        "read_bytes_per_core_second": 231e6,
        "parallel_efficiency": 1.0,
        "worker_startup_core_seconds": 2.04,
        "families": {"tiktoken": {"tokens_per_core_second": 2.57e6, "bytes_per_token": 4.9, "example": "tekken"}},
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    table = load_throughput(tmp_path / "old.json")
    assert (table.file_core_seconds, table.in_process_speedup, table.scan_startup_core_seconds) == ({}, 1.0, 0.0)
    assert table.families["tiktoken"].repeat_tokens_per_core_second is None


def test_the_predicted_error_bar_matches_a_sample_that_size():
    rng = np.random.default_rng(11)
    lengths, counts = np.unique(np.maximum(rng.lognormal(5.7, 1.1, 200_000).astype(np.int64), 1), return_counts=True)
    small = rng.binomial(counts, 0.01)  # ~2,000 documents
    large = rng.binomial(counts, 0.16)  # ~32,000 documents: a quarter of the error bar
    predicted = sampled_error(lengths, small, 512, "natural", int(large.sum()), seed=1)
    measured = share_intervals(lengths, large, 512, "natural", seed=1)
    for share in ("share_at_most_half", "share_at_least_three_quarters"):
        half_width = (measured[share][1] - measured[share][0]) / 2
        assert 0.8 < predicted[share] / half_width < 1.25, share
    assert sampled_error(lengths, small, 512, "concat", 10**6) is None


def test_an_error_bar_from_a_sample_carried_by_one_document_carries_the_caveat():
    lengths, counts = np.array([100, 5000]), np.array([400, 1])  # the 5,000-token document: 70% of the positions
    error = sampled_error(lengths, counts, 2048, "natural", 10**6)
    assert error["caveat"] == share_intervals(lengths, counts, 2048, "natural")["caveat"]
    row = {"L": 2048, "regime": "natural", "documents": 10**6, "from_documents": 401, "error": error}
    assert format_estimate(estimate_cost(TABLE, "tiktoken", tokens=10**9), [row]).endswith("; " + error["caveat"])
    assert "caveat" not in sampled_error(np.array([100, 300]), np.array([400, 100]), 2048, "natural", 10**6)


def estimate(*args):
    return CliRunner().invoke(main, ["scan", "--estimate", *args])


def test_the_cli_estimate_uses_the_shipped_table(tmp_path):
    result = estimate("--corpus-tokens", "627B", "--node-cores", "64", "--json")
    assert result.exit_code == 0, result.output
    cost = json.loads(result.stdout)["cost"]
    table = load_throughput()
    family = table.families["fastokens"]  # the default tokenizer, Tekken, on its fastest backend
    assert cost["family"] == "fastokens" and cost["tokens"] == 627 * 10**9
    startup = cost["nodes"] * 64 * table.worker_startup_core_seconds  # each worker loads its tokenizer once
    # hours of unseen text on each worker's counter: the steady-state rate
    assert cost["core_hours"] == pytest.approx((627e9 / family.steady_tokens_per_core_second + startup) / 3600)
    assert cost["wall_hours"] <= 1.0 and cost["throughput"]["measured"] == load_throughput().measured
    text = estimate("--corpus-tokens", "627B", "--node-cores", "64").output
    assert f"full scan: {cost['core_hours']:,.1f} core-hours; one node of 64 cores" in text


def test_the_cli_estimate_of_a_sampled_scan_gives_its_error_bar(tmp_path):
    sample = LengthHistogram.from_lengths(np.random.default_rng(3).integers(1, 5000, 3000))
    sample.to_parquet(tmp_path / "lengths.parquet")
    result = estimate(
        "--corpus-bytes",
        "3T",
        "--sample-rate",
        "0.001",
        "--lengths",
        str(tmp_path / "lengths.parquet"),
        "--regime",
        "natural",
        "--regime",
        "concat",
        "--json",
    )
    assert result.exit_code == 0, result.output
    natural, concat = json.loads(result.stdout)["error_bars"]
    tokens = json.loads(result.stdout)["cost"]["tokens"]
    assert natural["documents"] == round(0.001 * tokens * 3000 / sample.tokens)
    assert 0 < natural["error"]["share_at_most_half"] < 0.01 and concat["error"] is None


def test_the_cli_estimate_needs_a_corpus_size():
    result = estimate()
    assert result.exit_code == 2 and "--estimate needs the corpus size" in result.output


def test_the_cli_estimate_refuses_options_it_would_take_without_a_word(tmp_path):
    """A review: `--estimate --corpus-tokens 627B --max-docs 10` answered the whole corpus's 4.0 core-hours, and
    --dataset, --resume, --on-error skip and --lengths without --sample-rate changed nothing, unsaid."""
    for extra in (["--max-docs", "10"], ["--max-tokens", "1M"], ["--dataset", str(tmp_path)], ["--resume"]):
        result = estimate("--corpus-tokens", "627B", *extra)
        assert result.exit_code == 2 and f"{extra[0]}: --estimate sizes a whole scan" in result.output, result.output
    # an adversary: these were taken unsaid too (a budget, a threshold, fields of tokenized data)
    for extra in (["--tokens", "5T"], ["--tau", "1B"], ["--eos-id", "2"], ["--tokens-field", "ids"]):
        result = estimate("--corpus-tokens", "1B", *extra)
        assert result.exit_code == 2 and f"{extra[0]}: --estimate sizes a whole scan" in result.output, result.output
    for extra in (["--L", "4K"], ["--regime", "pack"], ["--seed", "3"]):  # the error bar's, which --lengths gives
        result = estimate("--corpus-tokens", "1B", *extra)
        assert result.exit_code == 2 and "needs --lengths under --estimate (the error bar they size)" in result.output
    lonely = estimate("--corpus-tokens", "627B", "--lengths", str(tmp_path / "lengths.parquet"))
    assert lonely.exit_code == 2 and "--lengths sizes a --sample-rate sample's intervals" in lonely.output


@pytest.mark.parametrize(
    "extra",
    [["--node-cores", "8"], ["--corpus-bytes", "1T"], ["--target-hours", "3"], ["--lengths", "lengths.parquet"]],
)
def test_a_scan_refuses_the_options_of_an_estimate(tmp_path, extra):
    """A review: without --estimate they ran the scan as if not given (--lengths naming no file at all)."""
    result = CliRunner().invoke(main, ["scan", "--max-docs", "1", "--out", str(tmp_path / "out"), *extra])
    assert result.exit_code == 2 and not (tmp_path / "out").exists()
    assert result.output.strip().splitlines()[-1] == (
        f"Error: {extra[0]} needs --estimate (the cost estimate, not a scan)"
    )
