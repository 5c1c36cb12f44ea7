"""freqlab.files: atomic writes, and Parquet under any name the file system allows."""

from __future__ import annotations

import os
import stat
import threading

import polars as pl
import pytest

from freqlab.errors import FreqlabError
from freqlab.files import _key_values, has_freqlab_header, parquet_metadata, read_parquet, write_atomic, write_parquet

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


def test_freqlabs_header_is_known_by_its_metadata_entry_not_by_text_anywhere_in_the_footer(tmp_path):
    """A review: a user's table storing a header's text (a column of run headers, its min/max statistics in the
    footer) was taken for freqlab's, so freq --out and a scan replaced it."""
    header = {"format": "freqlab.length_histogram", "version": 3, "note": "x" * 300}  # a value past 127 bytes
    write_parquet(tmp_path / "ours.parquet", FRAME, header=header)
    text = parquet_metadata(tmp_path / "ours.parquet")["freqlab"]
    pl.DataFrame({"file": ["ours.parquet"], "header": [text]}).write_parquet(tmp_path / "catalog.parquet")
    pl.DataFrame({"freqlab": [text]}).write_parquet(tmp_path / "column.parquet")  # a column named so, too
    assert has_freqlab_header(tmp_path / "ours.parquet", "freqlab.length_histogram")
    assert has_freqlab_header(tmp_path / "ours.parquet") and not has_freqlab_header(
        tmp_path / "ours.parquet", "freqlab.p"
    )
    assert not has_freqlab_header(tmp_path / "catalog.parquet") and not has_freqlab_header(tmp_path / "column.parquet")
    write_parquet(tmp_path / "odd.parquet", FRAME, header={"format": 7})
    assert not has_freqlab_header(tmp_path / "odd.parquet")
    # a second review: a binary column holding a whole freqlab file (pyarrow copies it into the statistics)
    import pyarrow as pa
    import pyarrow.parquet as pq

    blob = (tmp_path / "ours.parquet").read_bytes()
    pq.write_table(pa.table({"blob": [blob], "n": [1]}), tmp_path / "blobs.parquet")
    assert not has_freqlab_header(tmp_path / "blobs.parquet")
    big = pa.table({"a": [1]}).replace_schema_metadata({**{f"k{i}": "v" * i for i in range(300)}, "freqlab": text})
    pq.write_table(big, tmp_path / "big.parquet")  # 300 other entries, pyarrow's own writer
    assert has_freqlab_header(tmp_path / "big.parquet", "freqlab.length_histogram")
    (tmp_path / "cut.parquet").write_bytes(blob[:-40] + blob[-8:])  # a footer cut short: no header, no error
    assert not has_freqlab_header(tmp_path / "cut.parquet")
    # a fourth review: freqlab's own header of ~11 MB (100,000 sources) is found; a footer of millions of values is
    # given up on (bounded time), found nowhere
    write_parquet(tmp_path / "sources.parquet", FRAME, header={"format": "freqlab.length_histogram", "s": "x" * 12**7})
    assert has_freqlab_header(tmp_path / "sources.parquet", "freqlab.length_histogram")
    many = b"\x49\xf9" + b"\x80\x8d\xb7\x01" + b"\x09" * 3_000_000 + b"\x00"  # a list of 3M empty lists, then STOP
    assert _key_values(many + b"freqlab", "freqlab") == []


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


