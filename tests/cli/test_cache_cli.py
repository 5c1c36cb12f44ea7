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
    assert data == {"folder": str(folder), "off": True, "cleared": False, "files": [], "bytes": 0}
    assert (
        run("cache", env={**env, "FREQLAB_NO_CACHE": "1"})
        .output.splitlines()[0]
        .endswith("(off: FREQLAB_NO_CACHE is set)")
    )
