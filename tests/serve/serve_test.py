#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`chunkstore serve` against real clients: curl (whole objects, single,
suffix, open and multiple ranges, HEAD, If-None-Match, If-Range, many
objects at once with --parallel) and Python's urllib (concurrent clients,
every byte checked), a slow client that must not hold up the others,
writes with and without the token, copies to a served store (only what
it lacks; forged pushes refused), the store opened from another
process as an http:// store (ls, cat, restore, verify, copy; writes
refused; new publishes seen), the S3 answers under /blobs to crafted
requests, a damaged pack that must end a transfer short rather than
deliver other bytes, and that an http:// reader reports by object, and a
crafted index whose chunk list is another object's: a whole GET must not
come from the cache path before a read has proven the id.
Usage: serve_test.py CHUNKSTORE [SOAK_SECONDS]"""
import base64
import email.parser
import hashlib
import http.client
import json
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

EXE = os.path.abspath(sys.argv[1])
SOAK = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL", what, flush=True)


def cs(store, *args, stdin=None):
    r = subprocess.run([EXE, "--store", store] + list(args), input=stdin, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"chunkstore {' '.join(args)}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
    return r.stdout


class Server:
    def __init__(self, store, *extra):
        self.p = subprocess.Popen([EXE, "--store", store, "--json", "serve", "--listen", "127.0.0.1:0"] + list(extra),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.p.stdout.readline().decode()
        self.url = json.loads(line)["url"]
        self.log = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.p.stderr:
            self.log.append(line.decode(errors="replace"))

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=10)


class PushBreaker:
    """A proxy in front of a server: it forwards every request but a push,
    each on a connection of its own, and answers a push with `reply`, takes
    a little of its body and breaks the connection, as a server that dies
    mid-upload does."""

    def __init__(self, upstream_url, reply):
        host, port = upstream_url.split("//", 1)[1].rsplit(":", 1)
        self.upstream = (host, int(port))
        self.reply = reply
        self.pushes = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _serve(self, c):
        with c:
            head = b""
            while b"\r\n\r\n" not in head:
                data = c.recv(65536)
                if not data:
                    return
                head += data
            hdr, _, rest = head.partition(b"\r\n\r\n")
            lines = hdr.split(b"\r\n")
            if lines[0].startswith(b"POST ") and b"/push" in lines[0]:
                self.pushes += 1
                c.sendall(self.reply)
                c.settimeout(1)  # a small push came whole with its head
                try:
                    c.recv(65536)
                except OSError:
                    pass
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                return
            lines = [ln for ln in lines if not ln.lower().startswith(b"connection:")] + [b"Connection: close"]
            with socket.create_connection(self.upstream) as up:
                up.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + rest)
                t = threading.Thread(target=self._pipe, args=(c, up), daemon=True)
                t.start()
                self._pipe(up, c)

    def stop(self):
        self.sock.close()


def run(store, *args, cache=None, stdin=None):
    """chunkstore with its own cache directory (for http:// stores)."""
    env = dict(os.environ)
    if cache:
        env["XDG_CACHE_HOME"] = cache
    return subprocess.run([EXE, "--store", store] + list(args), input=stdin, capture_output=True, env=env)


def xxh64(data, seed=0):
    """XXH64 (what a manifest's check is made of, docs/format.md), to craft
    index rows."""
    p1, p2, p3, p4, p5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                          0x27D4EB2F165667C5)
    m = (1 << 64) - 1

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & m

    def rnd(acc, lane):
        return (rotl((acc + lane * p2) & m, 31) * p1) & m

    n, i = len(data), 0
    if n >= 32:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed, (seed - p1) & m]
        while i + 32 <= n:
            for k in range(4):
                v[k] = rnd(v[k], int.from_bytes(data[i + 8 * k:i + 8 * k + 8], "little"))
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
        for k in range(4):
            h = ((h ^ rnd(0, v[k])) * p1 + p4) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, int.from_bytes(data[i:i + 8], "little")), 27) * p1 + p4) & m
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (int.from_bytes(data[i:i + 4], "little") * p1 & m), 23) * p2 + p3) & m
        i += 4
    while i < n:
        h = (rotl(h ^ (data[i] * p5 & m), 11) * p1) & m
        i += 1
    h = ((h ^ (h >> 33)) * p2) & m
    h = ((h ^ (h >> 29)) * p3) & m
    return h ^ (h >> 32)