def test_a_writer_failing_on_a_full_disk_without_saying_so_is_said_to_be_out_of_space(tmp_path, monkeypatch):
    """A review: on a full tmpfs polars failed with "parquet: File out of specification: Invalid thrift: transport
    error" where the README promises "no space left on the device" (37 of 118 sizes of a checkpoint). The free space is
    looked at while the temporary file still holds it; with space left the writer's own words stay."""
    import types

    import freqlab.files as files

    class Thrift(pl.DataFrame):
        def write_parquet(self, handle, **kwargs):
            handle.write(b"PAR1 and the pages")  # it began writing, then failed at the footer
            raise pl.exceptions.ComputeError("parquet: File out of specification: Invalid thrift: transport error")

    class TooLarge(pl.DataFrame):
        def write_parquet(self, handle, **kwargs):
            handle.write(b"PAR1")
            raise pl.exceptions.ComputeError("parquet: File too large (os error 27)")  # ulimit -f: its own reason

    class Refused(pl.DataFrame):
        def write_parquet(self, handle, **kwargs):
            raise ValueError("Image size of 100000x100000 pixels is too large")  # before writing anything

    def statvfs(free_blocks):
        return lambda folder: types.SimpleNamespace(f_bfree=free_blocks, f_bavail=free_blocks, f_frsize=4096)

    monkeypatch.setattr(files.os, "statvfs", statvfs(3))  # 12 KiB left
    with pytest.raises(FreqlabError, match=r"t\.parquet: cannot write \(no space left on the device; free some space"):
        write_parquet(tmp_path / "t.parquet", Thrift(FRAME))
    # a second review: with little space left, failures that say why, or come before any byte, keep their words
    with pytest.raises(FreqlabError, match=r"t\.parquet: cannot write \(File too large\)$"):
        write_parquet(tmp_path / "t.parquet", TooLarge(FRAME))
    with pytest.raises(FreqlabError, match=r"cannot write \(ValueError: Image size of 100000x100000 pixels"):
        write_parquet(tmp_path / "t.parquet", Refused(FRAME))
    monkeypatch.setattr(files.os, "statvfs", statvfs(1 << 20))  # 4 GiB left: another failure, named as it is
    with pytest.raises(FreqlabError, match=r"t\.parquet: cannot write \(ComputeError: parquet: File out of spec"):
        write_parquet(tmp_path / "t.parquet", Thrift(FRAME))
    assert os.listdir(tmp_path) == []


def test_what_runs_before_replacing_runs_once_the_content_is_made_and_a_failure_keeps_the_old_file(tmp_path):
    """A scan's summary is made first and replaces the old one right after its lengths do (``before_replacing``):
    a failure there leaves the old file, renamed over or written in place (a FIFO), and is named as the file's."""
    path = tmp_path / "s.json"
    path.write_bytes(b"old")
    seen = []
    write_atomic(path, b"new", before_replacing=lambda: seen.append(path.read_bytes()))
    assert seen == [b"old"] and path.read_bytes() == b"new"  # called with the old content still in place

    def broken():
        raise ValueError("hook failed")

    for target in (path, tmp_path / "fifo"):
        if target.name == "fifo":
            os.mkfifo(target)
        with pytest.raises(FreqlabError, match=rf"{target.name}: cannot write \(ValueError: hook failed\)$"):
            write_atomic(target, b"newer", before_replacing=broken)
    assert path.read_bytes() == b"new" and sorted(os.listdir(tmp_path)) == ["fifo", "s.json"]


def test_a_folder_in_the_way_is_one_line_naming_the_file(tmp_path):
    (tmp_path / "t.parquet").mkdir()
    with pytest.raises(FreqlabError, match=r"t\.parquet: cannot write \(Is a directory\)$"):
        write_parquet(tmp_path / "t.parquet", FRAME)
    assert os.listdir(tmp_path) == ["t.parquet"]


def test_a_symbolic_link_is_written_through_and_kept(tmp_path):
    (tmp_path / "target.parquet").write_bytes(b"old")
    (tmp_path / "link.parquet").symlink_to("target.parquet")
    write_parquet(tmp_path / "link.parquet", FRAME)
    assert (tmp_path / "link.parquet").is_symlink()
    assert read_parquet(tmp_path / "target.parquet")[0].equals(FRAME)


