"""Runs a command as an ordinary user, as CI's root can: `python as_user.py UID -- CMD...`.

The Python runtime may live where other users cannot reach it (CI's Python is under root's 0700
home). In a private mount namespace, each such closed directory is covered by an empty tmpfs of
mode 755 into which only the entries on the way to the runtime and the checkout are bound back,
so the user can run this Python and nothing else of root's becomes visible. Then the command runs
under UID with no supplementary groups and no capabilities.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _closed_ancestor(path: Path) -> tuple[Path, str] | None:
    """The outermost directory on the way to `path` that others cannot pass, and the entry below it."""
    parts = path.resolve().parts
    for i in range(1, len(parts)):
        here = Path(*parts[:i])
        if not os.stat(here).st_mode & 0o001:
            return here, parts[i]
    return None


def mount_script() -> str:
    needed: dict[Path, set[str]] = {}
    for path in (Path(sys.base_prefix), Path(sys.prefix), ROOT):
        found = _closed_ancestor(path)
        if found:
            needed.setdefault(found[0], set()).add(found[1])
    lines = ["set -e", "stage=$(mktemp -d)"]
    for k, (closed, entries) in enumerate(sorted(needed.items())):
        lines += [
            f"mkdir -p $stage/{k}",
            f"mount --bind '{closed}' $stage/{k}",
            f"mount -t tmpfs -o mode=755 tmpfs '{closed}'",
        ]
        for entry in sorted(entries):
            lines += [f"mkdir -p '{closed}/{entry}'", f'mount --bind "$stage/{k}/{entry}" "{closed}/{entry}"']
        lines.append(f"umount -l $stage/{k}")
    return "\n".join(lines)


def main() -> int:
    uid = int(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1 :]
    setpriv = [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]
    script = mount_script() + '\nexec "$@"'
    return subprocess.call(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *setpriv, *command]
    )


if __name__ == "__main__":
    sys.exit(main())
