"""freqlab.files: atomic writes, and Parquet under any name the file system allows."""

from __future__ import annotations

import os

import polars as pl
import pytest

from freqlab.errors import FreqlabError
from freqlab.files import parquet_metadata, read_parquet, write_parquet

FRAME = pl.DataFrame({"length": [1, 4, 9], "count": [3, 2, 1]})


@pytest.fixture
def undecodable(tmp_path):
    """A file name that is not UTF-8 (``$'\\xff.parquet'``: Python holds it as ``'\\udcff.parquet'``)."""
    name = os.fsdecode(b"\xff.parquet")
    try:
        (tmp_path / name).touch()
    except (OSError, UnicodeEncodeError):  # a file system that keeps UTF-8 names only
        pytest.skip("this file system refuses names that are not UTF-8")
    (tmp_path / name).unlink()
    return tmp_path / name


def test_a_table_and_its_header_come_back_as_written(tmp_path):
    path = tmp_path / "t.parquet"
    write_parquet(path, FRAME, header={"format": "demo", "version": 1})
    frame, metadata = read_parquet(path)
    assert frame.equals(FRAME)
    assert metadata["freqlab"] == '{"format": "demo", "version": 1}' == parquet_metadata(path)["freqlab"]
    write_parquet(path, FRAME)  # no header: a plain table, replacing the file
    assert "freqlab" not in parquet_metadata(path)


def test_a_name_that_is_not_utf8_is_written_and_read(undecodable):
    # polars takes only UTF-8 names: freq --out $'\xff' printed a TypeError from inside it
    write_parquet(undecodable, FRAME, header={"format": "demo"})
    assert read_parquet(undecodable)[0].equals(FRAME)
    assert os.listdir(undecodable.parent) == [undecodable.name]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = tmp_path / "t.parquet"
    write_parquet(path, FRAME)
    before = path.read_bytes()

    class Broken(pl.DataFrame):
        def write_parquet(self, *args, **kwargs):
            raise ValueError("disk on fire")

    with pytest.raises(FreqlabError, match=r"t\.parquet: cannot write \(ValueError: disk on fire\)$"):
        write_parquet(path, Broken(FRAME))
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["t.parquet"]


def test_a_folder_in_the_way_is_one_line_naming_the_file(tmp_path):
    (tmp_path / "t.parquet").mkdir()
    with pytest.raises(FreqlabError, match=r"t\.parquet: cannot write \(Is a directory\)$"):
        write_parquet(tmp_path / "t.parquet", FRAME)
    assert os.listdir(tmp_path) == ["t.parquet"]
