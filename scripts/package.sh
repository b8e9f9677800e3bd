#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package (cmake/package.cmake) into build-deb/: a
# Release build of the library (shared, with its SONAME) and the command,
# installed under /usr. With --install-test, then installs it with dpkg
# (as root), checks the installed command (version, a publish and a
# verified read back, its man pages, completion and pkg-config file), the
# Python package reading the same store, and
# removes the package again.
#
# Usage: scripts/package.sh [--install-test]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_SHARED_LIBS=ON \
  -DCHUNKSTORE_BUILD_TESTS=OFF -DCHUNKSTORE_BUILD_BENCH=OFF -DCHUNKSTORE_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build-deb -j"$(nproc)" >/dev/null
(cd build-deb && cpack -G DEB >/dev/null)
deb=$(ls build-deb/chunkstore_*.deb)
echo "package.sh: built $deb"
dpkg-deb --field "$deb" Package Version Depends
[ "${1:-}" = --install-test ] || exit 0

fail() { echo "package.sh: FAIL: $*" >&2; exit 1; }
dpkg-deb --field "$deb" Depends | grep -q libcurl4 || fail "Depends lacks libcurl4"
dpkg-deb --field "$deb" Depends | grep -q libmicrohttpd12 || fail "Depends lacks libmicrohttpd12"
dpkg-deb --contents "$deb" | grep -q "usr/bin/chunkstore-bench" && fail "the package holds chunkstore-bench"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
$sudo dpkg -i "$deb" >/dev/null || {
  $sudo apt-get install -f -y -qq >/dev/null
  $sudo dpkg -i "$deb" >/dev/null
}
trap '$sudo dpkg -r chunkstore >/dev/null' EXIT
[ "$(command -v chunkstore)" = /usr/bin/chunkstore ] || fail "chunkstore is not /usr/bin/chunkstore"
chunkstore --version | head -1
work=$(mktemp -d)
head -c 3000000 /dev/urandom >"$work/in"
id=$(chunkstore --store "$work/store" publish "$work/in" --name t | cut -d' ' -f1)
[ "$id" = "sha256:$(sha256sum "$work/in" | cut -d' ' -f1)" ] || fail "the id is not the sha256sum"
chunkstore --store "$work/store" cat t -o "$work/out"
cmp "$work/in" "$work/out" || fail "the bytes read back differ"
# serve loads libmicrohttpd only when it starts (cli/mhd_api.h): the
# package's Depends must have brought it.
chunkstore --store "$work/store" --json serve --listen 127.0.0.1:0 >"$work/serve.json" 2>"$work/serve.log" &
served=$!
for _ in $(seq 50); do [ -s "$work/serve.json" ] && break; sleep 0.1; done
url=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$work/serve.json") ||
  fail "serve did not start: $(cat "$work/serve.log")"
curl -sf "$url/names/t" -o "$work/served" || fail "serve did not answer"
kill "$served"
wait "$served" || true
cmp "$work/in" "$work/served" || fail "the bytes served differ"
readelf -d /usr/bin/chunkstore | grep -q "libchunkstore.so.0" || fail "the command does not use the shared library"
for f in /usr/share/man/man1/chunkstore.1.gz /usr/share/man/man1/chunkstore-publish.1.gz \
         /usr/share/bash-completion/completions/chunkstore /usr/share/zsh/vendor-completions/_chunkstore \
         /usr/lib/x86_64-linux-gnu/pkgconfig/chunkstore.pc; do
  [ -f "$f" ] || fail "the package did not install $f"
done
pkg-config --cflags --libs chunkstore | grep -q -- "-lchunkstore" || fail "pkg-config does not know chunkstore"
[ -f /usr/lib/python3/dist-packages/chunkstore/__init__.py ] || fail "the package did not install the Python package"
pyid=$(cd / && /usr/bin/python3 -c 'import sys, chunkstore
with chunkstore.Store.open(sys.argv[1]) as s:
    assert s.cat("t") == open(sys.argv[2], "rb").read()
    print(s.resolve("t"))' "$work/store" "$work/in") || fail "the installed Python package cannot read the store"
[ "$pyid" = "$id" ] || fail "Python resolved t to $pyid, not $id"
rm -rf "$work"
echo "package.sh: installed package works"
