# shellcheck shell=bash
# Throwaway PostgreSQL clusters for scripts (demo, bench, soak).
# Usage: source scripts/lib/postgres.sh; pg_start DIR; ... ; pg_stop DIR
# Runs the server as the `postgres` user when we are root (initdb refuses root).

pg_bindir() {
    if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then
        pg_config --bindir
        return 0
    fi
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$dir" ] || { echo "PostgreSQL server binaries not found (install the postgresql package)" >&2; return 1; }
    echo "$dir"
}

pg_as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# pg_start DIR [extra postgres -c settings...]: initdb into DIR/data, listen only on a socket in DIR.
pg_start() {
    local dir=$1; shift
    local bin; bin=$(pg_bindir) || return 1
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    pg_as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; return 1; }
    pg_server_options "$dir" "$@" >"$dir/options"
    pg_start_existing "$dir"
}

# pg_server_options DIR [settings...]: the server's command-line options (socket in DIR, no TCP, no fsync).
pg_server_options() {
    local dir=$1; shift
    local options="-k $dir -c listen_addresses= -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    for setting in "$@"; do options="$options -c $setting"; done
    echo "$options"
}

# pg_start_existing DIR: starts the cluster in DIR/data with the options saved in DIR/options.
pg_start_existing() {
    local dir=$1
    local bin; bin=$(pg_bindir) || return 1
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$(cat "$dir/options")" -w -t 60 start >/dev/null \
        || { tail -n 20 "$dir/server.log" >&2; return 1; }
}

# pg_start_standby PRIMARY_DIR DIR [settings...]: a streaming standby of the cluster in
# PRIMARY_DIR (pg_basebackup, which writes standby.signal and primary_conninfo), socket in DIR.
pg_start_standby() {
    local primary=$1 dir=$2; shift 2
    local bin; bin=$(pg_bindir) || return 1
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    pg_as_owner "$bin/pg_basebackup" -h "$primary" -U postgres -D "$dir/data" -R -X stream -c fast >"$dir/basebackup.log" 2>&1 \
        || { cat "$dir/basebackup.log" >&2; return 1; }
    pg_server_options "$dir" "$@" >"$dir/options"
    pg_start_existing "$dir"
}

# pg_rejoin_as_standby DIR PRIMARY_DIR: turns the stopped former primary in DIR into a
# standby of PRIMARY_DIR with pg_rewind (which needs wal_log_hints or data checksums,
# and runs crash recovery first after an immediate stop); falls back to a fresh
# base backup when the rewind fails. Prints which of the two it did.
pg_rejoin_as_standby() {
    local dir=$1 primary=$2
    local bin; bin=$(pg_bindir) || return 1
    if pg_as_owner "$bin/pg_rewind" -D "$dir/data" --source-server="$(pg_conninfo "$primary")" -R \
            >"$dir/rewind.log" 2>&1; then
        echo "pg_rewind"
    else
        rm -rf "$dir/data"
        pg_as_owner "$bin/pg_basebackup" -h "$primary" -U postgres -D "$dir/data" -R -X stream -c fast \
            >"$dir/basebackup.log" 2>&1 || { cat "$dir/rewind.log" "$dir/basebackup.log" >&2; return 1; }
        echo "pg_basebackup (pg_rewind failed: $(tail -n 1 "$dir/rewind.log"))"
    fi
    pg_start_existing "$dir"
}

pg_stop() {
    local dir=$1
    local bin; bin=$(pg_bindir) || return 0
    [ -d "$dir/data" ] && pg_as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1
    return 0
}

# pg_conninfo DIR [DBNAME]; DIR may list several clusters separated by commas (libpq
# multi-host: the first that accepts a read-write session is used).
pg_conninfo() {
    local hosts=$1 ports="5432" extra=""
    if [[ $hosts == *,* ]]; then
        ports=$(sed 's/[^,]*/5432/g' <<<"$hosts")
        extra=" target_session_attrs=read-write"
    fi
    echo "host=$hosts port=$ports user=postgres dbname=${2:-postgres}$extra"
}
