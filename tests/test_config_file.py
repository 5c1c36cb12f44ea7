"""Mixture and schedule files are read within bounds: size, YAML anchors and aliases, nesting, JSON as JSON."""

from __future__ import annotations

import json
import re
import time
import tracemalloc

import pytest
from click.testing import CliRunner

import freqlab.config_file as config_file
from freqlab.cli import main
from freqlab.config_file import MAX_CONFIG_BYTES, read_config_file
from freqlab.errors import FreqlabError
from freqlab.histogram import LengthHistogram, combine_sources


def billion_laughs() -> str:
    """Nine lists of nine references to the list before: 9^9 = 387,420,489 leaves once expanded (issue 23.4)."""
    lines = ["l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"l{k}: &l{k} [{', '.join([f'*l{k - 1}'] * 9)}]" for k in range(1, 9)]
    return "\n".join([*lines, "weights: {web: *l8}"]) + "\n"


@pytest.fixture
def split_hist(tmp_path):
    path = tmp_path / "lengths.parquet"
    sources = {"web": LengthHistogram.from_lengths([100, 3000]), "code": LengthHistogram.from_lengths([5000])}
    combine_sources(sources).to_parquet(path)
    return path


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_an_alias_bomb_is_one_line_in_milliseconds_with_memory_flat(tmp_path):
    path = tmp_path / "mix.yaml"
    path.write_text(billion_laughs())
    assert path.stat().st_size < 500
    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(FreqlabError) as error:
        read_config_file(path, "mixture")
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert str(error.value) == f"{path}: line 1: YAML anchors and aliases (&, *) are not allowed in a mixture file"
    assert seconds < 0.5 and peak < 1 << 20


def test_an_alias_bomb_as_weights_and_as_schedule_is_refused_on_the_command_line(tmp_path, split_hist):
    mix = tmp_path / "mix.yaml"
    mix.write_text(billion_laughs())
    result = run("freq", split_hist, "--weights", mix)
    assert result.exit_code == 2
    assert f"{mix}: line 1: YAML anchors and aliases (&, *) are not allowed in a mixture file" in result.output
    schedule = tmp_path / "schedule.yaml"
    schedule.write_text("base: &stage {L: 2K, tokens: 1T}\nstages: [*stage, *stage]\n")
    result = run("schedule", schedule, "--hist", split_hist)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: {schedule}: line 1: YAML anchors and aliases (&, *) are not allowed in a schedule file\n"
    )


def test_a_file_over_one_mebibyte_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "mix.json"
    path.write_text(json.dumps({"weights": {"web": 1}}) + " " * MAX_CONFIG_BYTES)
    with pytest.raises(FreqlabError) as error:
        read_config_file(path, "mixture")
    assert str(error.value) == f"{path}: more than 1,048,576 bytes (1 MiB), the most a mixture file may hold"


def test_a_100_megabyte_weights_file_is_one_line_at_once(tmp_path, split_hist):
    path = tmp_path / "mix.json"  # issue 23.4: 360 s and 4.3 GB to say it is not a mixture
    path.write_text('{"weights": {"web": 1, "code": 1}, "note": "')
    with open(path, "r+b") as handle:
        handle.truncate(100 * 10**6)
    started = time.perf_counter()
    result = run("freq", split_hist, "--weights", path)
    assert time.perf_counter() - started < 5
    assert result.exit_code == 2
    assert f"{path}: more than 1,048,576 bytes (1 MiB), the most a mixture file may hold" in result.output


def test_json_is_parsed_as_json_once_and_fast(tmp_path, split_hist, monkeypatch):
    path = tmp_path / "mix.json"
    path.write_text("weights: {web: 1, code: 1}\n")  # YAML, not JSON: a .json file is not read as YAML
    with pytest.raises(FreqlabError) as error:
        read_config_file(path, "mixture")
    assert str(error.value) == f"{path}: line 1: not valid JSON (Expecting value)"
    big = tmp_path / "big.json"  # just under the cap, broken at the end: its error comes at JSON speed
    weights = json.dumps({"weights": {f"s{k}": k for k in range(70_000)}})
    big.write_text(weights[: MAX_CONFIG_BYTES - 10])
    started = time.perf_counter()
    with pytest.raises(FreqlabError, match=r"big.json: line 1: not valid JSON"):
        read_config_file(big, "mixture")
    assert time.perf_counter() - started < 1.0

    path.write_text(json.dumps({"unit": "share", "weights": {"web": 70, "code": 30}}))
    calls = []
    original = config_file.read_config_file
    monkeypatch.setattr("freqlab.frequency.mixture.read_config_file", lambda *a: calls.append(a) or original(*a))
    result = run("freq", split_hist, "--weights", path, "--L", "2K")
    assert result.exit_code == 0, result.output
    assert len(calls) == 1  # checked when the command line is read, used later: parsed once


