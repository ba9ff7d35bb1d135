#!/usr/bin/env bash
# Start (or stop) the Airflow UI and the MLflow UI on localhost, each in its own process group.
#   scripts/ui.sh start | stop
# Environment (set by the Makefile): AIRFLOW_HOME, SKEWBENCH_STATE, SKEWBENCH_TRACKING_URI,
# SKEWBENCH_MLFLOW_ARTIFACTS, AIRFLOW_PORT (8080), MLFLOW_PORT (5000).
set -euo pipefail
cmd=${1:-start}
state=${SKEWBENCH_STATE:?}
pids="$state/ui.pgids"
airflow_port=${AIRFLOW_PORT:-8080}
mlflow_port=${MLFLOW_PORT:-5000}

stop() {  # SIGTERM to every process group at once, then 10 s in all for them to leave, then SIGKILL
  [ -f "$pids" ] || { echo "no UI started from here"; return 0; }
  local name pgid live=()
  while read -r name pgid; do
    if kill -0 -- "-$pgid" 2>/dev/null; then
      kill -TERM -- "-$pgid" 2>/dev/null || true
      live+=("$name:$pgid")
    fi
  done < "$pids"
  for _ in $(seq 20); do
    local left=0 e
    for e in "${live[@]}"; do kill -0 -- "-${e#*:}" 2>/dev/null && left=1; done
    (( left )) || break
    sleep 0.5
  done
  for e in "${live[@]}"; do
    kill -KILL -- "-${e#*:}" 2>/dev/null || true
    echo "stopped ${e%%:*} (process group ${e#*:})"
  done
  rm -f "$pids"
}

wait_http() {  # url, seconds
  for _ in $(seq "$2"); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 1; done
  return 1
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ -f "$pids" ] && stop
# everything the UIs write (the generated admin password above all) is readable by this user only
umask 077
mkdir -p "$state/logs"
: > "$pids"

# MLflow UI over the same store the pipeline logs to
setsid mlflow server --backend-store-uri "$SKEWBENCH_TRACKING_URI" \
  --default-artifact-root "file://$SKEWBENCH_MLFLOW_ARTIFACTS" --host 127.0.0.1 --port "$mlflow_port" \
  > "$state/logs/mlflow-ui.log" 2>&1 < /dev/null &
echo "mlflow $!" >> "$pids"

# Airflow: API server (UI), scheduler, DAG processor, triggerer; one generated admin password.
# Each in a process group of its own, started one by one rather than by `airflow standalone`:
# the scheduler and the triggerer then run without their log servers, which listen on every
# address (ports 8793 and 8794; Airflow has no setting for their host); the API server reads
# the task logs from the same log folder instead.
export AIRFLOW__API__PORT="$airflow_port" AIRFLOW__API__HOST=127.0.0.1
export AIRFLOW__API__BASE_URL="http://127.0.0.1:$airflow_port"  # tasks reach the execution API here
# the replay tasks' "MLflow run" links point at this MLflow UI
export SKEWBENCH_MLFLOW_UI="${SKEWBENCH_MLFLOW_UI:-http://127.0.0.1:$mlflow_port}"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="admin:admin"
airflow db migrate > "$state/logs/airflow-migrate.log" 2>&1
start() {  # name, command...
  local name=$1; shift
  setsid "$@" > "$state/logs/airflow-$name.log" 2>&1 < /dev/null &
  echo "airflow-$name $!" >> "$pids"
}
start api-server airflow api-server --host 127.0.0.1 --port "$airflow_port"
start scheduler airflow scheduler --skip-serve-logs
start dag-processor airflow dag-processor
start triggerer airflow triggerer --skip-serve-logs

wait_http "http://127.0.0.1:$mlflow_port/" 120 || echo "warning: MLflow UI not answering yet (see $state/logs/mlflow-ui.log)"
wait_http "http://127.0.0.1:$airflow_port/api/v2/version" 240 || echo "warning: Airflow not answering yet (see $state/logs/airflow-*.log)"
pwfile="$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated"
for _ in $(seq 30); do [ -s "$pwfile" ] && break; sleep 1; done
[ -f "$pwfile" ] && chmod 600 "$pwfile"  # also one generated before this umask
echo
echo "Airflow UI:  http://127.0.0.1:$airflow_port   login: admin / $(python -c "import json,sys; print(json.load(open(sys.argv[1]))['admin'])" "$pwfile" 2>/dev/null || echo "see $pwfile")"
echo "MLflow UI:   http://127.0.0.1:$mlflow_port"
# each family's runs table, in MLflow's model-training view (a new browser opens its GenAI view),
# and the newest night's overview
python - "$SKEWBENCH_MLFLOW_UI" <<'PY' 2>/dev/null || true
import sys
from skewbench.tracking import experiment_urls, find_overview
for family, url in experiment_urls(sys.argv[1]).items():
    print(f"  {family + ' runs:':18s} {url}")
overview = find_overview(sys.argv[1])  # the newest night's overview.html, in MLflow
if overview:
    print(f"  {'latest overview:':18s} {overview}")
PY
echo "logs:        $state/logs/   stop with: make ui-stop"
