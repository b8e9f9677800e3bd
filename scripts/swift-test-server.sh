#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A one-node OpenStack Swift with the s3api middleware on 127.0.0.1, for the
# S3 tests against a second S3 implementation beside radosgw.
#
#   scripts/swift-test-server.sh start   installs swift-proxy, swift-account,
#                                        swift-container, swift-object and
#                                        memcached from Debian if missing,
#                                        builds a one-device ring, starts
#                                        memcached, the account, container
#                                        and object servers and a proxy with
#                                        s3api and tempauth, and waits until a
#                                        signed PUT and GET work; prints the
#                                        settings as shell exports (also in
#                                        $DIR/env)
#   scripts/swift-test-server.sh stop    ends only the processes start started
#
# Environment: CHUNKSTORE_SWIFT_DIR (default /tmp/chunkstore-swift) holds the
# configuration (etc/), data (srv/), logs (log/) and pid files (run/);
# CHUNKSTORE_SWIFT_PORT (default 8480) is the proxy's port, the account,
# container and object servers and memcached take the four ports above it.
# Everything listens on 127.0.0.1 only. Nothing under /etc/swift is read or
# written and no system service is started: the servers run with swift.conf
# and the rings from $DIR/etc (through $DIR/etc/run_server.py) and log to
# $DIR/log instead of syslog. S3 requests are signed with the tempauth user's
# fixed keys (access key "chunkstore:test").
set -euo pipefail

DIR=${CHUNKSTORE_SWIFT_DIR:-/tmp/chunkstore-swift}
PORT=${CHUNKSTORE_SWIFT_PORT:-8480}
ACCOUNT_PORT=$((PORT + 1))
CONTAINER_PORT=$((PORT + 2))
OBJECT_PORT=$((PORT + 3))
MEMCACHED_PORT=$((PORT + 4))
ACCESS_KEY=chunkstore:test
SECRET_KEY=chunkstoretestsecretkey0123456789abcdef
HERE=$(cd "$(dirname "$0")" && pwd)
ETC=$DIR/etc
# Swift's own interpreter: the Debian python3-swift module is not visible to
# a python3 of pyenv or a virtualenv earlier on PATH.
PY=/usr/bin/python3
SERVERS=(account container object proxy)

log() { echo "swift-test-server: $*" >&2; }

install_packages() {
  local missing=()
  for p in swift-proxy swift-account swift-container swift-object memcached; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The packages' maintainer scripts would start the system's own Swift
  # servers and memcached (on all addresses); where no policy-rc.d already
  # says otherwise, one for the length of the install keeps them stopped.
  local policy=/usr/sbin/policy-rc.d guard="" rc=0
  if [ ! -e "$policy" ]; then
    $sudo sh -c "printf '#!/bin/sh\nexit 101\n' >$policy && chmod 755 $policy"
    guard=1
  fi
  $sudo apt-get update -qq || rc=$?
  [ "$rc" -eq 0 ] && { $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?; }
  [ -n "$guard" ] && $sudo rm -f "$policy"
  [ "$rc" -eq 0 ] || { log "installing ${missing[*]} failed"; return "$rc"; }
}

