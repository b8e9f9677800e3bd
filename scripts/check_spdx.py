#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that every source, build and script file of the project carries
the SPDX line of its licence (LICENSE, Apache-2.0) in its first lines:
`// SPDX-License-Identifier: Apache-2.0` in C++, `# ...` elsewhere (after
a #! line). With --fix, adds the line where it is missing. Exits 1 naming
each file without it."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "SPDX-License-Identifier: Apache-2.0"
CPP = (".cc", ".h")
HASH = (".py", ".sh", ".cmake", ".in")


def wanted(path):
    if path.startswith(("tests/golden/", "tests/data/", "docs/measurements/")):
        return False
    base = os.path.basename(path)
    return path.endswith(CPP + HASH) or base == "CMakeLists.txt" or path == ".ci/run"


def main():
    fix = "--fix" in sys.argv[1:]
    try:
        files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):  # a copy without git: every file but builds
        files = []
        for d, subdirs, names in os.walk(ROOT):
            subdirs[:] = [s for s in subdirs if not s.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
    missing = []
    for f in filter(wanted, files):
        path = os.path.join(ROOT, f)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        lines = text.split("\n")
        if any(TAG in line for line in lines[:3]):
            continue
        missing.append(f)
        if fix:
            line = ("// " if f.endswith(CPP) else "# ") + TAG
            at = 1 if lines and lines[0].startswith("#!") else 0
            lines.insert(at, line)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines))
    if missing and not fix:
        for f in missing:
            print(f"check_spdx: {f} has no '{TAG}' line", file=sys.stderr)
        return 1
    if fix:
        print(f"check_spdx: added the line to {len(missing)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
