# shellcheck shell=bash
# Throwaway PostgreSQL clusters for the scripts (demo, bench, soak) and the Swift test
# support (TemporaryPostgres runs this file as a program, see the end).
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

# pg_start DIR [extra postgres settings NAME=VALUE...]: initdb into DIR/data, listen only
# on a socket in DIR, no fsync. The settings go into DIR/data/postgresql.conf (extra ones
# after the defaults, so they win), where every server started on that data directory
# sees them: a restart, a standby made from it by pg_basebackup, and the single-user
# crash recovery pg_rewind runs.
pg_start() {
    local dir=$1; shift
    local bin; bin=$(pg_bindir) || return 1
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    pg_as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; return 1; }
    local setting
    for setting in "listen_addresses=" fsync=off synchronous_commit=off full_page_writes=off "$@"; do
        printf "%s = '%s'\n" "${setting%%=*}" "${setting#*=}"
    done >>"$dir/data/postgresql.conf"
    echo "-k $dir" >"$dir/options"
    pg_start_existing "$dir"
}

# pg_start_existing DIR: starts the cluster in DIR/data with the options saved in DIR/options.
pg_start_existing() {
    local dir=$1
    local bin; bin=$(pg_bindir) || return 1
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$(cat "$dir/options")" -w -t 60 start >/dev/null \
        || { tail -n 20 "$dir/server.log" >&2; return 1; }
}

# pg_restart DIR: restarts the cluster in DIR (pg_ctl restart -m fast: sessions are cut,
# open transactions roll back) with the options saved in DIR/options, up to 60 s.
pg_restart() {
    local dir=$1
    local bin; bin=$(pg_bindir) || return 1
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$(cat "$dir/options")" -m fast -w -t 60 restart \
        >/dev/null || { tail -n 20 "$dir/server.log" >&2; return 1; }
}

# pg_running DIR: true when the cluster in DIR runs (pg_ctl status).
pg_running() {
    local bin; bin=$(pg_bindir) || return 1
    pg_as_owner "$bin/pg_ctl" -D "$1/data" status >/dev/null 2>&1
}

# pg_start_standby PRIMARY_DIR DIR: a hot standby streaming from the cluster in
# PRIMARY_DIR (pg_basebackup, which copies its settings and writes standby.signal and
# primary_conninfo), with its socket in DIR and never on TCP (the primary's
# listen_addresses would clash). The primary's port is libpq's: PGPORT, or 5432.
pg_start_standby() {
    local primary=$1 dir=$2
    local bin; bin=$(pg_bindir) || return 1
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    pg_as_owner "$bin/pg_basebackup" -h "$primary" -U postgres -D "$dir/data" -R -X stream -c fast --no-sync \
        >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; return 1; }
    echo "-k $dir -c listen_addresses=" >"$dir/options"
    pg_start_existing "$dir"
}

# pg_promote DIR: promotes the standby in DIR; returns once it accepts writes (up to 60 s).
# A failover is `pg_stop PRIMARY_DIR immediate` then this.
pg_promote() {
    local dir=$1
    local bin; bin=$(pg_bindir) || return 1
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 promote >/dev/null || { tail -n 20 "$dir/server.log" >&2; return 1; }
}

# pg_rejoin_as_standby DIR PRIMARY_DIR: turns the stopped former primary in DIR into a
# standby of the recently promoted PRIMARY_DIR with pg_rewind (which needs
# wal_log_hints or data checksums, and runs crash recovery first after an immediate
# stop), or with a fresh base backup when the rewind fails or the rewound standby
# does not stream on the new timeline within 60 s. Prints which of the two it did.
pg_rejoin_as_standby() {
    local dir=$1 primary=$2 how
    local bin; bin=$(pg_bindir) || return 1
    # A promoted server writes its new timeline to pg_control at the next checkpoint;
    # before that pg_rewind sees one timeline and finds "no rewind required".
    psql -X -q "$(pg_conninfo "$primary")" -c "CHECKPOINT" >/dev/null
    if pg_as_owner "$bin/pg_rewind" -D "$dir/data" --source-server="$(pg_conninfo "$primary")" -R \
            >"$dir/rewind.log" 2>&1 && pg_start_existing "$dir" && pg_wait_streaming "$dir" "$primary"; then
        echo "pg_rewind"
        return 0
    fi
    how="pg_basebackup (pg_rewind: $(tail -n 1 "$dir/rewind.log"))"
    pg_stop "$dir"
    rm -rf "$dir/data"
    pg_start_standby "$primary" "$dir" && pg_wait_streaming "$dir" "$primary" || return 1
    echo "$how"
}

# pg_wait_streaming STANDBY_DIR PRIMARY_DIR: true once the standby streams from the
# primary on the primary's timeline (up to 60 s).
pg_wait_streaming() {
    local standby=$1 primary=$2 timeline i
    timeline=$(psql -X -At "$(pg_conninfo "$primary")" -c "SELECT timeline_id FROM pg_control_checkpoint()") || return 1
    for ((i = 0; i < 600; i++)); do
        [ "$(psql -X -At "$(pg_conninfo "$standby")" -c "SELECT count(*) FROM pg_stat_wal_receiver
            WHERE status = 'streaming' AND received_tli = $timeline" 2>/dev/null)" = 1 ] && return 0
        sleep 0.1
    done
    return 1
}

# pg_stop DIR [MODE]: stops the cluster in DIR if it runs (pg_ctl stop -m MODE, default
# fast; immediate is what a crash looks like to clients). Never fails: it is for cleanup.
pg_stop() {
    local dir=$1 mode=${2:-fast}
    local bin; bin=$(pg_bindir) || return 0
    [ -d "$dir/data" ] && pg_as_owner "$bin/pg_ctl" -D "$dir/data" -m "$mode" -w stop >/dev/null 2>&1
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

# Run as a program (the Swift test support does): postgres.sh COMMAND ARGS..., where
# COMMAND is start, start-existing, start-standby or stop, with the arguments above.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    case ${1:-} in
        start|start-existing|start-standby|stop) command=pg_${1//-/_}; shift; "$command" "$@" ;;
        *) echo "usage: $0 start|start-existing|start-standby|stop ARGS... (see the functions)" >&2; exit 64 ;;
    esac
fi
