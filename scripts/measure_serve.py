#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""serve and copy against their own yardsticks, whole processes, in
alternating rounds (medians with min-max, ratios per round):

- a full GET of a 256 MiB object through `serve` (curl to /dev/null)
  against `chunkstore cat REF > /dev/null` of the same object, with the
  CPU time of each (the GET's: the server's and curl's), and the bound it
  sets: no GET can take less than its CPU time over the cores. The server
  is warm: two GETs before the rounds proved the object's id and brought
  its chunks into the cache of verified chunks. Each round also starts a
  fresh server and times its first GET (read from the packs, the id
  proven) and its second (the chunks brought into the cache);
- the floor of a GET that hashes every byte (a first GET), whatever the
  server: the SHA-256 of every byte (chunkstore-bench codec-sha256, one
  thread) plus what moving the bytes to curl over loopback costs with no
  server work at all (a bare HTTP responder that sendfile()s the raw
  file, and curl), over the cores;
- `chunkstore --store http://HOST:PORT cat` of it (a served store read as
  a bucket, every chunk verified by the client) against the local `cat`;
- 32 KiB GETs at random offsets of that object, 8 keep-alive clients (wrk,
  2 threads), warm: requests per second;
- `copy` of 1 GiB of new data from one directory store into a new one
  against a durable `publish` of the same bytes into a new store, and the
  same copy to a store served with `--allow-write` (`http://`, pushes);
- `copy` of a second version with a one-byte edit: chunks sent.

The payload is pseudo-random (incompressible). Writes
docs/measurements/serve-DATE.json (see scripts/report.py)."""
import argparse
import datetime
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_peers import ROOT, write_measurement  # noqa: E402

WRK_SCRIPT = """
math.randomseed(os.time())
request = function()
  local size = %d
  local first = math.random(0, size - 32768)
  wrk.headers["Range"] = "bytes=" .. first .. "-" .. (first + 32767)
  return wrk.format("GET", "%s")
end
"""


def timed(cmd, **kw):
    os.sync()
    start = time.perf_counter()
    subprocess.run(cmd, check=True, **kw)
    return time.perf_counter() - start


def timed_cpu(cmd, **kw):
    """Wall time and the CPU time (user + system) the command used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = timed(cmd, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def process_cpu(pid):
    """CPU time (user + system) a running process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# A bare HTTP/1.1 responder: every request gets the file's bytes, sent by
# the kernel from the page cache (sendfile), nothing checked. What it and
# curl spend is the cost of the transfer alone.
BARE_SERVER = """
import os, socket, sys
path = sys.argv[1]
size = os.path.getsize(path)
fd = os.open(path, os.O_RDONLY)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    req = b""
    while b"\\r\\n\\r\\n" not in req:
        got = c.recv(4096)
        if not got:
            break
        req += got
    c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n" % size)
    off = 0
    while off < size:
        off += os.sendfile(c.fileno(), fd, off, size - off)
    c.close()
"""


def stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "samples": values}


def payload(path, mib):
    """mib MiB of pseudo-random (incompressible) bytes."""
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunkstore", required=True)
    ap.add_argument("--bench", help="chunkstore-bench, for the SHA-256 floor (none: not measured)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--wrk-seconds", type=int, default=10)
    args = ap.parse_args()
    exe = os.path.abspath(args.chunkstore)
    work = tempfile.mkdtemp(prefix="chunkstore-serve-", dir="/var/tmp")
    try:
        obj = os.path.join(work, "obj")
        payload(obj, 256)
        store = os.path.join(work, "store")
        subprocess.run([exe, "--store", store, "-q", "publish", "--name", "obj", obj], check=True)
        oid = subprocess.run([exe, "--store", store, "--json", "stat", "obj"], check=True, capture_output=True,
                             text=True).stdout
        oid = json.loads(oid)["id"]

        def start_server():
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                p = sock.getsockname()[1]
            proc = subprocess.Popen([exe, "--store", store, "-q", "serve", "--listen", f"127.0.0.1:{p}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            return proc, p

        def get_with_cpu(proc, url):
            before = process_cpu(proc.pid)
            wall, curl_cpu = timed_cpu(["curl", "-s", "-o", "/dev/null", url])
            return wall, curl_cpu + process_cpu(proc.pid) - before

        server, port = start_server()
        url = f"http://127.0.0.1:{port}/objects/{oid}"
        for _ in range(2):  # the id proven, then the chunks in the cache
            subprocess.run(["curl", "-s", "-o", "/dev/null", url], check=True)
        lua = os.path.join(work, "ranges.lua")
        with open(lua, "w") as f:
            f.write(WRK_SCRIPT % (256 << 20, f"/objects/{oid}"))
        cat_s, get_s, get_ratio, rps = [], [], [], []
        first_s, first_ratio, first_cpu, fill_s, fill_ratio = [], [], [], [], []
        cat_cpu, get_cpu, get_bound = [], [], []
        bare_cpu, bare_s = [], []
        bare = subprocess.Popen([sys.executable, "-c", BARE_SERVER, obj], stdout=subprocess.PIPE, text=True)
        bare_url = f"http://127.0.0.1:{bare.stdout.readline().strip()}/"
        http_s, http_ratio = [], []
        devnull = open(os.devnull, "wb")
        http_env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
        http_store = f"http://127.0.0.1:{port}"
        subprocess.run([exe, "--store", http_store, "ls"], check=True, env=http_env, stdout=devnull)  # its cache
        for rnd in range(args.rounds):
            pair = [("cat", lambda: timed_cpu([exe, "--store", store, "cat", oid], stdout=devnull)),
                    ("get", lambda: get_with_cpu(server, url))]
            if rnd % 2:
                pair.reverse()
            got = {name: fn() for name, fn in pair}
            cat_s.append(got["cat"][0])
            get_s.append(got["get"][0])
            get_ratio.append(got["cat"][0] / got["get"][0])
            cat_cpu.append(got["cat"][1])
            get_cpu.append(got["get"][1])
            # However the work is spread, a GET takes at least its CPU time
            # (server and client) over the cores.
            get_bound.append(got["cat"][0] / (got["get"][1] / os.cpu_count()))
            fresh, fresh_port = start_server()
            fresh_url = f"http://127.0.0.1:{fresh_port}/objects/{oid}"
            wall, cpu = get_with_cpu(fresh, fresh_url)
            first_s.append(wall)
            first_cpu.append(cpu)
            first_ratio.append(got["cat"][0] / wall)
            fill_s.append(get_with_cpu(fresh, fresh_url)[0])
            fill_ratio.append(got["cat"][0] / fill_s[-1])
            fresh.terminate()
            fresh.wait()
            before = process_cpu(bare.pid)
            wall, curl_cpu = timed_cpu(["curl", "-s", "-o", "/dev/null", bare_url])
            bare_s.append(wall)
            bare_cpu.append(curl_cpu + process_cpu(bare.pid) - before)
            http_s.append(timed([exe, "--store", http_store, "cat", oid], stdout=devnull, env=http_env))
            http_ratio.append(got["cat"][0] / http_s[-1])
            out = subprocess.run(["wrk", "-t", "2", "-c", "8", "-d", f"{args.wrk_seconds}s", "-s", lua,
                                  f"http://127.0.0.1:{port}"], check=True, capture_output=True, text=True).stdout
            rps.append(float(next(line.split()[1] for line in out.splitlines() if line.startswith("Requests/sec"))))
            print(f"measure_serve: round {rnd + 1}: cat {got['cat'][0]:.3f} s ({got['cat'][1]:.3f} s CPU), "
                  f"GET {got['get'][0]:.3f} s ({got['get'][1]:.3f} s CPU, server and curl), "
                  f"first GET {first_s[-1]:.3f} s, second {fill_s[-1]:.3f} s, "
                  f"http store cat {http_s[-1]:.3f} s, {rps[-1]:,.0f} range requests/s", flush=True)
        server.terminate()
        server.wait()
        bare.terminate()
        bare.wait()
        sha_s = None
        if args.bench:
            report = os.path.join(work, "sha.json")
            subprocess.run([args.bench, "--size", "1MiB", "--codec-input", obj, "--only", "^codec-sha256$",
                            "--warmups", "1", "--samples", "5", "--json", report], check=True, stdout=devnull)
            with open(report) as f:
                sha_s = next(r for r in json.load(f)["results"] if r["name"] == "codec-sha256")["median_ms"] / 1000

        # copy: 1 GiB of new data, against a durable publish of it.
        big = os.path.join(work, "big")
        payload(big, 1024)
        src = os.path.join(work, "src")
        subprocess.run([exe, "--store", src, "-q", "publish", "--name", "big", big], check=True)
        copy_s, publish_s, copy_ratio = [], [], []
        push_s, push_ratio = [], []
        token = os.path.join(work, "token")
        with open(token, "w") as f:
            f.write("measure-serve-token-0123456789\n")
        for rnd in range(args.rounds):
            dst = os.path.join(work, f"dst{rnd}")
            fresh = os.path.join(work, f"fresh{rnd}")
            # A store served with writes allowed, which copy reaches as http://.
            served = os.path.join(work, f"served{rnd}")
            subprocess.run([exe, "--store", served, "-q", "init"], check=True)
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                wport = sock.getsockname()[1]
            writer = subprocess.Popen([exe, "--store", served, "-q", "serve", "--listen", f"127.0.0.1:{wport}",
                                       "--allow-write", "--token-file", token],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            push_env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, f"push-cache{rnd}"))
            trio = [("copy", lambda: timed([exe, "--store", src, "-q", "copy", "--to", dst])),
                    ("publish", lambda: timed([exe, "--store", fresh, "-q", "publish", big])),
                    ("push", lambda: timed([exe, "--store", src, "-q", "copy", "--to", f"http://127.0.0.1:{wport}",
                                            "--token-file", token], env=push_env))]
            trio = trio[rnd % 3:] + trio[:rnd % 3]
            got = {name: fn() for name, fn in trio}
            writer.terminate()
            writer.wait()
            copy_s.append(got["copy"])
            publish_s.append(got["publish"])
            copy_ratio.append(got["publish"] / got["copy"])
            push_s.append(got["push"])
            push_ratio.append(got["publish"] / got["push"])
            for d in (dst, fresh, served, push_env["XDG_CACHE_HOME"]):
                shutil.rmtree(d)
            print(f"measure_serve: round {rnd + 1}: copy {got['copy']:.3f} s, publish {got['publish']:.3f} s, "
                  f"copy to http {got['push']:.3f} s", flush=True)
        # A one-byte edit, copied after the first version.
        dst = os.path.join(work, "dst-edit")
        subprocess.run([exe, "--store", src, "-q", "copy", "--to", dst], check=True)
        with open(big, "r+b") as f:
            f.seek(600 << 20)
            b = f.read(1)
            f.seek(600 << 20)
            f.write(bytes([b[0] ^ 1]))
        subprocess.run([exe, "--store", src, "-q", "publish", "--name", "big", big], check=True)
        edit = json.loads(subprocess.run([exe, "--store", src, "--json", "copy", "--to", dst], check=True,
                                         capture_output=True, text=True).stdout)
        out = {
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
            "rounds": args.rounds,
            "git_commit": subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                                         capture_output=True, text=True).stdout.strip(),
            "nproc": os.cpu_count(),
            "serve": {"cat_s": stats(cat_s), "get_s": stats(get_s), "get_vs_cat": stats(get_ratio),
                      "cat_cpu_s": stats(cat_cpu), "get_cpu_s": stats(get_cpu), "get_vs_cat_cpu_bound": stats(get_bound),
                      "http_store_cat_s": stats(http_s), "http_store_cat_vs_cat": stats(http_ratio),
                      "range_32k_requests_per_s": stats(rps), "object_bytes": 256 << 20,
                      "first_get_s": stats(first_s), "first_get_vs_cat": stats(first_ratio),
                      "first_get_cpu_s": stats(first_cpu), "fill_get_s": stats(fill_s),
                      "fill_get_vs_cat": stats(fill_ratio),
                      "bare_get_s": stats(bare_s), "bare_get_cpu_s": stats(bare_cpu),
                      **({"sha256_cpu_s": sha_s} if sha_s else {}),
                      "wrk": f"wrk -t 2 -c 8 -d {args.wrk_seconds}s, 32 KiB ranges at random offsets"},
            "copy": {"copy_s": stats(copy_s), "publish_s": stats(publish_s), "copy_vs_publish": stats(copy_ratio),
                     "copy_to_http_s": stats(push_s), "copy_to_http_vs_publish": stats(push_ratio),
                     "bytes": 1 << 30, "edit_chunks_sent": edit["chunks_sent"],
                     "edit_chunks_skipped": edit["chunks_skipped"]},
            "notes": "whole processes on one machine (server and clients share its cores); payload pseudo-random "
                     "and in the page cache; cat and GET to /dev/null alternate in each round, and copy, "
                     "publish (a durable publish into a new store, the same bytes) and copy to a store served "
                     "with --allow-write (http://) rotate; ratios per round "
                     "(cat time / GET time, publish time / copy time)",
        }
        print("measure_serve: wrote", write_measurement("serve", out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
