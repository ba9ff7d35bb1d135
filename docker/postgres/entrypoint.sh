#!/bin/sh
# Entrypoint of skewbench's local stand-in for the official `postgres` image
# (docker/postgres/Dockerfile: Debian bookworm's PostgreSQL 15). It mirrors the official image's
# POSTGRES_* contract, as docker/compose.yaml uses it:
#   POSTGRES_PASSWORD     required when the data directory is initialised (first start)
#   POSTGRES_USER         the superuser (default postgres)
#   POSTGRES_DB           database created at initialisation (default: $POSTGRES_USER)
#   PGDATA                data directory (default /var/lib/postgresql/data, a volume)
#   POSTGRES_INITDB_ARGS  extra initdb arguments
# It initialises only when $PGDATA holds no cluster; the server listens on all addresses, with
# scram-sha-256 for TCP and trust on the local socket, and is exec'd as postgres (PID 1, setpriv).
# Not mirrored: the *_FILE variables, /docker-entrypoint-initdb.d, POSTGRES_HOST_AUTH_METHOD.
set -eu

err() { printf 'postgres entrypoint: error: %s\n' "$*" >&2; exit 1; }
log() { printf 'postgres entrypoint: %s\n' "$*" >&2; }

# `docker run IMAGE -c name=value` means `postgres -c name=value`; any other command runs as is
case "${1-}" in -*) set -- postgres "$@" ;; esac
[ "${1-}" = postgres ] || exec "$@"

: "${PGDATA:=/var/lib/postgresql/data}" "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
export PGDATA POSTGRES_USER POSTGRES_DB

if [ ! -s "$PGDATA/PG_VERSION" ] && [ -z "${POSTGRES_PASSWORD-}" ]; then
    err "POSTGRES_PASSWORD must be set (non-empty) to initialise the empty data directory $PGDATA; nothing was initialised"
fi

if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown postgres:postgres /var/run/postgresql && chmod 3777 /var/run/postgresql
    find "$PGDATA" ! -user postgres -exec chown postgres:postgres {} +
    chmod 700 "$PGDATA"
    export HOME=/var/lib/postgresql
    exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    log "initialising $PGDATA (superuser $POSTGRES_USER, database $POSTGRES_DB)"
    # shellcheck disable=SC2086  # POSTGRES_INITDB_ARGS is split into words, as in the official image
    printf '%s\n' "$POSTGRES_PASSWORD" | initdb --username="$POSTGRES_USER" --pwfile=/dev/stdin \
        --auth-local=trust --auth-host=scram-sha-256 ${POSTGRES_INITDB_ARGS-}
    printf '\n# from any address, with a password (docker/postgres/entrypoint.sh)\nhost all all all scram-sha-256\n' \
        >> "$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        # a private socket and no TCP, so that nobody (pg_isready included) sees this temporary server
        sock=$(mktemp -d)
        pg_ctl -D "$PGDATA" -w -s -o "-c listen_addresses='' -c unix_socket_directories='$sock'" start
        psql -X -q -v ON_ERROR_STOP=1 -h "$sock" -U "$POSTGRES_USER" -d postgres --set db="$POSTGRES_DB" <<'SQL' \
            || { pg_ctl -D "$PGDATA" -w -s -m fast stop; err "could not create the database $POSTGRES_DB"; }
create database :"db";
SQL
        pg_ctl -D "$PGDATA" -w -s -m fast stop
        rmdir "$sock"
    fi
    log "initialisation done"
fi

exec "$@"
