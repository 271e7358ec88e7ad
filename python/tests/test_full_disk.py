"""The engine on a full disk: its work directory on a 2 MB tmpfs (in a private mount namespace, as
root), filled between two batches. A full disk is the host's fault: the verdicts are `error`s
that say so, never a status that blames the candidate, and nothing stays failed once there is room."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"), reason="mounts a small tmpfs: needs root and unshare"
)

SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import tritium

    disk, items = sys.argv[1], json.load(open(sys.argv[2]))
    engine = tritium.Engine(device="cpu", jobs=1, static_check=False, work_dir=os.path.join(disk, "work"))
    first, later = items[:1], items[1:]

    def judge(batch):
        return [(v["status"], v["message"]) for v in engine.evaluate([dict(i, rerun=True) for i in batch])]

    def fill():
        fd = os.open(os.path.join(disk, "filler"), os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"x" * 4096)
        except OSError:
            return fd

    out = {"before": judge(first)}
    fd = fill()
    out["full"] = judge(first + later)  # the first task's reference is held; the later one's is not
    os.close(fd)
    os.remove(os.path.join(disk, "filler"))
    out["freed"] = judge(first + later)
    print(json.dumps(out))
    """
)


def test_a_full_disk_gives_error_verdicts_that_say_so_and_nothing_stays_failed(tmp_path):
    items = [
        {
            "id": name,
            "task": (EXAMPLE_TASKS / "level1" / name).read_text(),
            "code": (EXAMPLE_SOLUTIONS / "level1" / name).read_text(),
        }
        for name in ("01_relu.py", "02_leaky_relu.py")
    ]
    (tmp_path / "items.json").write_text(json.dumps(items))
    (tmp_path / "judge.py").write_text(SCRIPT)
    disk = tmp_path / "disk"
    disk.mkdir()
    judge = f"{sys.executable} {tmp_path / 'judge.py'} {disk} {tmp_path / 'items.json'}"
    shell = f"mount -t tmpfs -o size=2m tmpfs {disk} && exec {judge}"
    r = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", shell],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert [status for status, _ in out["before"]] == ["correct"]
    # Full: the held reference's candidate could not be written, the new task's reference could not run.
    assert [status for status, _ in out["full"]] == ["error", "error"], out["full"]
    written, reference = (message for _, message in out["full"])
    assert "could not write" in written and "No space left on device" in written and "bytes free)" in written
    assert "reference could not run here" in reference and "No space left on device" in reference
    assert [status for status, _ in out["freed"]] == ["correct", "correct"], out["freed"]
