#!/usr/bin/env bash
# The Docker side of skewbench's deployed stack (docs/deploy.md, docker/compose.yaml).
#
#   scripts/stack.sh images            build the images; bases from Debian's packages when the
#                                      public ones cannot be pulled (make images)
#   scripts/stack.sh with-daemon CMD   run CMD with a Docker daemon: the one DOCKER_HOST (or the
#                                      default socket) answers on, else one of our own, started for
#                                      CMD and stopped after it (make images, make deploy-test)
#   scripts/stack.sh clean-test        remove what an interrupted make deploy-test left
#   scripts/stack.sh mounts            what is still mounted under our daemon's state (nothing, after
#                                      daemon-stop)
#   scripts/stack.sh daemon-start|daemon-stop|daemon-status
#                                      our own daemon: root, --iptables=false, no default bridge,
#                                      data root, exec root and socket under $SKEWBENCH_STATE/docker
#
# Every command prints what it does and exits non-zero with one line saying why when it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=${SKEWBENCH_STATE:-$PWD/.skewbench}
D=$STATE/docker
SOCK=$D/docker.sock
PID=$D/dockerd.pid
PY_PUBLIC=python:3.11-slim-bookworm
PG_PUBLIC=postgres:17-bookworm
PY_LOCAL=skewbench-local/python:3.11-slim-bookworm
PG_BASE_LOCAL=skewbench-local/postgres-base:15-bookworm
PG_LOCAL=skewbench-local/postgres:15-bookworm
IMAGE=${SKEWBENCH_IMAGE:-skewbench:latest}

die() { echo "stack.sh: $*" >&2; exit 1; }
now() { date +%s; }

daemon_answers() { timeout 10 docker info >/dev/null 2>&1; }

own_running() { [[ -f $PID ]] && kill -0 "$(cat "$PID")" 2>/dev/null; }

daemon_start() {
  if own_running; then echo "own Docker daemon already running (pid $(cat "$PID"), $SOCK)"; return; fi
  command -v dockerd >/dev/null || die "dockerd not found: install Debian's docker.io (make docker-tools)"
  [[ $(id -u) == 0 ]] || die "starting a Docker daemon needs root; or point DOCKER_HOST at a running one"
  mkdir -p "$D/root" "$D/exec"
  echo "starting a Docker daemon of our own (data root $D/root, socket $SOCK)"
  # no iptables rules and no default bridge: nothing of the host's network changes; the stack's
  # containers reach each other on its own bridge network, and ports are published by docker-proxy
  setsid dockerd --iptables=false --ip-masq=false --bridge=none --data-root "$D/root" \
    --exec-root "$D/exec" -H "unix://$SOCK" --pidfile "$PID" >"$D/dockerd.log" 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    DOCKER_HOST=unix://$SOCK daemon_answers && { echo "Docker daemon ready"; return; }
    sleep 1
  done
  tail -5 "$D/dockerd.log" >&2
  die "the Docker daemon did not answer within 60 s (log: $D/dockerd.log)"
}

daemon_stop() {
  own_running || { rm -f "$PID"; unmount_ours; echo "own Docker daemon not running"; return; }
  local pid; pid=$(cat "$PID")
  echo "stopping our Docker daemon (pid $pid)"
  kill -TERM "$pid"
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; sleep 1; }
  # its containerd goes with it; anything still holding the exec root is ours and stopped too
  pkill -TERM -f -- "$D/exec" 2>/dev/null || true
  rm -f "$PID"
  unmount_ours
}

