# shellcheck shell=bash
# scripts/bench's shared helpers: plumbing (arithmetic, verdicts, result rows, child
# processes), the throwaway cluster's databases, caretaker's configuration and daemons.
# Sourced by scripts/bench after its options are read; the rows (rows/*.sh) call these.

# ---------------------------------------------------------------- plumbing

log() { echo "bench: $*" >&2; }
now() { echo "$EPOCHREALTIME"; }
# calc EXPRESSION: floating-point arithmetic (awk), e.g. calc "$a / $b".
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
fmt() { awk -v v="$2" "BEGIN { printf \"$1\", v }"; }
# holds EXPRESSION: exit status of a floating-point comparison.
holds() { awk "BEGIN { exit !($1) }"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)] }'; }
# verdict CONDITION: "met" or "MISSED"; "n/a" when a figure in it could not be measured.
verdict() {
    if [[ "$1" =~ (nan|inf|n/a) ]]; then echo "n/a"; elif holds "$1"; then echo "met"; else echo "MISSED"; fi
}

# result ID WHAT MEASURED TARGET VERDICT: one row of the final table.
result() {
    printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$work/results.tsv"
    log "result: $1 | $2 | $3 | $4 | $5"
}

# Background processes this script started (caretaker daemons, pgbench, the SMTP sink);
# stopped by their own PIDs at the end.
children=()
spawned() { children+=("$1"); }
stop_child() {
    local pid=$1
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
}

# Clusters a row starts besides the bench's own (ST's), stopped at the end.
extra_pgdirs=()

cleanup() {
    local pid dir
    for pid in "${children[@]}"; do stop_child "$pid"; done
    for dir in "${extra_pgdirs[@]}"; do pg_stop "$dir"; done
    [ -n "${standby_dir:-}" ] && pg_stop "$standby_dir"
    [ -n "${pgdir:-}" ] && pg_stop "$pgdir"
    if [ "$keep" = true ]; then log "work directory kept: $work"; else rm -rf "$work"; fi
}

# build ARGS...: swift build, showing its last line, or its last 30 lines when it fails.
build() {
    local output
    if ! output=$(swift build "$@" 2>&1); then
        tail -n 30 <<<"$output" >&2
        echo "scripts/bench: swift build $* failed" >&2
        exit 1
    fi
    tail -n 1 <<<"$output" >&2
}


# ---------------------------------------------------------------- databases

conninfo() { pg_conninfo "$pgdir" "$1"; }
# sql DB ARGS...: psql, unaligned and quiet, stopping at the first error.
sql() { local db=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 "$(conninfo "$db")" "$@"; }
clone() { sql postgres -c "CREATE DATABASE $2 TEMPLATE $1 STRATEGY = FILE_COPY"; }
drop() { sql postgres -c "DROP DATABASE IF EXISTS $1"; }
# Both sides of a comparison start equal: fresh statistics and visibility map, nothing
# dirty, and the file system settled (`sync`: the kernel's dirty pages and the journal,
# with the discards of the copy dropped just before on a file system mounted with
# `discard`). Without it a C1 baseline once had every app write stall for 0.2 s, a few
# seconds in, with nothing in the server's log.
settle() { sql "$1" -c "VACUUM ANALYZE" -c "CHECKPOINT"; sync; }

# ---------------------------------------------------------------- configuration and data

# config FILE DB: writes a jobs.toml for database DB; the job tables come on stdin.
config() {
    {
        cat <<TOML
[database]
url = "$(conninfo "$2")"

[mail]
transport = "smtp"
url = "smtp://127.0.0.1:$smtp_port"
from = "Bench <bench@example.org>"

TOML
        cat
    } >"$1"
}

# jobs SCHEDULE: every built-in job enabled on one schedule, without catch-up runs.
jobs() {
    local job
    for job in expire-content logout-inactive send-temp-passwords leader-succession prune; do
        printf '[jobs.%s]\nschedule = "%s"\ncatch_up = false\n\n' "$job" "$1"
    done
}
# A schedule that is never due during a bench run (once a year).
far="0 0 1 1 *"

# migrated DB: a new database with caretaker's schema (caretaker migrate).
migrated() {
    sql postgres -c "CREATE DATABASE $1"
    config "$work/migrate.toml" "$1" </dev/null
    "$caretaker" migrate --config "$work/migrate.toml" >/dev/null
    sql "$1" -c "CREATE EXTENSION IF NOT EXISTS pgcrypto"
}

# seed_posts DB N: the E1/E2 data set (scripts/bench.d/seed-posts.sql), vacuumed.
seed_posts() {
    local started; started=$(now)
    migrated "$1"
    sql "$1" -v posts="$2" -v users=10000 -v packs=1000 -f "$helpers/seed-posts.sql" >/dev/null
    sql "$1" -c "VACUUM ANALYZE"
    log "seeded $1: $2 posts, $(sql "$1" -c "SELECT pg_size_pretty(pg_database_size(current_database()))") in $(fmt %.0f "$(calc "$(now) - $started")") s"
}