def curl(*args):
    return subprocess.run(["curl", "-s", "-S"] + list(args), capture_output=True)


def get(url, headers=None, method="GET"):
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def main():
    work = tempfile.mkdtemp(prefix="chunkstore-serve-")
    store = os.path.join(work, "store")
    rng = random.Random(1)
    big = rng.randbytes(6 << 20)
    small = b"hello, chunkstore\n"
    with open(os.path.join(work, "big"), "wb") as f:
        f.write(big)
    cs(store, "-q", "publish", "--name", "models/big", os.path.join(work, "big"))
    cs(store, "-q", "publish", "--name", "notes/hello", "-", stdin=small)
    os.makedirs(os.path.join(work, "tree/sub"))
    with open(os.path.join(work, "tree/sub/f.txt"), "wb") as f:
        f.write(b"in a tree\n")
    cs(store, "-q", "publish", "--name", "site", os.path.join(work, "tree"))
    big_id = "sha256:" + hashlib.sha256(big).hexdigest()
    srv = Server(store)
    u = srv.url
    try:
        # Whole objects, by id and by name, with curl.
        r = curl("-o", os.path.join(work, "got"), "-D", "-", f"{u}/objects/{big_id}")
        check(r.returncode == 0, "curl GET by id")
        with open(os.path.join(work, "got"), "rb") as f:
            check(f.read() == big, "whole object by id: same bytes")
        hdr = r.stdout.decode()
        check("Cache-Control: public, max-age=31536000, immutable" in hdr, "immutable for objects by id")
        check(f'ETag: "{big_id}"' in hdr, "ETag")
        digest = base64.b64encode(hashlib.sha256(big).digest()).decode()
        check(f"Repr-Digest: sha-256=:{digest}:" in hdr, "Repr-Digest")
        check("Accept-Ranges: bytes" in hdr, "Accept-Ranges")
        status, h, body = get(f"{u}/names/notes/hello")
        check(status == 200 and body == small, "GET by name")
        check(h.get("Cache-Control") == "no-cache", "names are not cached")
        status, h, body = get(f"{u}/names/site:sub/f.txt")
        check(status == 200 and body == b"in a tree\n", "a path inside a tree")
        # HEAD.
        status, h, body = get(f"{u}/names/models/big", method="HEAD")
        check(status == 200 and body == b"" and h.get("Content-Length") == str(len(big)), "HEAD")
        # Ranges: single, open, suffix, past the end, several.
        for rng_hdr, want in [("bytes=10-19", big[10:20]), ("bytes=6291000-", big[6291000:]),
                              ("bytes=-7", big[-7:]), ("bytes=100-99999999999", big[100:])]:
            status, h, body = get(f"{u}/objects/{big_id}", {"Range": rng_hdr})
            check(status == 206 and body == want, f"range {rng_hdr}")
        status, h, body = get(f"{u}/objects/{big_id}", {"Range": "bytes=0-3,1000-1003,5000000-5000009"})
        check(status == 206 and h["Content-Type"].startswith("multipart/byteranges"), "multi-range is multipart")
        msg = email.parser.BytesParser().parsebytes(b"Content-Type: " + h["Content-Type"].encode() + b"\r\n\r\n" + body)
        parts = [(p["Content-Range"], p.get_payload(decode=True)) for p in msg.get_payload()]
        check(parts == [(f"bytes 0-3/{len(big)}", big[0:4]), (f"bytes 1000-1003/{len(big)}", big[1000:1004]),
                        (f"bytes 5000000-5000009/{len(big)}", big[5000000:5000010])], "multipart parts")
        status, h, body = get(f"{u}/objects/{big_id}", {"Range": f"bytes={len(big)}-"})
        check(status == 416 and h.get("Content-Range") == f"bytes */{len(big)}", "416 for a range past the end")
        status, h, body = get(f"{u}/objects/{big_id}", {"Range": "bytes=oops"})
        check(status == 200 and len(body) == len(big), "a malformed range is ignored")
        # Conditional requests.
        r = curl("-o", "/dev/null", "-w", "%{http_code}", "-H", f'If-None-Match: "{big_id}"', f"{u}/objects/{big_id}")
        check(r.stdout == b"304", "If-None-Match gives 304")
        status, h, body = get(f"{u}/objects/{big_id}", {"Range": "bytes=0-9", "If-Range": '"sha256:other"'})
        check(status == 200 and len(body) == len(big), "If-Range that does not match gives everything")
        status, h, body = get(f"{u}/objects/{big_id}", {"Range": "bytes=0-9", "If-Range": f'"{big_id}"'})
        check(status == 206 and body == big[:10], "If-Range that matches gives the range")
        # Listing, errors.
        status, h, body = get(f"{u}/names?prefix=models/")
        check(status == 200 and [n["name"] for n in json.loads(body)["names"]] == ["models/big"], "listing")
        check(get(f"{u}/names/nothing")[0] == 404, "unknown name: 404")
        check(get(f"{u}/objects/sha256:1234")[0] == 400, "malformed id: 400")
        check(get(f"{u}/elsewhere")[0] == 404, "unknown path: 404")
        check(get(f"{u}/objects", method="PUT")[0] == 405, "writes are off by default")
        # An object removed from the store (rm, then gc) is no longer served
        # by id once the server's last finding of it in the index is a
        # second old, however often it was asked for.
        gone = random.Random(2).randbytes(3 << 20)
        gone_id = "sha256:" + hashlib.sha256(gone).hexdigest()
        cs(store, "-q", "publish", "--name", "tmp/gone", "-", stdin=gone)
        for a in (0, 1 << 20, 2 << 20):
            status, h, body = get(f"{u}/objects/{gone_id}", {"Range": f"bytes={a}-{a + 9}"})
            check(status == 206 and body == gone[a:a + 10], "a range of an object about to go")
        cs(store, "-q", "rm", "tmp/gone")
        cs(store, "-q", "gc")
        time.sleep(1.2)
        for a in (0, 1 << 20, 2 << 20):
            check(get(f"{u}/objects/{gone_id}", {"Range": f"bytes={a}-{a + 9}"})[0] == 404,
                  "an object rm and gc removed: 404 a second later")
        # Many objects at once.
        urls = []
        for i in range(8):
            urls += ["-o", os.path.join(work, f"par{i}"), f"{u}/objects/{big_id}"]
        r = curl("--parallel", "--parallel-max", "8", *urls)
        check(r.returncode == 0, "curl --parallel")
        for i in range(8):
            with open(os.path.join(work, f"par{i}"), "rb") as f:
                check(f.read() == big, f"parallel download {i}")
        # A slow client (headers trickling in) does not hold up the others.
        slow = socket.create_connection(("127.0.0.1", int(u.rsplit(":", 1)[1])))
        slow.sendall(b"GET /objects/")
        t0 = time.time()
        ok = all(get(f"{u}/names/notes/hello")[2] == small for _ in range(20))
        check(ok and time.time() - t0 < 5, "others are served while a client is slow")
        slow.close()
        # Concurrent clients for a while, every byte checked.
        errors, done = [], [0]
        stop_at = time.time() + SOAK

        def client(seed):
            local = random.Random(seed)
            while time.time() < stop_at:
                a = local.randrange(len(big))
                b = min(len(big) - 1, a + local.randrange(1, 65536))
                status, h, body = get(f"{u}/objects/{big_id}", {"Range": f"bytes={a}-{b}"})
                if status != 206 or body != big[a:b + 1]:
                    errors.append((a, b, status))
                done[0] += 1

        threads = [threading.Thread(target=client, args=(s,)) for s in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(not errors, f"16 clients for {SOAK:.0f} s: {len(errors)} errors in {done[0]} requests")
        print(f"serve_test: 16 clients, {done[0]} range requests in {SOAK:.0f} s, {len(errors)} errors", flush=True)
        time.sleep(0.5)  # access lines are written out every 100 ms
        logged = sum(f'"GET /objects/{big_id}"' in line and " 206 " in line for line in srv.log)
        check(logged >= done[0], f"an access log line per request: {logged} lines for {done[0]} requests")
    finally:
        srv.stop()

    # Writes: only with --allow-write, only with the token.
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write("0123456789abcdef0123456789abcdef\n")
    srv = Server(store, "--allow-write", "--token-file", token)
    u = srv.url
    try:
        r = curl("-X", "PUT", "--data-binary", "payload", "-o", "/dev/null", "-w", "%{http_code}", f"{u}/objects")
        check(r.stdout == b"401", "a write without the token: 401")
        r = curl("-X", "PUT", "-H", "Authorization: Bearer wrong-token-wrong-token", "--data-binary", "payload",
                 "-o", "/dev/null", "-w", "%{http_code}", f"{u}/objects")
        check(r.stdout == b"401", "a write with another token: 401")
        r = curl("-X", "PUT", "-H", "Authorization: Bearer 0123456789abcdef0123456789abcdef",
                 "--data-binary", "@" + os.path.join(work, "big"), f"{u}/objects?name=uploaded/big")
        reply = json.loads(r.stdout)
        check(reply.get("id") == big_id and reply.get("name") == "uploaded/big", "a write with the token: 201 and the id")
        check(get(f"{u}/names/uploaded/big")[2] == big, "what was written reads back")
    finally:
        srv.stop()

    # copy --to http://: only what the server's store lacks, each push
    # checked whole by the server before it commits.
    pushed = os.path.join(work, "pushed")
    cs(pushed, "-q", "init")
    srv = Server(pushed, "--allow-write", "--token-file", token)
    u = srv.url
    pcache = os.path.join(work, "push-cache")
    try:
        r = run(store, "copy", "--to", u, cache=pcache)
        check(r.returncode == 2 and b"token" in r.stderr, f"copy to http without a token is a usage error: {r.stderr!r}")
        wrong = os.path.join(work, "wrong-token")
        with open(wrong, "w") as f:
            f.write("not-the-token-not-the-token\n")
        r = run(store, "copy", "--to", u, "--token-file", wrong, cache=pcache)
        check(r.returncode == 5 and b"401" in r.stderr, f"copy to http with another token: access denied: {r.stderr!r}")
        short = os.path.join(work, "short-token")
        with open(short, "w") as f:
            f.write("too-short\n")
        r = run(store, "copy", "--to", u, "--token-file", short, cache=pcache)
        check(r.returncode == 2 and b"shorter than 16" in r.stderr, f"a short token is a usage error: {r.stderr!r}")
        two = os.path.join(work, "two-line-token")
        with open(two, "w") as f:
            f.write("0123456789abcdef\n0123456789abcdef\n")
        r = run(store, "copy", "--to", u, "--token-file", two, cache=pcache)
        check(r.returncode == 2 and b"more than one line" in r.stderr,
              f"a token of two lines (a header it could inject) is a usage error: {r.stderr!r}")
        # A server that breaks the connection during a push: after an
        # interim 100 Continue the error is the transfer's, not a refusal
        # "(HTTP 100)"; a refusal that came before the break is the answer.
        for reply, code, want in [(b"HTTP/1.1 100 Continue\r\n\r\n", 1, b"cannot send a push to"),
                                  (b"HTTP/1.1 403 Forbidden\r\nContent-Length: 100\r\n\r\nnot you\n", 5,
                                   b"refused a push (HTTP 403): not you")]:
            proxy = PushBreaker(u, reply)
            try:
                r = run(store, "copy", "--to", proxy.url, "--token-file", token, cache=pcache)
            finally:
                proxy.stop()
            check(proxy.pushes >= 1 and r.returncode == code and want in r.stderr and b"HTTP 100" not in r.stderr,
                  f"a push broken after {reply[:24]!r}: exit {r.returncode} {r.stderr[-300:]!r}")
        check(run(pushed, "ls").stdout == b"", "refused copies added nothing")
        r = run(store, "--json", "copy", "--to", u, "--token-file", token, cache=pcache)
        rep = json.loads(r.stdout or b"{}")
        check(r.returncode == 0 and rep.get("chunks_sent", 0) > 0, f"copy to http: {r.stderr[-300:]!r}")
        check(run(pushed, "ls").stdout == run(store, "ls").stdout, "the server's store has every name")
        check(run(pushed, "cat", "models/big").stdout == big, "copied to http, read back on the server")
        check(run(pushed, "cat", "site:sub/f.txt").stdout == b"in a tree\n", "a tree copied to http")
        check(run(pushed, "verify").returncode == 0, "the server's store verifies")
        r = run(store, "--json", "copy", "--to", u, "--token-file", token, cache=pcache)
        rep = json.loads(r.stdout or b"{}")
        check(r.returncode == 0 and rep.get("chunks_sent") == 0 and rep.get("name_versions") == 0
              and rep.get("requests") == 0, f"copy to http again sends nothing, in no request: {rep}")
        edited = bytearray(big)
        edited[3 << 20] ^= 1
        with open(os.path.join(work, "edited"), "wb") as f:
            f.write(edited)
        cs(store, "-q", "publish", "--name", "models/big", os.path.join(work, "edited"))
        env = dict(os.environ, CHUNKSTORE_TOKEN_FILE=token, XDG_CACHE_HOME=pcache)
        r = subprocess.run([EXE, "--store", store, "--json", "copy", "--to", u, "models/big"], capture_output=True,
                           env=env)
        rep = json.loads(r.stdout or b"{}")
        check(r.returncode == 0 and 1 <= rep.get("chunks_sent", 99) <= 2 and rep.get("name_versions") == 1
              and rep.get("requests") == 1,
              f"a one-byte edit sends at most 2 chunks to http (token from $CHUNKSTORE_TOKEN_FILE): {rep} {r.stderr!r}")
        check(run(pushed, "cat", "models/big").stdout == bytes(edited), "the edit reads back on the server")
        cs(store, "-q", "publish", "--name", "models/big", os.path.join(work, "big"))  # back, for what follows
        # A forged push (an object that is not its id) is refused whole.
        before = run(pushed, "ls").stdout
        forged_id = hashlib.sha256(b"the real content").digest()
        body = b"CKPUSH1\0" + b"I" + forged_id + b"\0" + (6).to_bytes(4, "little") + b"forged"
        body += b"N" + (6).to_bytes(2, "little") + b"forged" + forged_id + (0).to_bytes(8, "little")
        body += b"E" + (2).to_bytes(8, "little")
        with open(os.path.join(work, "forged"), "wb") as f:
            f.write(body)
        r = curl("-X", "POST", "-H", "Authorization: Bearer 0123456789abcdef0123456789abcdef", "--data-binary",
                 "@" + os.path.join(work, "forged"), "-w", "%{http_code}", f"{u}/push")
        check(r.stdout.endswith(b"422") and b"Corruption" in r.stdout, f"a forged push: 422 {r.stdout[-200:]!r}")
        r = curl("-X", "POST", "--data-binary", "@" + os.path.join(work, "forged"), "-o", "/dev/null", "-w",
                 "%{http_code}", f"{u}/push")
        check(r.stdout == b"401", "a push without the token: 401")
        check(run(pushed, "ls").stdout == before, "refused pushes changed nothing")
        check(any("refused a push" in line for line in srv.log), "a refused push is logged")
    finally:
        srv.stop()
    # --max-upload-mib: a larger body is 413, whether declared or streamed,
    # and nothing of it is kept.
    capped = os.path.join(work, "capped")
    cs(capped, "-q", "init")
    srv = Server(capped, "--allow-write", "--token-file", token, "--max-upload-mib", "1")
    try:
        auth = "Authorization: Bearer 0123456789abcdef0123456789abcdef"
        r = curl("-X", "PUT", "-H", auth, "--data-binary", "@" + os.path.join(work, "big"), "-w", "%{http_code}",
                 f"{srv.url}/objects?name=too/big")
        check(r.stdout.endswith(b"413") and b"max-upload-mib" in r.stdout, f"a declared large upload: 413 {r.stdout!r}")
        r = curl("-X", "PUT", "-H", auth, "-H", "Transfer-Encoding: chunked", "--data-binary",
                 "@" + os.path.join(work, "big"), "-o", "/dev/null", "-w", "%{http_code}", f"{srv.url}/objects")
        check(r.stdout == b"413", f"a streamed large upload: 413 {r.stdout!r}")
        r = run(store, "copy", "--to", srv.url, "--token-file", token, "models/big", cache=os.path.join(work, "cc"))
        check(r.returncode != 0 and b"413" in r.stderr, f"a copy whose push is too large fails: {r.stderr!r}")
        r = curl("-X", "PUT", "-H", auth, "--data-binary", "small", f"{srv.url}/objects?name=small")
        check(b'"name":"small"' in r.stdout, f"a small upload is still taken: {r.stdout!r}")
        check(run(capped, "ls").stdout.count(b"\n") == 1, "only the small upload was kept")
    finally:
        srv.stop()
    # To a served store that cuts otherwise: objects travel whole, cut there.
    small = os.path.join(work, "small-edits")
    cs(small, "-q", "init", "--profile", "small-edits")
    srv = Server(small, "--allow-write", "--token-file", token)
    try:
        r = run(store, "--json", "copy", "--to", srv.url, "--token-file", token, "models/big",
                cache=os.path.join(work, "small-cache"))
        rep = json.loads(r.stdout or b"{}")
        check(r.returncode == 0 and rep.get("bytes_sent", 0) >= len(big), f"copy to http, cut otherwise: {rep}")
        st = json.loads(run(small, "--json", "stat", "models/big").stdout or b"{}")
        check(st.get("chunks", 0) > 30, f"the server cut it as it cuts (64 KiB on average): {st.get('chunks')}")
        check(run(small, "cat", "models/big").stdout == big, "cut otherwise, read back on the server")
    finally:
        srv.stop()

    # The store from another process, as an http:// store.
    srv = Server(store)
    u = srv.url
    cache = os.path.join(work, "cache")
    try:
        local_ls = run(store, "ls").stdout
        r = run(u, "ls", cache=cache)
        check(r.returncode == 0 and r.stdout == local_ls, f"ls over http matches ls: {r.stderr[-300:]!r}")
        r = run(u, "cat", "models/big", cache=cache)
        check(r.returncode == 0 and r.stdout == big, "cat over http")

        def pack_gets():
            time.sleep(0.3)  # the log is read on another thread
            return sum('"GET /blobs/packs/' in line for line in srv.log)

        before = pack_gets()
        check(before > 0, "cat over http fetched chunks")
        r = run(u, "cat", "models/big", cache=cache)
        check(r.returncode == 0 and r.stdout == big and pack_gets() == before,
              "a second cat over http reads the chunks the first fetched from the disk cache, with no request")
        r = run(u, "--cache-size", "0", "cat", "models/big", cache=cache)
        check(r.returncode == 0 and r.stdout == big and pack_gets() > before, "--cache-size 0 fetches again")
        r = run(u, "restore", "site", os.path.join(work, "site-out"), cache=cache)
        with open(os.path.join(work, "site-out/sub/f.txt"), "rb") as f:
            check(r.returncode == 0 and f.read() == b"in a tree\n", "restore over http")
        r = run(u, "verify", cache=cache)
        check(r.returncode == 0 and r.stdout.startswith(b"ok:"), f"verify over http: {r.stdout!r}")
        mirror = os.path.join(work, "mirror")
        r = run(u, "copy", "--to", mirror, cache=cache)
        check(r.returncode == 0, f"copy from http: {r.stderr[-300:]!r}")
        check(run(mirror, "cat", "uploaded/big").stdout == big, "copied from http, read back")
        check(run(mirror, "ls").stdout == local_ls, "the copy has every name")
        r = run(u, "publish", "--name", "notes/hello", "-", cache=cache, stdin=b"not allowed")
        check(r.returncode != 0 and b"read-only" in r.stderr, f"publishing to an http store is refused: {r.stderr!r}")
        r = run(u, "rm", "notes/hello", cache=cache)
        check(r.returncode != 0, "removing from an http store is refused")
        check(run(store, "ls").stdout == local_ls, "refused writes changed nothing")
        cs(store, "-q", "publish", "--name", "notes/later", "-", stdin=b"published while served\n")
        r = run(u, "cat", "notes/later", cache=cache)
        check(r.returncode == 0 and r.stdout == b"published while served\n", "a new publish is seen over http")
        # /blobs against crafted requests.
        r = curl("-X", "PUT", "--data-binary", "x", "-w", "%{http_code}", f"{u}/blobs/config")
        check(r.stdout.endswith(b"403") and b"AccessDenied" in r.stdout, "a blob write: 403 AccessDenied")
        r = curl("-X", "DELETE", "-o", "/dev/null", "-w", "%{http_code}", f"{u}/blobs/config")
        check(r.stdout == b"403", "a blob delete: 403")
        for path in ["/blobs/../index.db", "/blobs/index.db", "/blobs/log/LOCK", "/blobs/packs/../config",
                     "/blobs//etc/passwd", "/blobs/packs/pack-%2e%2e.pack", "/blobs/log/..%2f..%2fconfig"]:
            r = curl("--path-as-is", "-o", "/dev/null", "-w", "%{http_code}", u + path)
            check(r.stdout in (b"404", b"400"), f"{path}: {r.stdout!r}")
        status, h, body = get(f"{u}/blobs?list-type=2&prefix=packs/")
        check(status == 200 and b"<Key>packs/pack-" in body and b"<Key>config" not in body, "ListObjectsV2 by prefix")
        status, h, body = get(f"{u}/blobs?list-type=1")
        check(status == 400, "only ListObjectsV2")
        status, h, body = get(f"{u}/blobs/config", {"Range": "bytes=0-3"})
        check(status == 206 and len(body) == 4 and h.get("Content-Range", "").startswith("bytes 0-3/"), "a ranged blob")
        status, h, body = get(f"{u}/blobs/config", {"Range": "bytes=999999-"})
        check(status == 416, "a blob range past the end: 416")
    finally:
        srv.stop()

    # Damage: a transfer ends short, never with other bytes.
    packs = sorted(os.path.join(store, "packs", p) for p in os.listdir(os.path.join(store, "packs")))
    biggest = max(packs, key=os.path.getsize)

    def damage():
        with open(biggest, "r+b") as f:
            f.seek(os.path.getsize(biggest) // 2)
            b = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([b[0] ^ 0x55]))

    # A whole object is read from its packs (proving its id) until a reader
    # of it has proven it; then it is brought into the cache of verified
    # chunks, and sent from there: damage to the packs after that changes
    # nothing it sends.
    srv = Server(store)
    try:
        for i in range(3):
            status, h, body = get(f"{srv.url}/objects/{big_id}")
            check(status == 200 and body == big, f"whole GET {i + 1} of a popular object")
            # The server puts the reader back once the response is done,
            # which may be after the client has every byte.
            time.sleep(0.3)
        damage()
        status, h, body = get(f"{srv.url}/objects/{big_id}")
        check(status == 200 and body == big, "sent from verified memory, whatever happened to its pack since")
    finally:
        srv.stop()
    srv = Server(store)
    u = srv.url
    try:
        r = curl("-o", os.path.join(work, "damaged"), f"{u}/objects/{big_id}")
        with open(os.path.join(work, "damaged"), "rb") as f:
            got = f.read()
        check(r.returncode != 0, "curl sees the transfer fail")
        check(len(got) < len(big) and big[:len(got)] == got, "only verified bytes were sent before it ended")
        try:
            urllib.request.urlopen(f"{u}/objects/{big_id}", timeout=30).read()
            check(False, "urllib sees the transfer fail")
        except Exception:
            pass
        time.sleep(0.2)
        check(any("damage" in line or "stopped sending" in line for line in srv.log), "the damage is logged")
        check(any(big_id in line for line in srv.log if "stopped" in line or "damage" in line), "naming the object")
        # An http:// reader verifies what it is sent, and says what is damaged.
        r = run(u, "cat", big_id, cache=os.path.join(work, "cache2"))
        check(r.returncode != 0 and len(r.stdout) < len(big) and big[:len(r.stdout)] == r.stdout,
              "cat over http stops before damaged bytes")
        check(big_id.encode() in r.stderr and b"chunk" in r.stderr, f"and names the object and chunk: {r.stderr!r}")
    finally:
        srv.stop()

    # A crafted index: object a's row lists the chunks of b, which differs
    # from a only in its first byte (so the chunks have the lengths a's
    # have), with b's chain states and a check made for a. Each chunk is
    # intact, so only the whole read's proof of a's id can catch it: a
    # whole GET must end short, never send b's bytes complete as a's
    # (a pooled reader that has not proven its id must not serve a whole
    # GET through the cache path, which checks chunks one by one).
    forged = os.path.join(work, "crafted-index")
    a = rng.randbytes(3 << 20)
    b = bytes([a[0] ^ 1]) + a[1:]
    for name, data in (("a", a), ("b", b)):
        cs(forged, "-q", "publish", "--name", name, "-", stdin=data)
    a_id, b_id = (hashlib.sha256(x).digest() for x in (a, b))
    db = sqlite3.connect(os.path.join(forged, "index.db"))
    with db:
        (listed,) = db.execute("SELECT manifest FROM objects WHERE id = ?", (b_id,)).fetchone()
        body = listed[:-8]
        tail = xxh64(a_id + len(a).to_bytes(8, "little") + body).to_bytes(8, "little")
        db.execute("UPDATE objects SET manifest = ? WHERE id = ?", (body + tail, a_id))
    db.close()
    r = run(forged, "cat", "sha256:" + b_id.hex())
    check(r.returncode == 0 and r.stdout == b, "b itself still reads")
    # The row passes its check: a range read, which proves no id, gets
    # the chunks it names.
    r = run(forged, "cat", "--length", "10", "sha256:" + a_id.hex())
    check(r.returncode == 0 and r.stdout == b[:10], f"the crafted row is taken: {r.returncode} {r.stderr!r}")
    srv = Server(forged)
    try:
        for i in range(2):
            status, got, short = None, b"", False
            try:
                with urllib.request.urlopen(f"{srv.url}/objects/sha256:{a_id.hex()}", timeout=30) as resp:
                    status = resp.status
                    got = resp.read()
            except http.client.IncompleteRead as e:
                got, short = e.partial, True
            check(status == 200 and short and len(got) < len(a),
                  f"whole GET {i + 1} of an object whose chunk list is another's starts (200) and ends short: "
                  f"{status}, {len(got)} bytes{', all of b' if got == b else ''}")
            time.sleep(0.3)
        time.sleep(0.2)
        check(any("stopped sending" in line and a_id.hex() in line and "does not match its id" in line
                  for line in srv.log), f"the server says why it stopped: {''.join(srv.log)!r}")
    finally:
        srv.stop()
    shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        sys.exit(f"serve_test: {len(FAILURES)} checks failed")
    print("serve_test: all checks passed")


if __name__ == "__main__":
    main()
