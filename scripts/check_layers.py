#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the dependency rule of libstore/src (libstore/src/README.md): a
file includes internal headers only from its own folder and the folders
below it, and only index/ includes <sqlite3.h>. Prints every violation and
exits 1 if there is one."""
import pathlib
import re
import sys

# Lower ranks first; a folder may include its own rank and below, never a
# folder of its own rank other than itself.
RANKS = {
    "base": 0,
    "hash": 1,
    "format": 2,
    "index": 3, "ingest": 3, "backend": 3,
    "log": 4, "packs": 4,
    "bucket": 5,
    "write": 6, "read": 6,
    "maintain": 7,
    "store": 8,
    "tree": 9,
}

def main():
    root = pathlib.Path(__file__).resolve().parent.parent / "libstore" / "src"
    bad = []
    include = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".cc", ".h"):
            continue
        folder = path.relative_to(root).parts[0]
        if folder not in RANKS:
            bad.append(f"{path.relative_to(root)}: folder {folder} has no place in the layer order")
            continue
        for target in include.findall(path.read_text()):
            if target == "sqlite3.h" and folder != "index":
                bad.append(f"{path.relative_to(root)}: includes <sqlite3.h>; only index/ may")
            top = target.split("/")[0]
            if "/" not in target or top not in RANKS or top == folder:
                continue
            if RANKS[top] >= RANKS[folder]:
                bad.append(f"{path.relative_to(root)}: includes {target} ({top} is not below {folder})")
    for b in bad:
        print(b)
    if bad:
        return 1
    print(f"check_layers: {len(RANKS)} folders, no include against the layer order")
    return 0

if __name__ == "__main__":
    sys.exit(main())
