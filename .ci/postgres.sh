#!/usr/bin/env bash
# CI: a local PostgreSQL for the cluster-path test (tests/test_cluster_postgres.py). Installs Debian's
# `postgresql` when missing, starts its cluster, creates the role and database `uats` (password `uats`) when
# absent, then prints the SQLAlchemy URL on stdout (everything else goes to stderr). Run as root; idempotent:
# running it again with the server up and the role there changes nothing.
#   export UATS_TEST_POSTGRES_URL="$(bash .ci/postgres.sh)"
#   bash .ci/postgres.sh stop   # stops the server again only if an earlier call here started it
set -euo pipefail
exec 3>&1 1>&2  # fd 3: the URL; stdout: the log
started_mark=/run/uats-ci-postgres.started

# The server is a daemon: it must hold none of our descriptors. Holding fd 3 (the pipe of `$(...)`) kept the
# caller's command substitution waiting forever; holding stdout/stderr would keep a CI log pipe open.
daemon_() {
  local log; log="$(mktemp)"
  if ! "$@" </dev/null >"$log" 2>&1 3>&-; then cat "$log"; rm -f "$log"; return 1; fi
  cat "$log"; rm -f "$log"
}

if [ "$(id -u)" != 0 ]; then
  echo "postgres.sh: run as root (it installs and starts the system PostgreSQL)"; exit 1
fi
if ! command -v pg_ctlcluster >/dev/null; then
  echo "postgres.sh: installing Debian's postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq postgresql >/dev/null || { apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; }
fi
# The newest installed server version; its cluster `main` (the package creates it; make it if someone removed it).
ver="$(ls /usr/lib/postgresql | sort -V | tail -1)"
if [ "${1:-}" = stop ]; then
  if [ -e "$started_mark" ]; then daemon_ pg_ctlcluster "$ver" main stop; rm -f "$started_mark"; fi
  exit 0
fi
if ! pg_lsclusters -h | awk -v v="$ver" '$1 == v && $2 == "main"' | grep -q .; then
  daemon_ pg_createcluster "$ver" main
fi
if ! pg_ctlcluster "$ver" main status >/dev/null 2>&1; then
  daemon_ pg_ctlcluster "$ver" main start
  touch "$started_mark"
fi
for _ in $(seq 60); do  # accepting connections (a slow machine can take a few seconds)
  pg_isready -q -h 127.0.0.1 && break
  sleep 1
done
pg_isready -h 127.0.0.1
psql_() { (cd / && su postgres -c "psql -v ON_ERROR_STOP=1 -qtAX -c \"$1\""); }
if [ -z "$(psql_ "select 1 from pg_roles where rolname = 'uats'")" ]; then
  psql_ "create user uats password 'uats' createdb"
fi
# A test database is dropped WITH (FORCE) (testkit/postgres.py), which ends the sessions still on it; an autovacuum
# worker visiting the new database is one of them, and only a member of pg_signal_backend may end it (without it the
# drop failed at random, when autovacuum happened to be there). Granted every time: an older role lacks it.
psql_ "grant pg_signal_backend to uats"
if [ -z "$(psql_ "select 1 from pg_database where datname = 'uats'")" ]; then
  psql_ "create database uats owner uats"
fi
echo "postgresql+psycopg://uats:uats@127.0.0.1/uats" >&3
