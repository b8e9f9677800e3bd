#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A one-node Ceph cluster with a radosgw on 127.0.0.1, for the S3 tests and
# the S3 benchmarks.
#
#   scripts/s3-test-server.sh start   installs ceph-mon, ceph-osd and radosgw
#                                     from Debian if missing, starts a monitor,
#                                     a memstore OSD and radosgw, creates a
#                                     test user and waits until a signed PUT
#                                     and GET work; prints the settings as
#                                     shell exports (also in $DIR/env)
#   scripts/s3-test-server.sh stop    ends only the processes start started
#   scripts/s3-test-server.sh stop-gateway | start-gateway
#                                     kills radosgw at once, as a crash
#                                     would, or starts it again (the data
#                                     stays with the OSD): for tests of a
#                                     server that goes away mid-request
#
# Environment: CHUNKSTORE_S3_DIR (default /tmp/chunkstore-s3) holds the
# cluster's data, logs and pid files; CHUNKSTORE_S3_PORT (default 7480).
# Everything listens on 127.0.0.1 only; authentication inside the cluster is
# off, S3 requests are signed with the test user's fixed keys.
set -euo pipefail

DIR=${CHUNKSTORE_S3_DIR:-/tmp/chunkstore-s3}
PORT=${CHUNKSTORE_S3_PORT:-7480}
MON_PORT=${CHUNKSTORE_S3_MON_PORT:-6789}
ACCESS_KEY=chunkstoretestaccess
SECRET_KEY=chunkstoretestsecretkey0123456789abcdef
HERE=$(cd "$(dirname "$0")" && pwd)
CONF=$DIR/ceph.conf

log() { echo "s3-test-server: $*" >&2; }

install_packages() {
  local missing=()
  for p in ceph-mon ceph-osd radosgw; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

write_conf() {
  local fsid
  fsid=$(cat /proc/sys/kernel/random/uuid)
  cat >"$CONF" <<EOF
[global]
fsid = $fsid
mon host = 127.0.0.1:$MON_PORT
public addr = 127.0.0.1
cluster addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
paxos propose interval = 0.05
mon data avail warn = 1
mon data avail crit = 0
osd objectstore = memstore
memstore device bytes = 4294967296
osd data = $DIR/osd.\$id
mon data = $DIR/mon.\$id
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
pid file = $DIR/run/\$name.pid
keyring = /dev/null
[client.rgw.test]
rgw frontends = beast endpoint=127.0.0.1:$PORT tcp_nodelay=1
rgw data = $DIR/rgw
rgw dns name = 127.0.0.1
# Reclaim deleted objects at once (the default waits two hours), or the
# memstore OSD fills up under repeated test and benchmark runs.
rgw gc obj min wait = 0
rgw gc processor period = 2
EOF
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2
  shift 2
  local start=$SECONDS
  until "$@" >/dev/null 2>&1; do
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      log "timed out after ${limit}s waiting for $what; logs in $DIR/log"
      return 1
    fi
    sleep 0.2
  done
}

start() {
  if [ -f "$DIR/env" ] && stop_quiet_check; then
    log "already running"
    cat "$DIR/env"
    return 0
  fi
  install_packages
  [ -n "$(our_pids)" ] && stop  # a half-started or orphaned cluster
  trap 'log "start failed; stopping what it started"; stop' ERR
  rm -rf "$DIR"
  mkdir -p "$DIR/run" "$DIR/log" "$DIR/mon.a" "$DIR/osd.0" "$DIR/rgw"
  write_conf
  local c=(-c "$CONF")
  monmaptool --create --clobber --fsid "$(awk '/^fsid/{print $3}' "$CONF")" \
    --add a "127.0.0.1:$MON_PORT" "$DIR/monmap" >/dev/null
  ceph-mon "${c[@]}" --mkfs -i a --monmap "$DIR/monmap" >"$DIR/log/mkfs-mon.out" 2>&1
  ceph-mon "${c[@]}" -i a
  wait_for 30 "the monitor" ceph "${c[@]}" --connect-timeout 2 mon stat
  local osd_id
  osd_id=$(ceph "${c[@]}" osd create)
  ceph-osd "${c[@]}" -i "$osd_id" --mkfs >"$DIR/log/mkfs-osd.out" 2>&1
  # Now and then a fresh OSD sends its first monitor command before it
  # knows the cluster's fsid, is refused ("wrong fsid") and exits; a
  # restart of the same OSD then comes up.
  local attempt
  for attempt in 1 2 3; do
    if ceph-osd "${c[@]}" -i "$osd_id" &&
       wait_for 60 "the OSD" bash -c "ceph ${c[*]} osd stat | grep -q '1 up'"; then
      break
    fi
    [ "$attempt" = 3 ] && { log "the OSD did not come up after 3 starts"; return 1; }
    log "the OSD did not come up (start $attempt of 3); starting it again"
    end_process "$DIR/run/osd.$osd_id.pid" KILL || true
  done
  radosgw "${c[@]}" -n client.rgw.test
  wait_for 90 "radosgw" bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT"
  radosgw-admin "${c[@]}" user create --uid=chunkstore-test --display-name="chunkstore tests" \
    --access-key="$ACCESS_KEY" --secret="$SECRET_KEY" >"$DIR/log/user.out" 2>&1
  cat >"$DIR/env" <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$PORT
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=us-east-1
EOF
  # shellcheck disable=SC1091
  . "$DIR/env"
  wait_for 60 "a signed PUT and GET" python3 "$HERE/s3_probe.py" chunkstore-probe
  log "radosgw is ready on 127.0.0.1:$PORT (data in $DIR)"
  cat "$DIR/env"
}

stop_quiet_check() {
  local f
  for f in "$DIR"/run/*.pid; do
    [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && return 0
  done
  return 1
}

# Ends one started process, given its pid file and a signal; after SIGTERM
# waits up to ten seconds (radosgw ignores it for a few), then kills it.
end_process() {
  local f=$1 sig=${2:-TERM} pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  # Only end a process that is still the one this script started.
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$CONF" || return 1
  kill -"$sig" "$pid" 2>/dev/null || return 1
  local deadline=$((SECONDS + 10))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}

stop_gateway() {
  end_process "$DIR/run/client.rgw.test.pid" KILL || { log "no gateway running"; return 1; }
  log "gateway stopped"
}

start_gateway() {
  radosgw -c "$CONF" -n client.rgw.test
  wait_for 60 "radosgw" bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT"
  log "gateway started"
}

# The processes this script started: those running with its config file
# (found by command line, so a start whose pid files were lost is still
# found; nothing else runs with that file).
our_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ -r "$p/cmdline" ] && tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -- "-c $CONF " && echo "${p#/proc/}"
  done
  return 0
}

stop() {
  local pid pids
  pids=$(our_pids)
  for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
  # radosgw ignores SIGTERM for a few seconds; give everyone ten.
  local deadline=$((SECONDS + 10))
  for pid in $pids; do
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  done
  pids=($pids)
  log "stopped ${#pids[@]} processes"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  stop-gateway) stop_gateway ;;
  start-gateway) start_gateway ;;
  *) echo "usage: $0 start|stop|stop-gateway|start-gateway" >&2; exit 2 ;;
esac