write_conf() {
  local user
  user=$(id -un)
  cat >"$ETC/swift.conf" <<EOF
[swift-hash]
swift_hash_path_prefix = chunkstore-test
swift_hash_path_suffix = chunkstore-test

[storage-policy:0]
name = Policy-0
default = yes
EOF
  # Settings every server shares. The generous timeouts keep a loaded
  # machine from turning a slow container update into an async pending
  # (which only an updater, not run here, would apply to the listing).
  local common="swift_dir = $ETC
devices = $DIR/srv
mount_check = false
bind_ip = 127.0.0.1
bind_timeout = 5
workers = 0
user = $user
recon_cache_path = $DIR/cache
log_level = INFO
disable_fallocate = true
conn_timeout = 2
node_timeout = 20"
  local s
  for s in account container object; do
    local port_var=${s^^}_PORT
    cat >"$ETC/$s-server.conf" <<EOF
[DEFAULT]
$common
bind_port = ${!port_var}
log_name = $s-server

[pipeline:main]
pipeline = $s-server

[app:$s-server]
use = egg:swift#$s
EOF
  done
  cat >>"$ETC/object-server.conf" <<EOF
container_update_timeout = 20
EOF
  cat >"$ETC/proxy-server.conf" <<EOF
[DEFAULT]
$common
bind_port = $PORT
log_name = proxy-server

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk tempurl ratelimit s3api tempauth copy container-quotas account-quotas slo dlo versioned_writes symlink proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
allow_account_management = true
recoverable_node_timeout = 20

[filter:s3api]
use = egg:swift#s3api
location = us-east-1
# Path-style addressing only: with no storage_domain every request names
# its bucket in the path.
storage_domain =
allow_multipart_uploads = true

[filter:tempauth]
use = egg:swift#tempauth
user_chunkstore_test = $SECRET_KEY .admin

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$MEMCACHED_PORT

[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:healthcheck]
use = egg:swift#healthcheck
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:bulk]
use = egg:swift#bulk
[filter:tempurl]
use = egg:swift#tempurl
[filter:ratelimit]
use = egg:swift#ratelimit
[filter:copy]
use = egg:swift#copy
[filter:container-quotas]
use = egg:swift#container_quotas
[filter:account-quotas]
use = egg:swift#account_quotas
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
[filter:versioned_writes]
use = egg:swift#versioned_writes
[filter:symlink]
use = egg:swift#symlink
EOF
  # Runs one server as swift-SERVER-server would, but with swift.conf from
  # the config file's directory (the servers themselves only ever read
  # /etc/swift/swift.conf) and with log lines to stderr only, not syslog.
  cat >"$ETC/run_server.py" <<'EOF'
import logging
import os
import sys

from swift.common import utils


class NoSyslog(logging.NullHandler):
    def __init__(self, *args, **kwargs):
        super().__init__()


utils.ThreadSafeSysLogHandler = NoSyslog
server, conf = sys.argv[1], os.path.abspath(sys.argv[2])
utils.set_swift_dir(os.path.dirname(conf))
from swift.common import constraints, storage_policy  # noqa: E402
storage_policy.reload_storage_policies()
constraints.reload_constraints()
from swift.common.wsgi import run_wsgi  # noqa: E402
sys.exit(run_wsgi(conf, server + '-server', verbose=True))
EOF
}

