#!/usr/bin/env bash
# Start a local PostgreSQL for the store tests, idempotently, and print how to reach it.
#
#   eval "$(bash .ci/start_postgres.sh)"     # sets CALIPERS_TEST_POSTGRES_URL
#
# Installs Debian's `postgresql` when it is missing (needs root and apt), makes sure one
# cluster exists and listens on 127.0.0.1 only, creates the role `calipers` and the database
# `calipers_test`, and prints `export CALIPERS_TEST_POSTGRES_URL=...` as its only line on
# stdout (everything else goes to stderr). Running it again changes nothing.
set -euo pipefail

PG_USER="${CALIPERS_PG_USER:-calipers}"
PG_PASSWORD="${CALIPERS_PG_PASSWORD:-calipers}"
PG_DB="${CALIPERS_PG_DB:-calipers_test}"
CLUSTER=main

log() { echo "start_postgres: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
    log "must run as root (it installs packages and starts the cluster as user postgres)"
    exit 1
fi

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v pg_ctlcluster >/dev/null; then
    log "installing postgresql with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update >&2
    apt-get install -y postgresql >&2
fi

VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"

if ! pg_lsclusters -h | awk -v v="$VERSION" -v c="$CLUSTER" '$1 == v && $2 == c {f = 1} END {exit !f}'; then
    log "creating cluster $VERSION/$CLUSTER"
    pg_createcluster "$VERSION" "$CLUSTER" >&2
fi

is_online() {
    pg_lsclusters -h | awk -v v="$VERSION" -v c="$CLUSTER" \
        '$1 == v && $2 == c && $4 == "online" {f = 1} END {exit !f}'
}

# Listen on the loopback interface only, through a drop-in file that Debian's postgresql.conf
# includes (conf.d); a running cluster is restarted when the file changes.
DROPIN="/etc/postgresql/$VERSION/$CLUSTER/conf.d/calipers.conf"
WANT="listen_addresses = '127.0.0.1'"
if [ "$(cat "$DROPIN" 2>/dev/null || true)" != "$WANT" ]; then
    mkdir -p "$(dirname "$DROPIN")"
    echo "$WANT" > "$DROPIN"
    chown postgres:postgres "$DROPIN"
    if is_online; then
        log "restarting cluster $VERSION/$CLUSTER to listen on 127.0.0.1 only"
        pg_ctlcluster "$VERSION" "$CLUSTER" restart >&2
    fi
fi

if ! is_online; then
    log "starting cluster $VERSION/$CLUSTER"
    pg_ctlcluster "$VERSION" "$CLUSTER" start >&2
fi

PORT="$(pg_lsclusters -h | awk -v v="$VERSION" -v c="$CLUSTER" '$1 == v && $2 == c {print $3}')"

for _ in $(seq 1 60); do
    if pg_isready -q -h 127.0.0.1 -p "$PORT"; then break; fi
    sleep 0.5
done
pg_isready -h 127.0.0.1 -p "$PORT" >&2

psql_admin() { (cd / && runuser -u postgres -- psql -p "$PORT" -v ON_ERROR_STOP=1 -qtA "$@"); }

# The password is passed as a psql variable, so it is quoted by psql, not by this script.
psql_admin -v user="$PG_USER" -v pw="$PG_PASSWORD" >&2 <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'user')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'user') \gexec
SELECT format('ALTER ROLE %I WITH LOGIN PASSWORD %L', :'user', :'pw') \gexec
SQL

psql_admin -v user="$PG_USER" -v db="$PG_DB" >&2 <<'SQL'
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'user')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db') \gexec
SQL

log "PostgreSQL $VERSION is ready on 127.0.0.1:$PORT, database $PG_DB"
echo "export CALIPERS_TEST_POSTGRES_URL=postgresql+psycopg://$PG_USER:$PG_PASSWORD@127.0.0.1:$PORT/$PG_DB"
