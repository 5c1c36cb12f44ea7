"""``freqlab scan``: a thin CLI over freqlab.scan.scan (tables, --json, outputs, errors, Ctrl-C)."""

from __future__ import annotations

import json
import re
import shutil
import time

import pytest
from click.testing import CliRunner

import freqlab.scan.work as work
from freqlab.cli import main
from freqlab.histogram import LengthHistogram
from freqlab.scan import scan

TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 40,
    "def f(x):\n    return x ** 2\n" * 25,
    "",
    "Bonjour le monde. " * 300,
]


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    for k in range(2):
        with open(folder / f"part{k}.jsonl", "w") as handle:
            for j, text in enumerate(TEXTS):
                label = ["web", "code"][j % 2]
                handle.write(json.dumps({"text": text, "meta": {"redpajama_set_name": label}}) + "\n")
    return folder


def invoke(*args):
    return CliRunner().invoke(main, ["scan", *args])


def test_json_summary_matches_the_python_api_and_the_written_files(tmp_path, corpus):
    out = tmp_path / "out"
    result = invoke(
        "--dataset",
        "slimpajama",
        "--data-files",
        str(corpus / "*.jsonl"),
        "--L",
        "256",
        "--L",
        "512",
        "--regime",
        "natural",
        "--out",
        str(out),
        "--workers",
        "1",
        "--json",
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    api = scan("slimpajama", data_files=str(corpus / "*.jsonl"), L=[256, 512], regimes=["natural"], progress=False)
    assert (
        summary["documents"]
        == api.summary["documents"]
        == {
            "read": 8,
            "tokenized": 6,
            "empty": 2,
            "skipped": {},
            "sampled_out": 0,
            "blank_lines": 0,
            "unreadable_files": [],
        }
    )
    assert summary["tokens"] == api.histogram.tokens
    assert [(w["L"], w["regime"]) for w in summary["windows"]] == [(256, "natural"), (512, "natural")]
    assert summary["windows"] == api.summary["windows"]
    assert summary["tokenizer"]["name"] == "tekken" and summary["tokenizer"]["special_tokens_counted"] is False
    assert json.loads((out / "summary.json").read_text())["documents"] == summary["documents"]
    saved = LengthHistogram.read_parquet(out / "lengths.parquet")
    assert saved.counts.tolist() == api.histogram.counts.tolist() and sorted(saved.sources) == ["code", "web"]


def test_the_table_report_reads_like_the_issue(tmp_path, corpus):
    result = invoke("--dataset", str(corpus), "--L", "2048", "--out", str(tmp_path / "o"), "--quiet")
    assert result.exit_code == 0, result.output
    assert re.search(
        r"^L=2048 natural: \d+\.\d% of position mass at i ≤ 1024, \d+\.\d% at i ≥ 1536", result.output, re.M
    )
    # the default regimes: natural, pack (how STRING trained, App. A.2) and concat; the default budget is 1T
    assert "L=2048 pack:" in result.output and "L=2048 concat:" in result.output and "uniform" not in result.output
    assert "budget     T = 1T training tokens (freqlab default; --tokens sets it)" in result.output
    assert "documents  8 read = 6 tokenized + 2 empty + 0 skipped" in result.output
    assert re.search(
        r"^tokens     [\d,]+ \(mean [\d,]+, median [\d,]+, p99 [\d,]+, max [\d,]+ per document; "
        r"nearest-rank quantiles\)$",
        result.output,
        re.M,
    )


def test_add_special_tokens_counts_bos_and_eos(tmp_path, corpus):
    plain = invoke("--dataset", str(corpus), "--out", str(tmp_path / "a"), "--json", "-q")
    special = invoke("--dataset", str(corpus), "--out", str(tmp_path / "b"), "--json", "-q", "--add-special-tokens")
    a, b = json.loads(plain.output), json.loads(special.output)
    assert b["tokens"] == a["tokens"] + 2 * a["documents"]["tokenized"]  # <s> ... </s> per document
    assert b["tokenizer"]["special_tokens_counted"] is True


def test_a_bad_record_is_one_line_with_file_and_line_and_skip_counts_it(tmp_path, corpus):
    with open(corpus / "part1.jsonl", "a") as handle:
        handle.write("{not json\n")
    failed = invoke("--dataset", str(corpus), "--out", str(tmp_path / "o"))
    assert failed.exit_code == 1
    assert failed.output.strip() == (  # and what the JSON parser says, where: a line may be megabytes long
        f"Error: {corpus / 'part1.jsonl'}:5: malformed-json "
        "(Expecting property name enclosed in double quotes: column 2); --on-error skip counts such records as skipped"
    )
    skipped = invoke("--dataset", str(corpus), "--out", str(tmp_path / "o"), "--on-error", "skip", "--json")
    assert json.loads(skipped.output)["documents"]["skipped"] == {"malformed-json": 1}


def test_ctrl_c_keeps_checkpoints_and_hints_at_resume(tmp_path, corpus, monkeypatch):
    real, calls = work.count_shard, []

    def interrupted_on_second_shard(shard, *args, **kwargs):
        calls.append(shard.id)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(shard, *args, **kwargs)

    monkeypatch.setattr(work, "count_shard", interrupted_on_second_shard)
    out = tmp_path / "o"
    result = invoke("--dataset", str(corpus), "--out", str(out), "--workers", "1")
    assert result.exit_code == 130
    assert "--resume" in result.output and len(list((out / "checkpoints").glob("*.parquet"))) == 1
    resumed = invoke("--dataset", str(corpus), "--out", str(out), "--workers", "1", "--resume", "--json")
    assert resumed.exit_code == 0 and calls == ["part0.jsonl", "part1.jsonl", "part1.jsonl"]
    assert json.loads(resumed.output)["documents"]["read"] == 8


def test_no_arguments_scans_the_builtin_corpus_offline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("--max-docs", "300", "--quiet")  # the full no-argument scan takes ~10 s; same code path
    assert result.exit_code == 0, result.output
    assert "corpus     python-stdlib" in result.output and "tokenizer  tekken (tiktoken" in result.output
    size = r"[\d.]+ (KiB|MiB)"
    skipped = rf"fastokens: not tried for a small scan \(an estimated {size} of text < {size}: tiktoken is done"
    assert re.search(skipped, result.output)
    assert "L=2048 natural:" in result.output
    assert (tmp_path / "freqlab-out" / "lengths.parquet").is_file()


def test_an_unreachable_hub_dataset_fails_fast_with_one_line(tmp_path):
    start = time.monotonic()
    result = invoke("--dataset", "no-such-owner/no-such-dataset", "--out", str(tmp_path / "o"))
    assert result.exit_code == 1 and time.monotonic() - start < 15
    assert result.output.count("\n") == 1 and "no-such-owner/no-such-dataset" in result.output


def test_help_has_an_example():
    result = invoke("--help")
    assert result.exit_code == 0 and "freqlab scan --dataset slimpajama" in result.output
    assert ".model file (SentencePiece" in " ".join(result.output.split())  # --tokenizer names every kind it loads


def test_plot_writes_the_main_figures_and_keeps_json_on_stdout(tmp_path, corpus):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "scan",
            "--dataset",
            str(corpus),
            "--source-field",
            "meta.redpajama_set_name",
            "--L",
            "256",
            "--L",
            "512",
            "--out",
            str(out),
            "--workers",
            "1",
            "--plot",
            "--plot-format",
            "png",
            "--plot-format",
            "pdf",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["documents"]["read"] == 8  # figure paths go to stderr
    names = sorted(p.name for p in (out / "figures").iterdir())
    for stem in ("frequency_L256", "frequency_L512", "windows", "effective_length", "sources"):
        assert f"{stem}.png" in names and f"{stem}.pdf" in names


def test_address_without_the_ray_engine_is_a_usage_error(corpus):
    result = invoke("--dataset", str(corpus), "--address", "127.0.0.1:6379")
    assert result.exit_code == 2
    assert "Error: --address needs --engine ray" in result.output


@pytest.mark.parametrize(("args", "named"), [(("--format", "jsonl"), "--format"), (("--split", "test"), "--split")])
def test_dataset_options_on_the_built_in_corpus_are_usage_errors_naming_them(args, named):
    """They read nothing of the built-in corpus; refused with exit 1 and the API's parameter names (a review)."""
    result = invoke(*args, "-q")
    assert result.exit_code == 2
    assert f"Error: {named}: for a dataset or data files, not the built-in corpus" in result.output


def test_a_new_scan_takes_away_the_figures_the_last_one_drew_and_nothing_else(tmp_path, corpus):
    """Two reviews: OUT/figures kept an earlier scan's figures (another corpus, other windows) beside new results.
    Each scan removes the figures listed as written by the last one, before it writes its results; a file of the
    user's stays."""
    out = tmp_path / "out"
    assert invoke("--dataset", str(corpus), "--out", str(out), "--L", 256, "--L", 512, "--plot").exit_code == 0
    figures = out / "figures"
    assert {"frequency_L256.png", "frequency_L512.png", "windows.png"} <= {p.name for p in figures.iterdir()}
    (figures / "mine.png").write_bytes(b"the user's")
    assert invoke("--dataset", str(corpus), "--out", str(out), "--L", 1024, "--plot").exit_code == 0
    names = sorted(p.name for p in figures.iterdir() if not p.name.startswith("."))
    assert names == ["effective_length.png", "frequency_L1024.png", "mine.png"]
    assert invoke("--dataset", str(corpus), "--out", str(out)).exit_code == 0  # no --plot: none of the old ones
    assert sorted(p.name for p in figures.iterdir()) == ["mine.png"]
    # a figure the user edited since is theirs (a review); a corrupt list removes nothing and stops nothing
    assert invoke("--dataset", str(corpus), "--out", str(out), "--L", 256, "--plot").exit_code == 0
    (figures / "effective_length.png").write_bytes(b"edited by hand")
    assert invoke("--dataset", str(corpus), "--out", str(out)).exit_code == 0
    assert sorted(p.name for p in figures.iterdir()) == ["effective_length.png", "mine.png"]
    refused = invoke("--dataset", str(corpus), "--out", str(out), "--L", 256, "--plot")  # nor replaced by a figure
    assert refused.exit_code == 1 and "effective_length.png: a file freqlab did not draw there" in refused.output
    assert (figures / "effective_length.png").read_bytes() == b"edited by hand"
    (figures / "effective_length.png").unlink()
    # a copy that keeps sizes and times (cp -a, a restore) is a new file: it stays (a review), and is not replaced
    assert invoke("--dataset", str(corpus), "--out", str(out), "--L", 256, "--plot").exit_code == 0
    copy = tmp_path / "paper"
    shutil.copytree(figures, copy)  # copy2: sizes and times kept, the list copied along
    plotted = CliRunner().invoke(main, ["plot", "scan", str(out / "lengths.parquet"), "--L", 512, "--out", str(copy)])
    assert plotted.exit_code == 1 and "a file freqlab did not draw there" in plotted.output
    assert (copy / "frequency_L256.png").read_bytes() == (figures / "frequency_L256.png").read_bytes()
    (copy / "effective_length.png").unlink()
    plotted = CliRunner().invoke(main, ["plot", "scan", str(out / "lengths.parquet"), "--L", 512, "--out", str(copy)])
    assert plotted.exit_code == 0, plotted.output
    assert (copy / "frequency_L256.png").is_file() and (copy / "frequency_L512.png").is_file()
    (figures / ".written.json").write_text("[" * 100_000 + "]" * 100_000)
    assert invoke("--dataset", str(corpus), "--out", str(out)).exit_code == 0
    assert (out / "summary.json").is_file() and (figures / "mine.png").is_file()


def test_plot_refuses_a_file_of_the_users_named_like_a_figure_before_counting(tmp_path, corpus):
    """It was replaced by the figure (left alone last stop)."""
    figures = tmp_path / "out" / "figures"
    figures.mkdir(parents=True)
    (figures / "frequency_L512.svg").write_bytes(b"the user's")
    result = invoke(
        "--dataset", str(corpus), "--out", str(tmp_path / "out"), "--L", 512, "--plot-format", "svg", "--plot"
    )
    assert result.exit_code == 1 and "frequency_L512.svg: a file freqlab did not draw there" in result.output
    assert (figures / "frequency_L512.svg").read_bytes() == b"the user's"
    assert not (tmp_path / "out" / "lengths.parquet").exists()  # refused before anything was counted
    assert invoke("--dataset", str(corpus), "--out", str(tmp_path / "out"), "--L", 512, "--plot").exit_code == 0
    # a second review: a corpus without sources draws no sources figure, so a file of that name is no concern; and
    # chmod (which moves the change time) leaves freqlab's figures freqlab's
    (figures / "sources.png").write_bytes(b"the user's too")
    (figures / "frequency_L512.png").chmod(0o600)
    assert invoke("--dataset", str(corpus), "--out", str(tmp_path / "out"), "--L", 512, "--plot").exit_code == 0
    assert (figures / "sources.png").read_bytes() == b"the user's too"


def test_plot_format_without_plot_is_a_usage_error(corpus, tmp_path):
    """It wrote no figure and said nothing (a review)."""
    result = invoke("--dataset", str(corpus), "--plot-format", "pdf", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and not (tmp_path / "out").exists()
    assert "Error: --plot-format needs --plot (the figures it chooses the format of)" in result.output


def test_an_unreachable_ray_address_is_one_line_within_seconds(tmp_path, corpus):
    pytest.importorskip("ray")
    import socket

    with socket.socket() as probe:  # a closed local port: refused at once, no traffic leaves the machine
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    start = time.monotonic()
    result = invoke(
        "--dataset", str(corpus), "--engine", "ray", "--address", f"127.0.0.1:{port}", "--out", str(tmp_path / "o")
    )
    assert time.monotonic() - start < 6
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert result.output.startswith(f"Error: cannot reach the Ray cluster at 127.0.0.1:{port} (Connection refused)")


def test_config_or_split_with_local_data_is_a_usage_error_not_ignored(tmp_path, corpus):
    """Exit 2 naming the option, as on the built-in corpus (it was 1; left alone last stop)."""
    result = invoke("--dataset", str(corpus), "--config", "en", "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert "Invalid value for '--config': " in result.output
    assert "--config 'en' applies to Hugging Face datasets, not to local files" in result.output
    result = invoke("--dataset", str(corpus), "--split", "test", "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and "--split 'test' applies to Hugging Face datasets" in result.output


def test_on_error_skip_goes_past_a_truncated_file_and_reports_it(tmp_path, corpus):
    import zstandard

    data = zstandard.ZstdCompressor().compress((corpus / "part0.jsonl").read_bytes())
    (corpus / "t.jsonl.zst").write_bytes(data[: len(data) // 2])  # ends inside its only block: no document
    failed = invoke("--dataset", str(corpus), "--out", str(tmp_path / "o"), "-q")
    assert failed.exit_code == 1 and failed.output.count("\n") == 1
    assert failed.output.startswith(f"Error: {corpus / 't.jsonl.zst'}: cannot read (ZstdError: ")
    skipped = invoke(
        "--dataset", str(corpus), "--out", str(tmp_path / "o"), "-q", "--on-error", "skip", "--workers", "1"
    )
    assert skipped.exit_code == 0, skipped.output
    assert "files      3 files (0 empty, 0 ignored)" in skipped.output
    assert "documents  9 read = 6 tokenized + 2 empty + 1 skipped (unreadable-file: 1)" in skipped.output
    assert (
        "files (or parts of files, name@bytes) that failed while read (none of their documents counted, one skip "
        "each): t.jsonl.zst"
        in " ".join(skipped.output.split())
        and "(local, 1 worker)" in skipped.output
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--sample-rate", "nan"], "Invalid value for '--sample-rate': 'nan' is not a finite number"),
        (["--tau", "1e400"], "tau must be a positive number of occurrences, a whole number from 1 to 2^63 - 1"),
        (["--tokens", "1e400"], "'1e400' is not in 1..9,223,372,036,854,775,807"),
        (["--seed", "-1"], "Invalid value for '--seed': -1 is not in the range x>=0"),
        (["--L", str(2**30 + 1)], "'1073741825' is not in 1..1,073,741,824"),
    ],
)
def test_a_bad_parameter_is_a_usage_error_before_anything_is_read(tmp_path, options, message):
    # issue 14: these used to be checked only after the whole corpus was counted, then a traceback
    missing = tmp_path / "no-such-folder"  # never opened: the parameters are checked first
    started = time.monotonic()
    result = invoke("--dataset", str(missing), "--out", str(tmp_path / "o"), *options)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert time.monotonic() - started < 5


def test_an_empty_document_is_empty_with_or_without_special_tokens(tmp_path):
    # issue 14: with --add-special-tokens an empty text counted 0 but a text the tokenizer reduced to nothing 2
    # (a small tokenizer of the same parts, <s> $A </s> around the text: Tekken's took 14 s a scan to load and check)
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    words = Tokenizer(models.WordLevel({"<s>": 0, "</s>": 1, "two": 2, "words": 3, "[UNK]": 4}, unk_token="[UNK]"))
    words.normalizer = normalizers.Strip()  # whitespace -> nothing
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    words.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)])
    tokenizer = tmp_path / "tokenizer.json"
    words.save(str(tokenizer))
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["", "   \n\t ", "two words"]))
    for special in ([], ["--add-special-tokens"]):
        result = invoke(
            "--dataset",
            str(data),
            "--tokenizer",
            str(tokenizer),
            "--out",
            str(tmp_path / "o"),
            "--json",
            "-q",
            "--workers",
            "1",
            *special,
        )
        summary = json.loads(result.output)
        assert (summary["documents"]["empty"], summary["documents"]["tokenized"]) == (2, 1)
        assert summary["tokens"] == 2 + 2 * bool(special)  # "two words": 2 tokens, plus <s> and </s>