# One device, one replica, 2^6 partitions per ring: what swift-ring-builder
# create 6 1 1 / add r1z1-127.0.0.1:PORT/d1 1 / rebalance does, in one
# process instead of nine (each start of the tool takes seconds).
build_rings() {
  "$PY" - "$ETC" "$ACCOUNT_PORT" "$CONTAINER_PORT" "$OBJECT_PORT" <<'EOF'
import sys
from swift.common.ring import RingBuilder

etc = sys.argv[1]
for name, port in zip(("account", "container", "object"), map(int, sys.argv[2:])):
    b = RingBuilder(6, 1, 1)
    b.add_dev({"id": 0, "region": 1, "zone": 1, "ip": "127.0.0.1", "port": port,
               "replication_ip": "127.0.0.1", "replication_port": port,
               "device": "d1", "weight": 1.0, "meta": ""})
    b.rebalance()
    b.get_ring().save(f"{etc}/{name}.ring.gz")
    b.save(f"{etc}/{name}.builder")
EOF
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The last lines of a log, for a failure message.
show_log() {
  [ -s "$1" ] || return 0
  log "last lines of $1:"
  tail -n 25 "$1" | sed 's/^/  /' >&2
}

# wait_for SECONDS DESCRIPTION PIDFILE|- LOGFILE COMMAND...: retries COMMAND
# until it succeeds; fails at once if the process of PIDFILE has exited,
# and after SECONDS in any case, with COMMAND's last output and LOGFILE's
# tail.
wait_for() {
  local limit=$1 what=$2 pidfile=$3 logfile=$4
  shift 4
  local start=$SECONDS out=$DIR/log/wait.out
  until "$@" >"$out" 2>&1; do
    if [ "$pidfile" != - ] && ! kill -0 "$(cat "$pidfile" 2>/dev/null || echo 0)" 2>/dev/null; then
      log "$what: the process exited"
      show_log "$logfile"
      return 1
    fi
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      log "timed out after ${limit}s waiting for $what; logs in $DIR/log"
      show_log "$out"
      show_log "$logfile"
      return 1
    fi
    sleep 0.2
  done
}

start_server() {  # start_server account|container|object|proxy
  local s=$1
  # The server calls setsid itself, so it outlives the shell that started it.
  "$PY" "$ETC/run_server.py" "$s" "$ETC/$s-server.conf" \
    </dev/null >"$DIR/log/$s-server.log" 2>&1 &
  echo $! >"$DIR/run/$s-server.pid"
}

all_running() {
  local f
  for f in memcached "${SERVERS[@]/%/-server}"; do
    [ -f "$DIR/run/$f.pid" ] && kill -0 "$(cat "$DIR/run/$f.pid")" 2>/dev/null || return 1
  done
}

start() {
  if [ -f "$DIR/env" ] && all_running; then
    log "already running"
    cat "$DIR/env"
    return 0
  fi
  install_packages
  [ -n "$(our_pids)" ] && stop  # a half-started or orphaned server
  local p
  for p in "$PORT" "$ACCOUNT_PORT" "$CONTAINER_PORT" "$OBJECT_PORT" "$MEMCACHED_PORT"; do
    if port_open "$p"; then
      log "port $p on 127.0.0.1 is in use by another program (set CHUNKSTORE_SWIFT_PORT)"
      return 1
    fi
  done
  trap 'log "start failed; stopping what it started"; stop' ERR
  local t0=$SECONDS
  rm -rf "$DIR"
  mkdir -p "$ETC" "$DIR/run" "$DIR/log" "$DIR/srv/d1" "$DIR/cache"
  write_conf
  build_rings >"$DIR/log/rings.out" 2>&1 || { log "building the rings failed"; show_log "$DIR/log/rings.out"; false; }
  local mc_user=()
  [ "$(id -u)" -eq 0 ] && mc_user=(-u root)
  memcached -d -P "$DIR/run/memcached.pid" -l 127.0.0.1 -p "$MEMCACHED_PORT" -U 0 \
    -m 64 -t 1 "${mc_user[@]}" </dev/null >"$DIR/log/memcached.log" 2>&1
  local s
  for s in "${SERVERS[@]}"; do start_server "$s"; done
  wait_for 10 "memcached" - "$DIR/log/memcached.log" port_open "$MEMCACHED_PORT"
  for s in "${SERVERS[@]}"; do
    local port_var=${s^^}_PORT
    [ "$s" = proxy ] && port_var=PORT
    wait_for 60 "the $s server" "$DIR/run/$s-server.pid" "$DIR/log/$s-server.log" \
      port_open "${!port_var}"
  done
  cat >"$DIR/env" <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$PORT
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=us-east-1
EOF
  # shellcheck disable=SC1091
  . "$DIR/env"
  wait_for 60 "a signed PUT and GET" "$DIR/run/proxy-server.pid" "$DIR/log/proxy-server.log" \
    python3 "$HERE/s3_probe.py" chunkstore-probe
  trap - ERR
  log "swift is ready on 127.0.0.1:$PORT after $((SECONDS - t0))s (data in $DIR)"
  cat "$DIR/env"
}

# The processes this script started: found by command line (the server
# wrapper in $DIR/etc, memcached's pid file in $DIR/run), so a start whose
# pid files were lost is still found; nothing else runs with those paths.
our_pids() {
  local p cmd
  for p in /proc/[0-9]*; do
    { cmd=$(tr '\0' ' ' <"$p/cmdline"); } 2>/dev/null || continue
    case "$cmd" in
      *" $ETC/run_server.py "* | *" -P $DIR/run/memcached.pid "*) echo "${p#/proc/}" ;;
    esac
  done
  return 0
}

stop() {
  local pid pids
  read -ra pids <<<"$(our_pids | tr '\n' ' ')"
  [ ${#pids[@]} -eq 0 ] && return 0
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  local deadline=$((SECONDS + 10))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  done
  log "stopped ${#pids[@]} processes"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
