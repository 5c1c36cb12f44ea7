"""``freqlab cache``: the tokenizer cache's folder, what it holds, and ``--clear``."""

import json

from click.testing import CliRunner

from freqlab.cli import main


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def test_it_says_what_the_cache_holds_and_clears_only_that(tmp_path):
    folder = tmp_path / "tokenizers"
    folder.mkdir()
    (folder / f"{'a' * 64}.pickle").write_bytes(b"x" * 3 * 2**20)
    (folder / f"{'a' * 64}.pickle.fastokens").write_bytes(b"x" * 2**20)
    (folder / "README").write_text("a user's own")
    env = {"FREQLAB_CACHE_DIR": str(tmp_path), "FREQLAB_NO_CACHE": ""}
    result = run("cache", env=env)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[:2] == [
        f"folder   {folder}",
        "holds    1 entry, 1 fastokens input, 0 unfinished writes: 4.0 MiB",
    ]
    result = run("cache", "--clear", env=env)
    assert result.output.splitlines() == [
        f"folder   {folder}",
        "removed  1 entry, 1 fastokens input, 0 unfinished writes: 4.0 MiB",
    ]
    assert sorted(p.name for p in folder.iterdir()) == ["README"]
    data = json.loads(run("cache", "--json", env={**env, "FREQLAB_NO_CACHE": "1"}).output)
    assert data == {
        "folder": str(folder),
        "state": "folder",
        "off": True,
        "cleared": False,
        "files": [],
        "bytes": 0,
        "not_removed": [],
        "left": [],
    }
    assert (
        run("cache", env={**env, "FREQLAB_NO_CACHE": "1"})
        .output.splitlines()[0]
        .endswith("(off: FREQLAB_NO_CACHE is set)")
    )


def test_a_file_it_cannot_remove_is_named_and_the_rest_still_go(tmp_path, monkeypatch):
    from freqlab.tokenization import cache

    folder = tmp_path / "tokenizers"
    folder.mkdir()
    stuck, other = folder / f"{'a' * 64}.pickle", folder / f"{'b' * 64}.pickle"
    stuck.write_bytes(b"x")
    other.write_bytes(b"y")
    unlink = cache.os.unlink

    def refusing(path, *args, **kwargs):
        if str(path) == str(stuck):
            raise PermissionError(13, "Permission denied")
        return unlink(path, *args, **kwargs)

    monkeypatch.setattr(cache.os, "unlink", refusing)
    result = CliRunner().invoke(main, ["cache", "--clear"], env={"FREQLAB_CACHE_DIR": str(tmp_path)})
    assert result.exit_code == 1
    assert f"Error: could not remove {stuck}: Permission denied" in result.output
    assert "removed  1 entry, 0 fastokens inputs, 0 unfinished writes: 0.0 MiB" in result.output
    assert sorted(p.name for p in folder.iterdir()) == [stuck.name]


def test_a_folder_not_made_yet_or_not_a_folder_is_said(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    on = {"FREQLAB_NO_CACHE": ""}
    absent = run("cache", env={**on, "FREQLAB_CACHE_DIR": str(tmp_path / "absent")}).output.splitlines()[0]
    blocked = run("cache", env={**on, "FREQLAB_CACHE_DIR": str(tmp_path / "a-file")}).output.splitlines()[0]
    assert absent == f"folder   {tmp_path / 'absent' / 'tokenizers'} (not made yet)"
    assert (
        blocked == f"folder   {tmp_path / 'a-file' / 'tokenizers'} (not a folder: a scan cannot write the cache there)"
    )


def test_a_relative_folder_is_shown_absolute_and_a_running_write_is_left_and_said(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "rel" / "tokenizers"
    folder.mkdir(parents=True)
    (folder / f"{'a' * 64}.pickle.ab_1.tmp").write_bytes(b"being written")
    result = run("cache", "--clear", env={"FREQLAB_CACHE_DIR": "rel", "FREQLAB_NO_CACHE": ""})
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"folder   {folder}",
        "removed  0 entries, 0 fastokens inputs, 0 unfinished writes: 0.0 MiB",
        "left     1 unfinished write younger than 10 minutes (a write may be running)",
    ]
    data = json.loads(run("cache", "--clear", "--json", env={"FREQLAB_CACHE_DIR": "rel"}).output)
    assert data["left"] == [str(folder / f"{'a' * 64}.pickle.ab_1.tmp")] and data["state"] == "folder"
