#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs every command example of README.md's "Using the command" block, in
order, against a fresh store, so the README cannot promise what the command
does not do. The inputs the examples name (model.bin, data.csv, a dataset
directory, a disk image published as vm/disk, big.iso) are made first; the
id prefix the examples use stands for model.bin's id. Each command must exit
0, and the publish output must look as the README shows it. A server
(`... &`) must answer and a mount (`chunkstore mount DIR &`, which needs
FUSE) must show the names; both are stopped at the end.
Usage: readme_examples.py CHUNKSTORE README.md"""
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def main(exe, readme):
    text = open(readme, encoding="utf-8").read()
    block = text.split("## Using the command", 1)[1].split("```", 2)[1]
    examples = [line[2:] for line in block.splitlines() if line.startswith("$ ")]
    shown_output = [line for line in block.splitlines() if line.startswith("sha256:")]
    if len(examples) < 15:
        sys.exit(f"readme_examples: only {len(examples)} examples found; has the README's block moved?")
    work = tempfile.mkdtemp(prefix="chunkstore-readme-")
    rng = random.Random(5)
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir)
    os.symlink(os.path.abspath(exe), os.path.join(bindir, "chunkstore"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
               CHUNKSTORE_DIR=os.path.join(work, "store"), XDG_CACHE_HOME=os.path.join(work, "cache"))

    def write(name, data):
        path = os.path.join(work, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    write("model.bin", rng.randbytes(300000))
    write("data.csv", b"".join(b"%d,%d\n" % (i, i * i) for i in range(20000)))
    write("big.iso", rng.randbytes(1 << 20))
    write("dataset/train/part-0001.csv", b"a,b\n1,2\n")
    write("dataset/README", b"a dataset\n")
    os.symlink("README", os.path.join(work, "dataset", "LINK"))
    os.makedirs(os.path.join(work, "dataset", "empty"))
    write("disk.raw", rng.randbytes(4096) + bytes(1 << 20) + rng.randbytes(4096))
    subprocess.run([exe, "publish", "-q", "--name", "vm/disk", os.path.join(work, "disk.raw")], env=env, check=True)
    model_id = subprocess.run([exe, "publish", "-q", "--json", os.path.join(work, "model.bin")], env=env, check=True,
                              capture_output=True, text=True).stdout
    model_id = re.search(r'"id":"sha256:([0-9a-f]{64})"', model_id).group(1)
    failures = 0
    background = []
    mounts = []
    port = None  # the server's, once one is started: later examples speak to it
    for ex in examples:
        command = re.sub(r"\s+# .*$", "", ex).replace("5f1c0a2b", model_id[:8])
        if port is not None:
            command = command.replace(":8080", f":{port}")
        if command.endswith("&") and command.startswith("chunkstore mount "):
            # A mount: on an empty directory, checked to show the names,
            # unmounted at the end.
            mnt = os.path.join(work, command.split()[2])
            os.makedirs(mnt, exist_ok=True)
            proc = subprocess.Popen(["bash", "-c", "exec " + command[:-1]], cwd=work, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            background.append(proc)
            mounts.append(mnt)
            for _ in range(100):
                if os.path.ismount(mnt):
                    break
                time.sleep(0.1)
            ok = os.path.ismount(mnt) and "data" in os.listdir(mnt)
            print(f"{'ok  ' if ok else 'FAIL'} {command}")
            failures += not ok
            continue
        if command.endswith("&"):
            # A server: started on a free port, checked to answer, stopped at the end.
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            command = command[:-1].strip().replace(":8080", f":{port}")
            proc = subprocess.Popen(["bash", "-c", "exec " + command], cwd=work, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            background.append(proc)
            ok = False
            for _ in range(50):
                time.sleep(0.1)
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/names", timeout=5) as r:
                        ok = r.status == 200
                    break
                except OSError:
                    continue
            print(f"{'ok  ' if ok else 'FAIL'} {command} &")
            failures += not ok
            continue
        p = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True)
        p.stdout = p.stdout.decode(errors="replace")
        p.stderr = p.stderr.decode(errors="replace")
        ok = p.returncode == 0
        if ok and command == "chunkstore publish model.bin":
            # As the README shows it: the id, two spaces, the input.
            ok = p.stdout == f"sha256:{model_id}  model.bin\n" and all(
                line.startswith("sha256:") and line.endswith("  model.bin") for line in shown_output)
        print(f"{'ok  ' if ok else 'FAIL'} {command}" + ("" if ok else f"\n     exit {p.returncode}: {p.stderr.strip()}"))
        failures += not ok
    for mnt in mounts:
        subprocess.run(["fusermount3", "-u", mnt])
    for proc in background:
        proc.terminate()
        proc.wait(timeout=10)
    subprocess.run(["rm", "-rf", work])
    if failures:
        sys.exit(f"readme_examples: {failures} of {len(examples)} examples failed")
    print(f"readme_examples: all {len(examples)} examples ran")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
