"""Output files: atomic for regular files, in place for devices and FIFOs, through symlinks, with the umask;
a failed write leaves the old file whole and no temporary file behind."""

from __future__ import annotations

import os
import stat
import threading

import pytest

from cgtool.errors import CgtoolError
from cgtool.render.files import check_writable, write_output

IS_ROOT = os.geteuid() == 0


def _no_temp_files(folder) -> bool:
    return not [p for p in os.listdir(folder) if p.startswith(".")]


def test_a_new_file_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_output(str(tmp_path / "a.txt"), "hello\n")
        os.umask(0o002)
        write_output(str(tmp_path / "b.txt"), b"bytes\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a.txt").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(tmp_path / "b.txt").st_mode) == 0o664
    assert (tmp_path / "a.txt").read_text() == "hello\n"


def test_replacing_a_file_keeps_its_mode(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    os.chmod(path, 0o640)
    write_output(str(path), "new")
    assert path.read_text() == "new" and stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert _no_temp_files(tmp_path)


def test_a_symlink_survives_and_its_target_receives_the_output(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    written = write_output(str(link), "new")
    assert os.path.islink(link) and os.readlink(link) == str(target)
    assert target.read_text() == "new" and written == str(target)


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "later.txt")
    write_output(str(link), "made")
    assert os.path.islink(link) and (tmp_path / "later.txt").read_text() == "made"


def test_a_fifo_is_written_in_place_and_its_reader_gets_the_text(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    write_output(str(fifo), "through the pipe\n")
    reader.join(timeout=10)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_pipe_behind_proc_self_fd_is_written_in_place():
    r, w = os.pipe()
    try:
        write_output(f"/proc/self/fd/{w}", "to the pipe")
        os.close(w)
        assert os.read(r, 100) == b"to the pipe"
    finally:
        os.close(r)


def device(tmp_path, name: str, minor: int) -> str:
    """A character device to write to. As root, a copy made with mknod: if the writer ever replaced it again,
    the machine's own /dev/null or /dev/full must not be what a test run destroys. Otherwise the real one,
    which a user cannot replace."""
    if not IS_ROOT:
        return f"/dev/{name}"
    path = tmp_path / name
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    return str(path)


def test_a_character_device_stays_a_device(tmp_path):
    null = device(tmp_path, "null", 3)  # /dev/null's numbers
    before = os.stat(null)
    write_output(null, "gone\n")
    after = os.stat(null)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert _no_temp_files(tmp_path)


def test_a_full_device_is_a_clear_environment_error(tmp_path):
    full = device(tmp_path, "full", 7)  # /dev/full's numbers
    with pytest.raises(CgtoolError) as info:
        write_output(full, "x" * 100_000)
    assert info.value.exit_code == 3 and "No space left on device" in info.value.message
    assert stat.S_ISCHR(os.stat(full).st_mode)


def test_a_full_disk_leaves_the_old_file_whole_and_no_temporary_file(tiny_disk):
    path = tiny_disk / "report.json"
    path.write_text("the old report\n")
    with pytest.raises(CgtoolError) as info:
        write_output(str(path), "x" * 200_000)
    assert info.value.exit_code == 3 and "No space left" in info.value.message
    assert path.read_text() == "the old report\n"
    assert _no_temp_files(tiny_disk)


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(CgtoolError) as info:
        write_output(str(tmp_path), "x")
    assert info.value.exit_code == 2 and "is a folder" in info.value.message


def test_a_missing_folder_is_an_environment_error(tmp_path):
    with pytest.raises(CgtoolError) as info:
        write_output(str(tmp_path / "nope" / "x.txt"), "x")
    assert info.value.exit_code == 3
    with pytest.raises(CgtoolError):
        check_writable(str(tmp_path / "nope" / "x.txt"), "-o")


@pytest.mark.skipif(IS_ROOT, reason="root may write anything")
def test_a_read_only_file_is_refused_not_replaced(tmp_path):
    path = tmp_path / "ro.txt"
    path.write_text("keep")
    os.chmod(path, 0o444)
    with pytest.raises(CgtoolError):
        write_output(str(path), "new")
    assert path.read_text() == "keep"


def test_devices_and_fifos_pass_the_early_check(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    check_writable(str(fifo), "-o")
    check_writable(device(tmp_path, "null", 3), "-o")