# The lifetime predicate of expire-content (docs/jobs/expire-content.md) for posts at the defaults (24 h, 48 h, 100 likes).
post_due="created_at + (interval '24 hours' + interval '24 hours' * least(1.0, greatest(likes, 0)::float8 / 100)) <= now()"

# last_run DB FIELD...: the latest expire-content run's fields from caretaker.job_runs
# (stats keys, "status", or "ms" for finished_at - started_at); "n/a" for a key the run did not record.
last_run() {
    local db=$1; shift
    local columns=() field
    for field in "$@"; do
        if [ "$field" = ms ]; then
            columns+=("round((extract(epoch FROM finished_at - started_at) * 1000)::numeric, 2)")
        elif [ "$field" = status ]; then
            columns+=("status")
        else
            columns+=("coalesce(stats->>'$field', 'n/a')")
        fi
    done
    local list; list=$(IFS=,; echo "${columns[*]}")
    sql "$db" -F ' ' -c "SELECT $list FROM caretaker.job_runs WHERE job = 'expire-content' ORDER BY id DESC LIMIT 1"
}

# expire_config FILE DB [LINE...]: expire-content at its defaults (batch size and all), never
# on its schedule, and allowed to take the whole backlog in one run; LINEs are added keys.
expire_config() {
    local file=$1 db=$2; shift 2
    config "$file" "$db" <<TOML
[jobs.expire-content]
schedule = "$far"
catch_up = false
max_runtime = "1h"
$(printf '%s\n' "$@")
TOML
}

# expire_once CONFIG: `caretaker once expire-content`, its log kept for a look afterwards.
expire_once() {
    "$caretaker" once expire-content --config "$1" >>"$work/once.out" 2>>"$work/once.log"
}


# human N: 2000000 -> 2M, 200000 -> 0.2M, 50000 -> 50k.
human() { awk -v n="$1" 'BEGIN { if (n >= 100000) printf "%.3gM", n / 1e6; else if (n >= 1000) printf "%.0fk", n / 1e3; else print n }'; }
krate() { fmt "%.0fk" "$(calc "$1 / 1000")"; }


# e2_times DB CONFIG: one warm-up run (it takes the few posts that fell due since the
# previous run, and looks at every pack when it is the first), then 11 runs with nothing
# due. Prints the median and the minimum of their job_runs.finished_at - started_at (ms),
# the posts those runs deleted, and the warm-up's time. The minimum is what the run
# costs when nothing else on the machine gets in the way.
e2_times() {
    expire_once "$2" || true
    local i times=() deleted=0 ms gone first
    first=$(last_run "$1" ms)
    for i in $(seq 1 11); do
        expire_once "$2" || true
        read -r ms gone <<<"$(last_run "$1" ms posts_deleted)"
        times+=("$ms")
        deleted=$((deleted + ${gone/n\/a/0}))
    done
    echo "$(printf '%s\n' "${times[@]}" | median) $(printf '%s\n' "${times[@]}" | sort -g | head -n 1) $deleted $first"
}

# e2_daemon DB: the same figure in the daemon, whose connection stays open between runs
# (normal mode): expire-content on '@every 1s' for 13 s; median of the scheduled runs

# ---------------------------------------------------------------- daemons

# daemon NAME CONFIG [FLAGS...]: starts `caretaker run` ($run_bin, else $daemon_bin) in the
# background, outside systemd (no NOTIFY_SOCKET, no watchdog), logging to NAME.log; sets
# daemon_pid once it is ready.
daemon() {
    local name=$1 cfg=$2; shift 2
    env -u NOTIFY_SOCKET -u WATCHDOG_USEC -u WATCHDOG_PID \
        "${run_bin:-$daemon_bin}" run --config "$cfg" "$@" >/dev/null 2>"$work/$name.log" &
    daemon_pid=$!
    spawned "$daemon_pid"
    for _ in $(seq 1 100); do
        grep -q 'msg=ready' "$work/$name.log" 2>/dev/null && break
        sleep 0.05
    done
}

# only_job NAME SCHEDULE [LINE...]: job tables with every job disabled but NAME, which
# runs on SCHEDULE (no catch-up) with the extra TOML lines given.
only_job() {
    local name=$1 schedule=$2 job; shift 2
    for job in expire-content logout-inactive send-temp-passwords leader-succession prune; do
        if [ "$job" = "$name" ]; then
            printf '[jobs.%s]\nschedule = "%s"\ncatch_up = false\n' "$job" "$schedule"
            [ $# -gt 0 ] && printf '%s\n' "$@"
            echo
        else
            printf '[jobs.%s]\nenabled = false\n\n' "$job"
        fi
    done
}

mib() { fmt %.1f "$(calc "$1 / 1024")"; }
# cpu_seconds PID: CPU seconds (user + system) of a process so far, from the clock
# ticks in /proc/PID/stat (proc(5)).
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