# what the daemon mounted under our state and left (its network namespace, an nsfs mount under
# the exec root): unmounted, deepest first, or the checkout cannot be deleted ("Device or
# resource busy")
unmount_ours() {
  local m
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "stack.sh: could not unmount $m" >&2
  done < <(awk -v d="$D/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r)
}

mounts_left() { awk -v d="$D/" 'index($2, d) == 1 {print $2}' /proc/mounts; }

with_daemon() {
  if [[ -z ${DOCKER_HOST:-} ]] && ! daemon_answers && ! own_running; then
    daemon_start
    trap daemon_stop EXIT
    export DOCKER_HOST=unix://$SOCK
  elif [[ -z ${DOCKER_HOST:-} ]] && own_running; then
    export DOCKER_HOST=unix://$SOCK
  fi
  echo "Docker: ${DOCKER_HOST:-default socket}"
  "$@"
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# a public base, else the local stand-in built from Debian's packages (mmdebstrap, the host's apt
# sources; about 30 s each)
base() {
  local public=$1 local_=$2 packages=$3
  if have_image "$public" || timeout 600 docker pull -q "$public" >/dev/null 2>&1; then
    echo "$public"; return
  fi
  if ! have_image "$local_"; then
    command -v mmdebstrap >/dev/null || die "cannot pull $public and mmdebstrap is missing (make docker-tools)"
    echo "cannot pull $public: building $local_ from Debian's packages ($packages)" >&2
    mmdebstrap --quiet --variant=apt --include="$packages" bookworm - \
      | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
          - "$local_" >/dev/null || die "building $local_ failed"
  fi
  echo "$local_"
}

# the PostgreSQL image: the public one, else Debian's PostgreSQL with the official image's
# entrypoint contract (docker/postgres/Dockerfile); its name on stdout, what it does on stderr
pg_image() {
  local pg
  pg=$(base "$PG_PUBLIC" "$PG_BASE_LOCAL" postgresql,ca-certificates)
  if [[ $pg != "$PG_PUBLIC" ]]; then
    echo "building $PG_LOCAL on $pg (Debian's PostgreSQL 15, docker/postgres/Dockerfile)" >&2
    docker build -q -f docker/postgres/Dockerfile --build-arg DEBIAN_BASE="$pg" -t "$PG_LOCAL" . >/dev/null \
      || die "building $PG_LOCAL failed"
    pg=$PG_LOCAL
  fi
  echo "$pg"
}

images() {
  local t0 py pg pgout pgpid
  t0=$(now)
  # the PostgreSQL image beside the skewbench image: from nothing each is mostly waiting on
  # downloads and the disk (218 s one after the other on a fresh clone, 115 s of CPU)
  pgout=$(mktemp)
  pg_image > "$pgout" &
  pgpid=$!
  py=$(base "$PY_PUBLIC" "$PY_LOCAL" python3,python3-venv,python-is-python3,ca-certificates) \
    || { kill "$pgpid" 2>/dev/null; wait "$pgpid" || true; rm -f "$pgout"; exit 1; }
  # the site's own certificate authorities (a TLS-intercepting proxy's), for apt and pip in the build
  cp /usr/local/share/ca-certificates/*.crt docker/ca-certificates/ 2>/dev/null || true
  echo "building $IMAGE on $py (docker/Dockerfile; the locked dependencies, then this checkout)"
  docker build -q --network host --build-arg PYTHON_BASE="$py" -f docker/Dockerfile -t "$IMAGE" . >/dev/null \
    || { wait "$pgpid" || true; rm -f "$pgout"; die "building $IMAGE failed (run: docker build --network host -f docker/Dockerfile .)"; }
  wait "$pgpid" || { rm -f "$pgout"; die "the PostgreSQL image could not be built (its reason above)"; }
  pg=$(cat "$pgout"); rm -f "$pgout"
  mkdir -p "$D"
  printf 'PYTHON_BASE=%s\nPOSTGRES_IMAGE=%s\nSKEWBENCH_IMAGE=%s\n' "$py" "$pg" "$IMAGE" > "$D/images.env"
  echo "images ready in $(( $(now) - t0 )) s; put these lines in docker/.env (also in $D/images.env):"
  sed 's/^/  /' "$D/images.env"
}

# what make deploy-test leaves when it is cut short (CI's time limit): the project's containers,
# networks and volumes, then our daemon
clean_test() {
  if [[ -z ${DOCKER_HOST:-} ]] && own_running; then export DOCKER_HOST=unix://$SOCK; fi
  if daemon_answers; then
    local label=label=com.docker.compose.project=skewbench-deploy-test
    docker ps -aq --filter "$label" | xargs -r docker rm -f >/dev/null
    docker network ls -q --filter "$label" | xargs -r docker network rm >/dev/null
    docker volume ls -q --filter "$label" | xargs -r docker volume rm >/dev/null
  fi
  daemon_stop
}

case ${1:-} in
  images) images ;;
  with-daemon) shift; [[ $# -gt 0 ]] || die "with-daemon needs a command"; with_daemon "$@" ;;
  daemon-start) daemon_start; echo "export DOCKER_HOST=unix://$SOCK" ;;
  daemon-stop) daemon_stop ;;
  clean-test) clean_test ;;
  mounts) mounts_left ;;
  daemon-status)
    if own_running; then echo "running (pid $(cat "$PID")): export DOCKER_HOST=unix://$SOCK"
    elif pgrep -f -- "$D/" >/dev/null; then echo "not running, but processes of it are left:"; pgrep -af -- "$D/"; exit 1
    elif [[ -n $(mounts_left) ]]; then echo "not running, but mounts of it are left:"; mounts_left; exit 1
    else echo "not running"; fi ;;
  *) die "usage: scripts/stack.sh images | with-daemon CMD... | clean-test | mounts | daemon-start | daemon-stop | daemon-status" ;;
esac