def test_a_fifo_or_a_pipe_is_written_in_place_not_replaced(tmp_path):
    # a rename would put a regular file where the FIFO was (its reader waiting forever), and cannot replace
    # /dev/fd/N of a shell's >(...)
    fifo = tmp_path / "fifo.parquet"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_parquet(fifo, FRAME)
    reader.join(timeout=30)
    assert fifo.is_fifo() and received and received[0].startswith(b"PAR1")
    read_end, write_end = os.pipe()
    try:
        write_atomic(f"/dev/fd/{write_end}", b"through the pipe")
        assert os.read(read_end, 100) == b"through the pipe"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_file_replaced_keeps_its_mode(tmp_path):
    path = tmp_path / "private.parquet"
    write_parquet(path, FRAME)
    path.chmod(0o600)
    write_parquet(path, FRAME.head(1))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and read_parquet(path)[0].height == 1


@pytest.mark.parametrize(
    "name, message",
    [
        ("folder/", r"folder/: cannot write \(it names a folder: give a file's name\)$"),
        ("a_file/.", r"a_file/\.: cannot write \(it names a folder: give a file's name\)$"),  # pathlib: a_file
        ("new/..", r"new/\.\.: cannot write \(it names a folder: give a file's name\)$"),
        ("a_file/x.parquet", r"x\.parquet: cannot write \(Not a directory\)$"),
    ],
)
def test_a_path_that_cannot_be_a_file_is_one_line(tmp_path, name, message):
    (tmp_path / "a_file").write_bytes(b"")
    with pytest.raises(FreqlabError, match=message):
        write_parquet(f"{tmp_path}/{name}", FRAME)
    assert sorted(os.listdir(tmp_path)) == ["a_file"]


def test_a_long_name_and_a_bytes_path_are_written(tmp_path):
    long = tmp_path / ("x" * 247 + ".parquet")  # 255 bytes: the temporary file's name cannot add to it
    write_parquet(long, FRAME)
    write_atomic(os.fsencode(tmp_path / "b.json"), b"{}")
    assert sorted(os.listdir(tmp_path)) == ["b.json", long.name]


def test_a_read_only_file_is_refused_and_special_bits_are_not_copied(tmp_path):
    read_only = tmp_path / "read_only.parquet"
    write_parquet(read_only, FRAME)
    read_only.chmod(0o444)
    if os.access(read_only, os.W_OK):  # root writes anything: the rule is the shell's, checked with access()
        pytest.skip("this process may write a read-only file")
    with pytest.raises(FreqlabError, match=r"read_only\.parquet: cannot write \(Permission denied\)$"):
        write_parquet(read_only, FRAME)


def test_the_mode_kept_drops_setuid_setgid_and_sticky(tmp_path):
    path = tmp_path / "bits.parquet"
    write_parquet(path, FRAME)
    path.chmod(0o6755)
    write_parquet(path, FRAME)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_a_symbolic_link_loop_is_one_line(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(FreqlabError, match=r"a \(a link to .*\): cannot write \(Too many levels of symbolic links\)$"):
        write_parquet(tmp_path / "a", FRAME)
    assert (tmp_path / "a").is_symlink()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root replaces another's file")
def test_a_file_root_replaces_stays_its_owners(tmp_path):
    path = tmp_path / "theirs.parquet"
    write_parquet(path, FRAME)
    os.chown(path, 12345, 12345)
    write_parquet(path, FRAME)
    assert (path.stat().st_uid, path.stat().st_gid) == (12345, 12345)


def test_a_symbolic_link_to_a_folder_is_refused_and_kept(tmp_path):
    # the rename replaced the link with a file (mode copied from the folder's); the shell's > says so too
    (tmp_path / "folder").mkdir()
    (tmp_path / "summary.json").symlink_to("folder")
    with pytest.raises(FreqlabError, match=r"summary\.json \(a link to .*folder\): cannot write \(Is a directory\)$"):
        write_atomic(tmp_path / "summary.json", b"{}")
    assert (tmp_path / "summary.json").is_symlink() and os.listdir(tmp_path / "folder") == []


def test_links_are_followed_as_the_kernel_follows_them(tmp_path):
    # a link to a link, a relative link, and .. after a link: up from where the link led, not from its name
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "real" / "t.json").write_bytes(b"old")
    (tmp_path / "jump").symlink_to(tmp_path / "real" / "deep")
    (tmp_path / "first").symlink_to("second")
    (tmp_path / "second").symlink_to("jump/../t.json")
    write_atomic(tmp_path / "first", b"new")
    assert (tmp_path / "real" / "t.json").read_bytes() == b"new"
    assert (tmp_path / "first").is_symlink() and (tmp_path / "second").is_symlink()


