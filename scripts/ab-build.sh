# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/ab.sh and scripts/ab-cli.sh (not run on its own).
#
# ab_build_both NAME BASE_REV OUT TARGET: checks BASE_REV out in a worktree
# under OUT and builds TARGET in Release there (into OUT/build-base) and in
# the working tree (into build-release). Sets rev to BASE_REV's short id.
# The worktree is removed on exit, after running the command in
# ab_cleanup, if the caller set one.
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
ab_build_both() {
  local name=$1 base=$2 out=$3 target=$4 pair
  rev=$(git rev-parse --short "$base")
  ab_tree=$out/base-$rev
  git worktree add --detach "$ab_tree" "$rev" >/dev/null 2>&1 || { echo "$name: cannot check out $base" >&2; exit 1; }
  trap 'git worktree remove --force "$ab_tree" >/dev/null 2>&1 || true; eval "${ab_cleanup:-}"' EXIT
  echo "$name: building base $rev and the working tree" >&2
  for pair in "$ab_tree:$out/build-base" ".:build-release"; do
    release_build "${pair%%:*}" "${pair#*:}" "$target"
  done
}
