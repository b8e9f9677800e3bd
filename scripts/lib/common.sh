# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts (not run on its own): the one way each kind of
# tree is configured and built, so that scripts sharing a build directory
# never reconfigure it with different options.
#
# release_build SRC BUILD TARGET...: an optimized build (Release) of the
# source tree SRC into BUILD, of the given targets only. Tests stay
# configured (chunkstore-torture is one) but are built only if asked for.
release_build() {
  local src=$1 build=$2
  shift 2
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCHUNKSTORE_BUILD_TESTS=ON >/dev/null
  cmake --build "$build" -j"$(nproc)" --target "$@" >/dev/null
}

# install_packages PKG...: installs the Debian packages not yet present
# (the peers and tools a measuring script compares against).
install_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# release_tools TARGET...: what a measuring script starts with: the Debian
# packages, then the targets built into build-release.
release_tools() {
  scripts/install-deps.sh
  release_build . build-release "$@"
  warn_if_busy
}

# warn_if_busy: a measurement taken beside other busy processes (a test
# server left running spends a good part of a core while idle) says more
# about them than about chunkstore. Names any process that used more than
# a tenth of a core over one second; warns, does not stop.
warn_if_busy() {
  local busy
  busy=$(top -b -n 2 -d 1 -w 200 2>/dev/null |
    awk '/^top -/{n++} n==2 && $1 ~ /^[0-9]+$/ && $9+0 > 10 && $12 != "top" {printf "  %s (pid %s, %s%% of a core)\n", $12, $1, $9}')
  if [ -n "$busy" ]; then
    echo "warning: other processes are busy; the figures will be lower and noisier:" >&2
    echo "$busy" >&2
  fi
}