def test_nesting_beyond_the_documented_shape_is_refused(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("weights: {web: [[[[[[1]]]]]]}\n")
    with pytest.raises(FreqlabError) as error:
        read_config_file(deep, "mixture")
    assert str(error.value) == f"{deep}: line 1: nested deeper than a mixture file is (at most 7 levels)"
    deep_json = tmp_path / "deep.json"
    deep_json.write_text("[" * 100_000 + "]" * 100_000)  # past the parser's stack as well
    with pytest.raises(FreqlabError, match=r"deep.json: (not a mixture JSON file|nested deeper)"):
        read_config_file(deep_json, "mixture")
    schedule = tmp_path / "schedule.yaml"  # the deepest documented shape: stages > stage > weights
    schedule.write_text("stages:\n  - {L: 2K, tokens: 1T, weights: {web: 1}}\n")
    assert read_config_file(schedule, "schedule")["stages"][0]["weights"] == {"web": 1}


def test_a_schedule_with_infinite_tokens_is_one_line(tmp_path, split_hist):
    schedule = tmp_path / "schedule.yaml"
    schedule.write_text(f"histogram: {split_hist}\nstages:\n  - {{L: 2K, tokens: .inf}}\n")
    result = run("schedule", schedule)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: {schedule}: stage 1 (stage-1): not a token count: inf (use e.g. 2e9, 100B or 1.5T)\n"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "L: 01024",
            "'01024' is an octal number to YAML 1.1 (PyYAML), not to YAML 1.2; quote it for text, or write "
            "the number without its leading zero",
        ),
        ("weights: {test: 1:30}", "'1:30' is a base-60 number to YAML 1.1"),
        (
            "stages: [{name: no}]",
            "'no' is a boolean to YAML 1.1 (PyYAML), not to YAML 1.2; quote it for text, or write true or false",
        ),
        ("sources: {off: 1}", "'off' is a boolean"),
    ],
)
def test_values_yaml_1_1_reads_otherwise_than_1_2_are_refused_not_changed(tmp_path, line, message):
    """A review: PyYAML read L: 01024 as 532 (octal), tau: 010 as 8, 1:30 as 90 (base 60) and a source named no as
    False, and the commands ran on those values."""
    path = tmp_path / "s.yaml"
    path.write_text(line + "\n")
    with pytest.raises(FreqlabError, match=re.escape(f"{path}: line 1: {message}")):
        read_config_file(path, "schedule")


def test_quoted_or_plain_values_read_as_written(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: 'no'\nL: 1024\ntag: \"01024\"\nzero: 0\nhex: 0x10\nbig: 1_000\nflag: true\n")
    assert read_config_file(path, "schedule") == {
        "name": "no", "L": 1024, "tag": "01024", "zero": 0, "hex": 16, "big": 1000, "flag": True
    }  # fmt: skip
    # a second review: values both read alike were refused (0:30 is text to PyYAML, 00 and 07 the same number)
    path.write_text("a: 0:30\nb: 00:30\nc: 00\nd: 07\n")
    assert read_config_file(path, "schedule") == {"a": "0:30", "b": "00:30", "c": 0, "d": 7}


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("histogram: h.parquet\nstages:\n\t- {L: 8K, tokens: 1T}\n", "line 3, column 1", "found character that"),
        ("stages:\n  - {L: 8K, tokens: 1T}\n  - {L: 16K, tokens: 1T\n", "line 4, column 1", "did not find expected"),
        ("stages:\n  - {L: 8K}\n   - {L: 16K}\n", "line 3, column 4", "did not find expected '-' indicator"),
    ],
)
def test_a_yaml_syntax_error_names_its_line_and_column(tmp_path, text, where, what):
    # a tab, an unclosed flow mapping, a bad indent: the message named no line, as a JSON file's does (a review)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(FreqlabError, match=rf"^{re.escape(str(path))}: {where}: not valid YAML/JSON \(.*{what}"):
        read_config_file(path, "schedule")
