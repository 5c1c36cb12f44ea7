"""freqlab.paths: ~ and ~user at the start of a path are home folders, for what freqlab reads and what it writes."""

import doctest
import os

import pytest

import freqlab.paths
from freqlab.errors import FreqlabError
from freqlab.paths import expand_home, printable, shown, unambiguous


def test_the_module_examples_run():
    assert doctest.testmod(freqlab.paths).failed == 0


def test_a_leading_tilde_is_the_home_folder_and_any_other_is_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert expand_home("~") == str(tmp_path)
    assert expand_home("~/runs/sp") == str(tmp_path / "runs" / "sp")
    assert expand_home("runs/~/sp") == "runs/~/sp"
    assert expand_home(tmp_path / "x") == str(tmp_path / "x")  # a PathLike too


def test_an_unknown_user_is_one_line_naming_it():
    message = r"^~nosuchuser-freqlab/x: no home folder for user 'nosuchuser-freqlab' \(\./~nosuchuser-freqlab/x for a"
    with pytest.raises(FreqlabError, match=message):
        expand_home(f"~nosuchuser-freqlab{os.sep}x")


def test_a_path_that_exists_as_written_is_kept_even_if_it_names_no_user(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "~x.jsonl").write_text("{}")
    assert expand_home("~x.jsonl") == "~x.jsonl"


def test_a_relative_path_beginning_with_a_tilde_is_shown_as_relative():
    assert shown("~/runs") == os.path.join(".", "~", "runs") and shown("/home/a/~") == "/home/a/~"


def test_an_empty_path_is_refused_not_read_as_the_working_folder():
    # pathlib reads '' as '.': scan --out "" wrote there, --tokenizer "" loaded its tokenizer.json
    with pytest.raises(FreqlabError, match=r"^an empty path names no file or folder$"):
        expand_home("")
    assert expand_home(".") == "."


def test_printable_escapes_what_would_drive_a_terminal_and_keeps_the_rest():
    assert printable("plain/name é ü 日本.parquet") == "plain/name é ü 日本.parquet"
    assert printable("a\nb\rc\td\x00e\x7f") == r"a\nb\rc\td\x00e\x7f"
    assert printable("x\x1b[31mred\x9b\u0085") == r"x\x1b[31mred\x9b\x85"  # ESC, C1 CSI and NEL
    assert printable("ab\u202ecd\u2028") == r"ab\u202ecd\u2028"  # right-to-left override, line separator
    assert printable(os.fsdecode(b"caf\xe9/\xff")) == r"caf\xe9/\xff"  # the bytes of a name that is not UTF-8
    assert shown("~/a\nb") == os.path.join(".", "~", r"a\nb") and unambiguous("~/a\nb") == "./~/a\nb"


def test_writes_stdout_knows_stdout_by_its_file_not_by_its_name(tmp_path, monkeypatch):
    """freq --out /dev/stdout prints its report on stderr then (a review); /dev/null or a terminal is no file read back
    (a second review: --out /dev/null > /dev/null sent the report to stderr)."""
    import io
    import sys

    from freqlab.paths import writes_stdout

    with open(tmp_path / "out.parquet", "wb") as handle:
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(handle))
        assert writes_stdout(tmp_path / "out.parquet") and writes_stdout(f"/proc/self/fd/{handle.fileno()}")
        assert not writes_stdout(tmp_path / "other.parquet")
    with open(os.devnull, "wb") as handle:
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(handle))
        assert not writes_stdout(os.devnull)
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # no file at all (a notebook, CliRunner)
    assert not writes_stdout(tmp_path / "out.parquet")


def test_a_parameter_error_pickles_with_its_option():
    """A worker's ParameterError reaches the driver whole (it raised TypeError: missing 'option'; a review)."""
    import pickle

    from freqlab.errors import ParameterError

    error = pickle.loads(pickle.dumps(ParameterError("the shift S must be ...", "--S")))
    assert (str(error), error.option) == ("the shift S must be ...", "--S")