def test_a_writer_that_fails_in_place_leaves_the_old_content(tmp_path, monkeypatch):
    # a file that may be written but not replaced (its folder not writable here) is written in place: the content is
    # made first, so a failing writer leaves the file as it was
    path = tmp_path / "t.json"
    path.write_bytes(b"old content")
    folder = str(tmp_path)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if os.fspath(p) == folder else real_access(p, mode))

    def half(tmp: str) -> None:
        with open(tmp, "wb") as out:
            out.write(b"HALF")
        raise ValueError("disk on fire")

    with pytest.raises(FreqlabError, match=r"t\.json: cannot write \(ValueError: disk on fire\)$"):
        write_atomic(path, writer=half)
    assert path.read_bytes() == b"old content"
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new" and os.listdir(tmp_path) == ["t.json"]


def test_an_interrupt_landing_in_the_clean_up_leaves_no_temporary_file(tmp_path, monkeypatch):
    # polars passes a Ctrl-C on as KeyboardInterrupt, and Python raises its own at the next instruction: the second
    # one landed in the clean-up and left a 20 MB temporary file
    real_unlink, calls = os.unlink, []

    def unlink(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real_unlink(path, *args, **kwargs)

    def interrupted(tmp: str) -> None:
        monkeypatch.setattr(os, "unlink", unlink)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "t.parquet", writer=interrupted)
    assert os.listdir(tmp_path) == [] and len(calls) == 2


def test_an_owner_that_cannot_be_given_is_no_error(tmp_path, monkeypatch):
    # root in a user namespace (rootless containers) or on NFS with root_squash may not chown: the shell's > writes
    path = tmp_path / "t.json"
    path.write_bytes(b"old")

    def refuse(*args, **kwargs):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "chown", refuse)
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="planting another user's link needs root")
@pytest.mark.parametrize("name", ["shared/evil", "mine", "a/../plain/evil"])
def test_another_users_link_in_a_shared_folder_is_not_followed(tmp_path, name):
    # the kernel's protected_symlinks rule, which a rename onto the resolved path would get around: the link itself,
    # a link of one's own to it, and .. after a link (up from where the link led, not lexically)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (tmp_path / "victim").write_bytes(b"precious")
    (shared / "evil").symlink_to(tmp_path / "victim")
    os.lchown(shared / "evil", 12345, 12345)
    (tmp_path / "mine").symlink_to(shared / "evil")
    (tmp_path / "plain").mkdir()  # not shared: where a/../plain/evil leads only lexically
    (tmp_path / "elsewhere" / "inner").mkdir(parents=True)
    (tmp_path / "a").symlink_to(tmp_path / "elsewhere" / "inner")
    (tmp_path / "elsewhere" / "plain").symlink_to(shared)  # where a/../plain leads
    with pytest.raises(FreqlabError, match=r"cannot write \(another user's symbolic link in a shared folder"):
        write_parquet(tmp_path / name, FRAME)
    assert (tmp_path / "victim").read_bytes() == b"precious"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="planting another user's link needs root")
def test_another_users_link_to_a_fifo_or_a_device_is_not_followed_either(tmp_path):
    # what is no regular file is written in place through its links: the rule holds there too (a link to a disk)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    os.mkfifo(tmp_path / "fifo")
    (shared / "out.parquet").symlink_to(tmp_path / "fifo")
    os.lchown(shared / "out.parquet", 12345, 12345)
    with pytest.raises(FreqlabError, match=r"cannot write \(another user's symbolic link in a shared folder"):
        write_atomic(shared / "out.parquet", b"never read")  # would block on the FIFO, had it been opened


