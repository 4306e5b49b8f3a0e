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
    local options="-k $dir -c listen_addresses= -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    for setting in "$@"; do options="$options -c $setting"; done
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$options" -w start >/dev/null \
        || { cat "$dir/server.log" >&2; return 1; }
}

pg_stop() {
    local dir=$1
    local bin; bin=$(pg_bindir) || return 0
    [ -d "$dir/data" ] && pg_as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1
    return 0
}

# pg_conninfo DIR [DBNAME]
pg_conninfo() {
    echo "host=$1 port=5432 user=postgres dbname=${2:-postgres}"
}
