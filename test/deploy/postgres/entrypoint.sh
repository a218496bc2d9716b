#!/bin/sh
# A first start makes the cluster with POSTGRES_USER's password and POSTGRES_DB, as the official
# image does; like it, this starts as root (the password secret may be root's alone) and runs
# PostgreSQL as postgres.
set -eu
bin=$(ls -d /usr/lib/postgresql/*/bin | head -n1)
as_postgres() { setpriv --reuid postgres --regid postgres --init-groups "$@"; }
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  chown postgres:postgres "$PGDATA"
  password=$(mktemp) && chown postgres "$password" && cat "$POSTGRES_PASSWORD_FILE" > "$password"
  as_postgres "$bin/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$password" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$password"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  as_postgres "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses='' -k /tmp" -w start >/dev/null
  as_postgres "$bin/createdb" -h /tmp -U "$POSTGRES_USER" "$POSTGRES_DB"
  as_postgres "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec setpriv --reuid postgres --regid postgres --init-groups "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -k /tmp