def test_a_temporary_file_whose_clean_up_an_interrupt_cut_short_is_removed_at_exit(tmp_path):
    # the interrupt can land before the clean-up's first instruction (the one polars passes on, then Python's own)
    import subprocess
    import sys

    code = f"""
import freqlab.files as files
def interrupted(tmp):
    raise KeyboardInterrupt
def cut_short(path):
    raise KeyboardInterrupt
files._remove = cut_short
try:
    files.write_atomic({str(tmp_path / "t.parquet")!r}, writer=interrupted)
except KeyboardInterrupt:
    import os
    print(sorted(os.listdir({str(tmp_path)!r})))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("['.t.parquet.") and done.stdout.strip().endswith(".tmp']")  # left...
    assert os.listdir(tmp_path) == []  # ...until the exit


def test_a_path_through_a_missing_folder_and_back_is_refused_as_the_kernel_refuses_it(tmp_path):
    # new/../x would make new/ and write x; the kernel walks no further than a missing folder
    with pytest.raises(FreqlabError, match=r"new/\.\./x\.json: cannot write \(No such file or directory\)$"):
        write_atomic(tmp_path / "new" / ".." / "x.json", b"{}")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("points_to", "reason"),
    [("name/", "Is a directory"), ("name/.", "Is a directory"), ("name/..", "No such file or directory")],
)
def test_a_dangling_link_to_a_folder_name_writes_no_file(tmp_path, points_to, reason):
    (tmp_path / "out.json").symlink_to(points_to)
    with pytest.raises(FreqlabError, match=rf"out\.json \(a link to .*\): cannot write \({reason}\)$"):
        write_atomic(tmp_path / "out.json", b"{}")
    assert sorted(os.listdir(tmp_path)) == ["out.json"]


def test_stdout_redirected_to_a_file_is_written_at_its_place_not_replaced(tmp_path):
    """A review: `{ echo HEADER; freqlab plot ... --out /dev/stdout; echo TRAILER; } > f` (or `>> f`) lost HEADER
    and TRAILER: /dev/stdout led to f, which a new file was renamed over. Written into stdout, as `cat` writes."""
    import subprocess
    import sys

    write = f"{sys.executable} -c \"from freqlab.files import write_atomic as w; w('/dev/stdout', b'DATA', None)\""
    writer = (
        f'{sys.executable} -c "from freqlab.files import write_atomic as w; '
        "w('/dev/stdout', writer=lambda p: open(p, 'wb').write(b'MADE'))\""
    )
    out = tmp_path / "f"
    subprocess.run(f"{{ echo HEADER; {write}; {writer}; echo TRAILER; }} > {out}", shell=True, check=True)
    assert out.read_bytes() == b"HEADER\nDATAMADETRAILER\n"
    out.write_bytes(b"OLD\n")
    subprocess.run(f"{write} >> {out}", shell=True, check=True)
    assert out.read_bytes() == b"OLD\nDATA"
    piped = subprocess.run(f"{write} | cat", shell=True, check=True, capture_output=True)
    assert piped.stdout == b"DATA"


def test_a_link_whose_target_cannot_be_written_is_named_with_its_target(tmp_path):
    """A review: the error named the link alone, where the README promised its target."""
    link = tmp_path / "out.parquet"
    link.symlink_to("/proc/freqlab-none/x.parquet")
    with pytest.raises(FreqlabError) as error:
        write_atomic(link, b"x")
    assert str(error.value).startswith(f"{link} (a link to /proc/freqlab-none/x.parquet): cannot write (")
    blocked = tmp_path / "b.parquet"  # its target's folder is a file: refused before anything is made
    (tmp_path / "afile").write_text("x")
    blocked.symlink_to(tmp_path / "afile" / "f.parquet")
    with pytest.raises(FreqlabError, match=rf"b\.parquet \(a link to {tmp_path}/afile/f\.parquet\): cannot write"):
        write_atomic(blocked, b"x")
    dangling = tmp_path / "d.parquet"
    dangling.symlink_to(tmp_path / "made" / "x.parquet")  # written through, its folder made
    write_atomic(dangling, b"x")
    assert dangling.is_symlink() and (tmp_path / "made" / "x.parquet").read_bytes() == b"x"