def test_the_json_builder_names_the_file_obeys_skip_and_prints_no_log_line(tmp_path):
    data = tmp_path / "a.jsonl"
    data.write_bytes(b'{"text": "hello world"}\n{"text": "broken\n')
    failed = invoke("--dataset", "json", "--data-files", str(data), "--out", str(tmp_path / "o"))
    assert failed.exit_code == 1
    assert failed.output.startswith(f"Error: {data}:2: cannot read (")  # line 2, not the builder's "record 1"
    assert len(failed.output.strip().splitlines()) == 1  # no "Failed to load JSON" log line from datasets
    skipped = invoke(
        "--dataset", "json", "--data-files", str(data), "--out", str(tmp_path / "o"), "--json", "--on-error", "skip"
    )
    assert skipped.exit_code == 0 and json.loads(skipped.output)["documents"]["skipped"] == {"unreadable-file": 1}


def test_summary_json_holds_f_and_what_the_report_prints(tmp_path, corpus):
    """summary.json: per window and regime, f itself at i = 0, L/4, L/2, 3L/4, L - 1 (exact), beside the shares,
    the 50/80/90% positions, the effective length and the budget for f_T(L/2) >= tau that the text report prints."""
    from frequency.reference import concat_segments, expand, frequency_of_segments, natural_segments

    out = tmp_path / "out"
    result = invoke(
        "--dataset",
        str(corpus),
        "--L",
        "512",
        "--regime",
        "natural",
        "--regime",
        "concat",
        "--out",
        str(out),
        "--workers",
        "1",
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "summary.json").read_text())
    h = LengthHistogram.read_parquet(out / "lengths.parquet")
    docs = expand(h.lengths, h.counts)
    for row, segments in zip(saved["windows"], (natural_segments, concat_segments), strict=True):
        f = frequency_of_segments(segments(docs, 512), 512)
        assert row["f"] == {str(i): f[i] for i in (0, 128, 256, 384, 511)}
        assert row["tokens_in_segments"] == f[0] == h.tokens
        line = (
            f"L=512 {row['regime']}: {100 * row['share_at_most_half']:.1f}% of position mass at i ≤ 256, "
            f"{100 * row['share_at_least_three_quarters']:.1f}% at i ≥ 384; predicted effective length "
            f"{row['effective_length']} at 1T tokens"
        )
        assert line in result.output
        assert set(row["position_at_mass"]) == {"50%", "80%", "90%"} and row["tokens_needed_at_half"] > 0
    assert len((out / "summary.json").read_bytes()) < 20_000  # f at five positions, not the whole array


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--dataset", "a.jsonl", "--dataset=b.jsonl"], "given 2 times (a.jsonl, b.jsonl): one corpus per scan"),
        (["--tokenizer", "tekken", "--tokenizer", "gpt2"], "given 2 times (tekken, gpt2): one tokenizer per scan"),
        (["--out=~nosuchuser-freqlab/x"], "~nosuchuser-freqlab/x: no home folder for user 'nosuchuser-freqlab'"),
    ],
)
def test_an_option_given_twice_or_an_unknown_home_is_a_usage_error(tmp_path, options, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("--out", str(tmp_path / "o"), *options)
    assert result.exit_code == 2 and message in " ".join(result.output.split())
    assert not (tmp_path / "o").exists() and not list(tmp_path.glob("~*"))


def test_help_is_shown_whatever_else_is_given():
    result = invoke("--dataset", "a", "--dataset", "b", "--help")
    assert result.exit_code == 0 and "Usage:" in result.output and "given 2 times" not in result.output


def test_an_output_folder_given_with_a_tilde_is_in_the_home_folder(tmp_path, corpus, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    result = invoke("--dataset", str(corpus), "--out=~/runs/x", "--plot", "--json")  # the shell leaves ~ after =
    assert result.exit_code == 0, result.output
    written = tmp_path / "home" / "runs" / "x"
    assert (written / "lengths.parquet").is_file() and list((written / "figures").glob("*.png"))  # figures too
    assert not (tmp_path / "~").exists()


@pytest.mark.parametrize("this_scan_saved", [False, True])
def test_an_interrupt_promises_resume_only_for_this_scans_own_checkpoints(tmp_path, monkeypatch, this_scan_saved):
    """An earlier scan's checkpoints, not yet cleared when Ctrl-C came, resume nothing: the message said they did.
    The folder is shown escaped, as every path in a report."""
    import os
    import time

    import freqlab.cli.scan as scan_cli

    out = tmp_path / "o\nut"
    (out / "checkpoints").mkdir(parents=True)
    old = out / "checkpoints" / "earlier.parquet"
    old.write_bytes(b"an earlier scan's")
    os.utime(old, (time.time() - 3600, time.time() - 3600))

    def interrupted(*args, **kwargs):
        if this_scan_saved:
            (out / "checkpoints" / "now.parquet").write_bytes(b"this scan's")
        raise KeyboardInterrupt

    monkeypatch.setattr(scan_cli, "scan_from_settings", interrupted)
    result = CliRunner().invoke(main, ["scan", "--out", str(out)])
    assert result.exit_code == 130
    said = result.output.strip().splitlines()[-1]
    if this_scan_saved:
        where = f"{tmp_path}/o\\nut/checkpoints"
        resume = "run the same command with --resume to continue"
        assert said == f"interrupted: finished shards are checkpointed in {where}; {resume}"
    else:
        assert (
            said
            == "interrupted: no shard had finished, so nothing is checkpointed; run the same command to start again"
        )


def test_files_passed_over_are_named_from_the_folder_scanned_and_splits_are_said(tmp_path, monkeypatch):
    """Two README.md passed over were both 'README.md'; files named for two splits were added up without a word."""
    monkeypatch.setenv("FREQLAB_CACHE_DIR", str(tmp_path / "cache"))
    for split, text in (("train", "a b"), ("validation", "c")):
        (tmp_path / "tv" / split).mkdir(parents=True)
        (tmp_path / "tv" / split / "part0.jsonl").write_text(json.dumps({"text": text}) + "\n")
        (tmp_path / "tv" / split / "README.md").write_text("notes")
    monkeypatch.chdir(tmp_path)  # a relative spec, as typed most often (the names fell back to README.md twice)
    for spec in ("tv", str(tmp_path / "tv"), "tv//"):
        args = ["scan", "--dataset", spec, "--out", str(tmp_path / "out"), "--tokenizer", "tekken"]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert "files      2 files (0 empty, 2 ignored: train/README.md, validation/README.md)" in result.output
    assert "files named for several splits, all read (train 1, validation 1): to read one split" in result.output


def test_plot_with_megatron_first_is_refused_before_the_scan(tmp_path, corpus):
    """--plot draws its window and effective-length figures under the first --regime, which cannot replay megatron:
    the scan ran, wrote its results, then failed (exit 1)."""
    result = invoke("--dataset", str(corpus), "--out", str(tmp_path / "o"), "--regime", "megatron", "--plot")
    assert result.exit_code == 2 and "the megatron regime is replayed from Megatron's indexes only" in result.output
    assert not (tmp_path / "o").exists()
