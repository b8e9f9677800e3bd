#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The generated man pages and completion scripts (cli/generate.cc): one
# page per command, each rendering without groff warnings and holding the
# command's flags and examples; bash completion of commands, nested
# commands, flags and the store's names; a zsh script that parses.
#
# Usage: man_completion_test.sh CHUNKSTORE GENERATED_DIR (build/cli)
set -euo pipefail
cs=$1 gen=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every command has its page, and every page renders cleanly.
for cmd in init publish cat mount stat ls log tag rm gc verify stats chunks index index-rebuild repair repair-quarantine; do
  page=$gen/man/chunkstore-$cmd.1
  [ -f "$page" ] || fail "no man page for $cmd"
done
[ -f "$gen/man/chunkstore.1" ] || fail "no chunkstore.1"
for page in "$gen"/man/*.1; do
  out=$(groff -man -Tutf8 -ww "$page" 2>&1 >/dev/null) || fail "groff failed on $page"
  [ -z "$out" ] || fail "groff warns on $page: $out"
done
# The page says what --help says: each flag of publish, and its examples.
text=$(groff -man -Tutf8 -P-cbou "$gen/man/chunkstore-publish.1" 2>/dev/null)
for want in "--name NAME" "--name-prefix P" "EXAMPLES" "chunkstore publish model.bin --name weights/llama"; do
  grep -qF -- "$want" <<<"$text" || fail "chunkstore-publish.1 lacks '$want'"
done
help=$("$cs" publish --help)
grep -qF "chunkstore publish model.bin --name weights/llama" <<<"$help" || fail "--help and the man page differ"
# A page for a command that is not one does not exist.
[ ! -e "$gen/man/chunkstore-help.1" ] || fail "a page for a command that is not one"

# bash: complete as a user's shell would, with the real function.
complete_words() {  # words... (the last is the one being completed)
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _chunkstore
  echo "${COMPREPLY[*]}"
}
# shellcheck disable=SC1090
source "$gen/completion/chunkstore"
export PATH="$(dirname "$cs"):$PATH"
[ "$(complete_words chunkstore publ)" = publish ] || fail "publ does not complete to publish"
[ "$(complete_words chunkstore index re)" = rebuild ] || fail "index re does not complete to rebuild"
[ "$(complete_words chunkstore --store /x rep)" = repair ] || fail "a global option's value was taken for a command"
got=$(complete_words chunkstore publish --na)
[ "$got" = "--name --name-prefix" ] || fail "publish --na completes to '$got'"
# Names in the store given with --store.
store=$work/store
head -c 5000 /dev/urandom >"$work/f"
"$cs" --store "$store" -q publish "$work/f" --name weights/llama
"$cs" --store "$store" -q publish "$work/f" --name data/set
[ "$(complete_words chunkstore --store "$store" cat weig)" = weights/llama ] || fail "cat weig does not complete a name"
[ "$(complete_words chunkstore --store "$store" tag d)" = data/set ] || fail "tag d does not complete a name"
# Files where a command takes paths.
touch "$work/model.bin"
[ "$(complete_words chunkstore publish "$work/mod")" = "$work/model.bin" ] || fail "publish does not complete files"

# zsh: the function parses.
zsh -n "$gen/completion/_chunkstore" || fail "the zsh completion does not parse"
echo "man pages and completion: ok"
