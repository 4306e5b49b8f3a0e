# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- ST: a sustained stream

# The app writes --st-rate posts a second (1,160: 100M a day), each in its own
# transaction, and serves --st-reads page views a second, while as many posts come due,
# on the layouts --st-layouts names, side by side, each in a throwaway PostgreSQL of its
# own (the bench's settings) on the same machine:
#   part  posts partitioned by "day" on created_at, caretaker with retire_partitions = true
#   flat  the single posts table, caretaker
# One cluster each, so that a cluster's WAL is one layout's. Two streams side by side
# keep a 2-core machine busy before caretaker starts; one layout a run leaves it room.
#
# The run, on every layout at once: the app alone for --st-baseline seconds with nothing due (the
# seeded table leaves that span out), then caretaker (expire-content on --st-schedule), a
# --st-warmup, --st-seconds measured, caretaker stopped, and the app alone again for
# --st-baseline seconds. The app's baseline is the same app on the same table in the span
# before caretaker starts (as C1's); the span after it is shown beside it, and both
# together are the reference for the WAL and the CPU without expiry.
#
# Time is compressed by --st-compress K: lifetimes are 24 h / K to 48 h / K
# (min_lifetime, max_lifetime) and a "daily" partition spans 24 h / K, while the rates
# are the real ones. The table holds what 100M posts a day leave in it over 48 h / K
# (K = 60: 48 minutes, about 2.8M posts, and the space of the posts deleted from the
# partitions still attached), and the app's own posts come due in the run.

# st_sql DIR DB ARGS...: sql on the cluster in DIR.
st_sql() { local pgdir=$1; shift; sql "$@"; }

# st_seeded LAYOUT: a cluster in $work/st-LAYOUT (part or flat) with database app,
# migrated by caretaker and seeded in steady state as of $st_at (seed-stream.sql).
st_seeded() {
    local layout=$1 dir="$work/st-$1"
    pg_start "$dir" "${pg_settings[@]}"
    extra_pgdirs+=("$dir")
    st_sql "$dir" postgres -c "CREATE DATABASE app"
    st_sql "$dir" app -c "CREATE EXTENSION IF NOT EXISTS pgcrypto"
    if [ "$layout" = part ]; then
        # From the partition before the oldest seeded post's to two past the run's end.
        local first last
        first=$(((st_at - st_max_s - st_part_s) / st_part_s - 1))
        last=$(((st_at + st_total + 120) / st_part_s + 2))
        "$testkit" partitioned-app-schema public | st_sql "$dir" app >/dev/null
        st_sql "$dir" app -v first="$first" -v count="$((last - first + 1))" -v length="$st_part_s" -v origin=0 \
            -f "$helpers/stream-partitioned.sql" >/dev/null
    fi
    local pgdir=$dir
    config "$work/st-$layout-migrate.toml" app </dev/null
    "$caretaker" migrate --config "$work/st-$layout-migrate.toml" >/dev/null
    st_sql "$dir" app -v rate="$st_rate" -v min_s="$st_min_s" -v max_s="$st_max_s" -v at="$st_at" \
        -v keep_s="$st_part_s" -v quiet="$st_baseline" -v users=10000 -v packs=1000 -f "$helpers/seed-stream.sql" >/dev/null
    st_sql "$dir" app -c "VACUUM ANALYZE" -c "CHECKPOINT"
}

# st_backlog_sql: the posts past their (compressed) lifetime still there, one index range
# per likes value (posts (likes, created_at)): it reads the due rows, not the table.
st_backlog_sql() {
    cat <<SQL
SELECT coalesce(sum(n), 0) FROM generate_series(0, (SELECT coalesce(max(likes), 0) FROM posts)) b,
LATERAL (SELECT count(*) AS n FROM posts WHERE likes = b
         AND created_at <= now() - ($st_min_s + ($st_max_s - $st_min_s) * least(1.0, b / 100.0)) * interval '1 second') c
SQL
}

# st_sampler LAYOUT FILE: every 10 s, "EPOCH BACKLOG SIZE_BYTES PARTITIONS WAL_BYTES
# CARETAKER_RSS_KB": posts past due still there, the size of posts with its partitions,
# indexes and TOAST, its partitions, the cluster's WAL position, and caretaker's resident
# memory (-1 while no daemon runs).
st_sampler() {
    local layout=$1 file=$2 dir="$work/st-$1" backlog
    backlog=$(st_backlog_sql)
    while :; do
        local rss=-1 pid
        pid=$(cat "$work/st-$layout.pid" 2>/dev/null || true)
        [ -n "$pid" ] && rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo -1)
        local row
        row=$(st_sql "$dir" app -F ' ' -c "
            SELECT extract(epoch FROM clock_timestamp()), ($backlog),
                   coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('posts')),
                            pg_total_relation_size('posts')),
                   (SELECT count(*) FROM pg_partition_tree('posts') WHERE isleaf AND level > 0),
                   pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint" 2>/dev/null) && echo "$row ${rss:--1}"
        sleep 10
    done >>"$file"
}

# st_cluster_cpu DIR: CPU seconds of a cluster's server so far: the postmaster's own and
# its reaped children's (autovacuum workers, ended backends), and its live children's;
# 0 where no cluster runs (a layout this run leaves out).
st_cluster_cpu() {
    [ -f "$1/data/postmaster.pid" ] || { echo 0; return; }
    local postmaster; postmaster=$(head -n 1 "$1/data/postmaster.pid")
    local proc line
    for proc in /proc/[0-9]*; do
        { read -r line <"$proc/stat"; } 2>/dev/null || continue
        echo "${proc#/proc/} ${line##*) }"
    done | awk -v pm="$postmaster" -v hz="$(getconf CLK_TCK)" '
        # "PID STATE PPID ...": utime $13, stime $14, cutime $15, cstime $16 (proc(5)).
        $1 == pm { t += $13 + $14 + $15 + $16 } $3 == pm { t += $13 + $14 } END { printf "%.2f", t / hz }'
}

# st_cpu_snapshot: "MACHINE_BUSY MACHINE_TOTAL PART FLAT PGBENCH" CPU seconds so far: the
# whole machine's busy and total time (/proc/stat, all cores), each cluster's server, and
# the app's pgbench processes.
st_cpu_snapshot() {
    local hz; hz=$(getconf CLK_TCK)
    local pgb=0 pid
    for pid in "${st_pgbench[@]}"; do pgb=$(calc "$pgb + $(cpu_seconds "$pid" 2>/dev/null || echo 0)"); done
    echo "$(awk -v hz="$hz" '/^cpu / { printf "%.2f %.2f", ($2 + $3 + $4 + $7 + $8) / hz, ($2 + $3 + $4 + $5 + $6 + $7 + $8) / hz }' /proc/stat) $(st_cluster_cpu "$work/st-part") $(st_cluster_cpu "$work/st-flat") $pgb"
}

# st_counters DIR: the server's counters so far that say where the app's writes may
# wait: "BLKS_READ WAL_FPI BACKEND_WRITES CHECKPOINT_WRITES": blocks database app read
# from outside shared buffers (the app's, caretaker's and autovacuum's), full-page
# images in the WAL, and buffers written out by backends (when no clean buffer was
# free) and by the checkpointer.
st_counters() {
    st_sql "$1" app -F ' ' -c "
        SELECT (SELECT blks_read FROM pg_stat_database WHERE datname = 'app'), (SELECT wal_fpi FROM pg_stat_wal),
               buffers_backend, buffers_checkpoint FROM pg_stat_bgwriter"
}
# st_counter_rates "B0 B1 T0 T1 A0 A1" (span ends, epoch) and the counters at each:
# each counter a second before caretaker, with it, and after it: "BEFORE/WITH/AFTER; ...".
st_counter_rates() {
    awk -v ends="$1" -v c="$2|$3|$4|$5|$6|$7" 'BEGIN {
        split(ends, e, " "); split(c, v, "|")
        for (i = 1; i <= 6; i++) { split(v[i], y, " "); for (k = 1; k <= 4; k++) x[i, k] = y[k] }
        name[1] = "blocks read"; name[2] = "WAL full-page images"; name[3] = "buffers written by backends"; name[4] = "by the checkpointer"
        for (k = 1; k <= 4; k++) {
            printf "%s%s %.0f/%.0f/%.0f", (k > 1 ? "; " : ""), name[k], (x[2, k] - x[1, k]) / (e[2] - e[1]),
                (x[4, k] - x[3, k]) / (e[4] - e[3]), (x[6, k] - x[5, k]) / (e[6] - e[5])
        }
    }'
}

# st_wait_sampler DIR FILE: with --wait-events, every 50 ms, the app's backends and the
# server's own processes on the cluster in DIR, as "EPOCH|WHO|STATE|TYPE:EVENT": WHO
# st-write or st-read for the app's (pgbench's application_name), caretaker for
# caretaker's, else the backend type (autovacuum worker, checkpointer, ...). One psql
# repeating the query (\watch), exec'd so that stopping this child stops it.
st_wait_sampler() {
    exec psql -X -q -At -F '|' "$(pg_conninfo "$1" postgres)" >>"$2" 2>/dev/null <<'SQL'
SELECT extract(epoch FROM now()),
       CASE WHEN application_name LIKE 'st-%' THEN application_name
            WHEN application_name LIKE 'caretaker%' THEN 'caretaker' ELSE backend_type END,
       coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, '')
FROM pg_stat_activity
WHERE pid <> pg_backend_pid()
  AND (backend_type <> 'client backend' OR application_name LIKE 'st-%' OR application_name LIKE 'caretaker%')
\watch 0.05
SQL
}
# st_waits FILE WHO "B0 B1 T0 T1 A0 A1": wait_events.py's three lines for WHO's samples
# before caretaker, with it, and after it (warm-up and the gap after it left out).
st_waits() {
    local b0 b1 t0 t1 a0 a1
    read -r b0 b1 t0 t1 a0 a1 <<<"$3"
    awk -F '|' -v OFS='|' -v who="$2" -v b0="$b0" -v b1="$b1" -v t0="$t0" -v t1="$t1" -v a0="$a0" -v a1="$a1" \
        '$2 == who && (($1 >= b0 && $1 < b1) || ($1 >= t0 && $1 <= t1) || ($1 > a0 && $1 <= a1)) { print $1, $3, $4 }' \
        "$1" >"$1.$2"
    "$python3" "$helpers/wait_events.py" "$1.$2" "$b0" "$t0" "$t1" "$a1" | paste -sd '|' | sed 's/|/. /g'
}
# st_autovacuum_share FILE "B0 B1 T0 T1 A0 A1": the share of samples in which an
# autovacuum worker was at work, before caretaker, with it, and after it.
st_autovacuum_share() {
    awk -F '|' -v ends="$2" 'BEGIN { split(ends, e, " ") }
        { s = ($1 >= e[1] && $1 < e[2]) ? 1 : ($1 >= e[3] && $1 <= e[4]) ? 2 : ($1 > e[5] && $1 <= e[6]) ? 3 : 0
          if (!s) next; if (!(($1) in seen)) { seen[$1] = s; n[s]++ }
          if ($2 == "autovacuum worker" && $3 == "active" && !(($1) in av)) { av[$1] = 1; a[s]++ } }
        END { printf "%.0f %%/%.0f %%/%.0f %%", 100 * a[1] / (n[1] ? n[1] : 1), 100 * a[2] / (n[2] ? n[2] : 1), 100 * a[3] / (n[3] ? n[3] : 1) }' "$1"
}

# st_p99 SPANS LOG...: "P99_MS P50_MS N LAG_P99_MS OWN_P99_MS" of the transactions that
# started in SPANS ("FROM:TO[,FROM:TO]", epoch seconds), from pgbench logs. Under --rate a
# transaction's latency counts from its scheduled start, time queued behind late ones
# included (LAG, pgbench's schedule lag); OWN is the latency without it, from sending
# the transaction to its end.
st_p99() {
    "$python3" -c '
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
from pgbench_log import quantile, transactions
spans = [tuple(map(float, s.split(":"))) for s in sys.argv[2].split(",")]
ms, lags, own = [], [], []
for path in sys.argv[3:]:
    for start, latency, lag in transactions(path, with_lag=True):
        if any(lo <= start < hi for lo, hi in spans):
            ms.append(latency * 1000)
            lags.append(lag * 1000)
            own.append((latency - lag) * 1000)
print(f"{quantile(ms, 0.99):.2f} {quantile(ms, 0.5):.2f} {len(ms)} {quantile(lags, 0.99):.2f} {quantile(own, 0.99):.2f}")' "$helpers" "$@"
}

# st_at_sample FILE EPOCH COLUMN: COLUMN of the sample nearest EPOCH.
st_at_sample() {
    awk -v t="$2" -v c="$3" '{ d = $1 - t; if (d < 0) d = -d; if (best == "" || d < best) { best = d; v = $c } } END { print v }' "$1"
}
# st_span_stat FILE FROM TO COLUMN: "MIN MAX" of COLUMN over the samples in [FROM, TO].
st_span_stat() {
    awk -v a="$2" -v b="$3" -v c="$4" '$1 >= a && $1 <= b { if (mn == "" || $c < mn) mn = $c; if ($c > mx) mx = $c } END { print mn + 0, mx + 0 }' "$1"
}
# st_wal_rate FILE SPANS: the cluster's WAL bytes a second over SPANS ("FROM:TO,...").
st_wal_rate() {
    awk -v spans="$2" 'BEGIN { n = split(spans, s, ","); for (i = 1; i <= n; i++) { split(s[i], x, ":"); lo[i] = x[1]; hi[i] = x[2] } }
        { for (i = 1; i <= n; i++) if ($1 >= lo[i] && $1 <= hi[i]) { if (!(i in f)) { f[i] = $5; ft[i] = $1 } l[i] = $5; lt[i] = $1 } }
        END { for (i = 1; i <= n; i++) if (i in f) { b += l[i] - f[i]; t += lt[i] - ft[i] } printf "%.0f", (t > 0 ? b / t : 0) }' "$1"
}
st_lag() { local a; read -r _ _ _ a _ <<<"$1"; echo "$a"; }
st_own() { local a; read -r _ _ _ _ a <<<"$1"; echo "$a"; }
# st_latency "P99 P50 N LAG OWN" SECONDS: "P99 ms (N tx/s; schedule lag p99 LAG ms, without it OWN ms)".
st_latency() {
    local p99 _p50 n lag own
    read -r p99 _p50 n lag own <<<"$1"
    echo "$p99 ms ($(fmt %.0f "$(calc "$n / $2")") tx/s; schedule lag p99 $lag ms, p99 without it $own ms)"
}
st_mb() { fmt %.0f "$(calc "$1 / 1048576")"; }

row_ST() {
    # Compressed time: lifetimes and partitions in seconds.
    st_min_s=$((86400 / st_compress)) st_max_s=$((172800 / st_compress)) st_part_s=$((86400 / st_compress))
    st_total=$((2 * st_baseline + st_warmup + st_seconds))
    local layouts layout
    IFS=, read -r -a layouts <<<"$st_layouts"
    # The app starts at $st_at exactly; the table is seeded as of then, so the seeding
    # must be over by then: allowed 60 s and, per million posts written, 100 s for two
    # layouts seeding side by side, 40 s for one (one took about 22 s on this machine).
    # A late start is reported.
    local seed_started; seed_started=$(now)
    local seeded_rows=$((st_rate * (st_max_s + st_part_s))) per_million=40
    [ "${#layouts[@]}" -eq 2 ] && per_million=100
    st_at=$(( ${seed_started%.*} + 60 + seeded_rows / 1000000 * per_million ))
    if [ "${#layouts[@]}" -eq 2 ]; then
        st_seeded part &
        local part_seeding=$!
        st_seeded flat
        wait "$part_seeding" || { echo "scripts/bench: ST: seeding the partitioned layout failed" >&2; exit 1; }
        extra_pgdirs+=("$work/st-part")  # started in the subshell: stopped from here
    else
        st_seeded "${layouts[0]}"
    fi
    log "ST: seeded $(st_sql "$work/st-${layouts[0]}" app -c "SELECT count(*) FROM posts") posts per cluster in $(fmt %.0f "$(calc "$(now) - $seed_started")") s; the app starts at $(date -u -d "@$st_at" +%H:%M:%S)"

    local lifetimes=("min_lifetime = \"${st_min_s}s\"" "max_lifetime = \"${st_max_s}s\"")
    local pgdir
    for layout in "${layouts[@]}"; do
        pgdir="$work/st-$layout"
        if [ "$layout" = part ]; then
            only_job expire-content "$st_schedule" "${lifetimes[@]}" 'retire_partitions = true' | config "$work/st-part.toml" app
        else
            only_job expire-content "$st_schedule" "${lifetimes[@]}" | config "$work/st-flat.toml" app
        fi
    done
    pgdir="$work/pg"

    local late; late=$(calc "$(now) - $st_at")
    holds "$late < 0" && sleep "$(calc "0 - ($late)")"
    local start; start=$(now)
    st_pgbench=()
    for layout in "${layouts[@]}"; do
        local dir="$work/st-$layout"
        pgbench -n -M prepared -f "$helpers/stream-write.pgbench" -c 16 -j 1 -R "$st_rate" -T "$st_total" \
            --log --log-prefix="$work/st-$layout-write" -D packs=1000 -D users=10000 \
            "$(pg_conninfo "$dir" app) application_name=st-write" >"$work/st-$layout-write.out" 2>&1 &
        spawned $!
        st_pgbench+=($!)
        pgbench -n -M prepared -f "$helpers/app-read.pgbench" -c 8 -j 1 -R "$st_reads" -T "$st_total" \
            --log --log-prefix="$work/st-$layout-read" -D packs=1000 -D users=10000 \
            "$(pg_conninfo "$dir" app) application_name=st-read" >"$work/st-$layout-read.out" 2>&1 &
        spawned $!
        st_pgbench+=($!)
        : >"$work/st-$layout.samples"
        st_sampler "$layout" "$work/st-$layout.samples" &
        spawned $!
        if [ "$wait_events" = true ]; then
            : >"$work/st-$layout.waits"
            st_wait_sampler "$dir" "$work/st-$layout.waits" &
            spawned $!
        fi
    done
    # st_mark NAME: the server's counters of each layout now, as st_counters_NAME_LAYOUT.
    st_mark() { local l; for l in "${layouts[@]}"; do printf -v "st_counters_$1_$l" '%s' "$(st_counters "$work/st-$l")"; done; }

    # The app alone, nothing due; its first 20 s (connections, caches) left out.
    sleep 20
    local b0 cpu_b0; b0=$(now); cpu_b0=$(st_cpu_snapshot); st_mark b0
    sleep "$((st_baseline - 20))"
    local b1 cpu_b1; b1=$(now); cpu_b1=$(st_cpu_snapshot); st_mark b1
    local cpu0_part=0 cpu0_flat=0 cpu1_part=0 cpu1_flat=0
    for layout in "${layouts[@]}"; do
        run_bin=$caretaker daemon "st-$layout" "$work/st-$layout.toml"
        echo "$daemon_pid" >"$work/st-$layout.pid"
    done
    sleep "$st_warmup"
    local t0 cpu_t0; t0=$(now); cpu_t0=$(st_cpu_snapshot); st_mark t0
    for layout in "${layouts[@]}"; do printf -v "cpu0_$layout" '%s' "$(cpu_seconds "$(cat "$work/st-$layout.pid")")"; done
    log "ST: caretaker warmed up; measuring for $st_seconds s"
    sleep "$st_seconds"
    local t1 cpu_t1; t1=$(now); cpu_t1=$(st_cpu_snapshot); st_mark t1
    for layout in "${layouts[@]}"; do printf -v "cpu1_$layout" '%s' "$(cpu_seconds "$(cat "$work/st-$layout.pid")")"; done
    for layout in "${layouts[@]}"; do
        stop_child "$(cat "$work/st-$layout.pid")"
        rm -f "$work/st-$layout.pid"
    done
    # The app alone again, after the last run's transactions.
    sleep 5
    local a0 cpu_a0; a0=$(now); cpu_a0=$(st_cpu_snapshot); st_mark a0
    sleep "$(calc "$start + $st_total - $(now)")"
    local a1 cpu_a1; a1=$(now); cpu_a1=$(st_cpu_snapshot); st_mark a1
    sleep 12  # pgbench's last transactions and the last samples
    local span; span=$(calc "$t1 - $t0")
    local base="$b0:$b1,$a0:$a1"  # no expiry: the WAL's and the CPU's reference

    for layout in "${layouts[@]}"; do
        local dir="$work/st-$layout" samples="$work/st-$layout.samples"
        local label="partitioned by \"day\" ($((st_part_s / 60)) min), retire_partitions"
        [ "$layout" = flat ] && label="single table"
        local deleted dropped parts runs skipped failed
        read -r deleted dropped parts runs skipped failed <<<"$(st_sql "$dir" app -F ' ' -c "
            SELECT coalesce(sum((stats->>'posts_deleted')::bigint), 0), coalesce(sum((stats->>'posts_dropped')::bigint), 0),
                   coalesce(sum((stats->>'partitions_dropped')::bigint), 0), count(*) FILTER (WHERE status <> 'skipped'),
                   count(*) FILTER (WHERE status = 'skipped'),
                   count(*) FILTER (WHERE status NOT IN ('succeeded', 'interrupted', 'skipped'))
            FROM caretaker.job_runs WHERE job = 'expire-content' AND started_at >= to_timestamp($t0) AND started_at < to_timestamp($t1)")"
        # Runs straddle the window's ends: the backlog's change accounts for the posts due
        # in the window that those runs took or left.
        local k0 k1 kmin kmax
        k0=$(st_at_sample "$samples" "$t0" 2); k1=$(st_at_sample "$samples" "$t1" 2)
        read -r kmin kmax <<<"$(st_span_stat "$samples" "$t0" "$t1" 2)"
        local expired=$((deleted + dropped)) rate due
        rate=$(calc "$expired / $span")
        due=$(calc "($expired + $k1 - $k0) / $span")
        result ST "$label: expired posts/s ÷ due posts/s over $(fmt %.0f "$span") s; past due not yet gone" \
            "$(fmt %.2f "$(calc "$rate / $due")") ($(fmt %.0f "$rate") expired/s: $deleted row by row, $dropped with $parts partitions dropped; due $(fmt %.0f "$due")/s; past due not yet gone $k0 at the start, $k1 at the end, $kmin–$kmax; $runs runs, $failed failed; $skipped slots skipped, the previous run still going)" \
            "≥ 0.95; backlog ≤ 30 s of due posts at the end" "$(verdict "$rate >= 0.95 * $due && $k1 <= 30 * $st_rate")"

        # The verdict compares with the span before caretaker started: the one after it
        # inherits what the run left (dead rows, and queued transactions when the app fell
        # behind), and is shown beside it.
        local w_run w_before w_after r_run r_before r_after
        w_run=$(st_p99 "$t0:$t1" "$work/st-$layout-write".*[0-9]); r_run=$(st_p99 "$t0:$t1" "$work/st-$layout-read".*[0-9])
        w_before=$(st_p99 "$b0:$b1" "$work/st-$layout-write".*[0-9]); r_before=$(st_p99 "$b0:$b1" "$work/st-$layout-read".*[0-9])
        w_after=$(st_p99 "$a0:$a1" "$work/st-$layout-write".*[0-9]); r_after=$(st_p99 "$a0:$a1" "$work/st-$layout-read".*[0-9])
        local wr rr wo ro
        wr=$(fmt %.2f "$(calc "${w_run%% *} / ${w_before%% *}")"); rr=$(fmt %.2f "$(calc "${r_run%% *} / ${r_before%% *}")")
        wo=$(fmt %.2f "$(calc "$(st_own "$w_run") / $(st_own "$w_before")")"); ro=$(fmt %.2f "$(calc "$(st_own "$r_run") / $(st_own "$r_before")")")
        # When the app could not hold its rate even before caretaker started (its schedule
        # lag is the larger part of its p99), the machine is saturated and the ratio says
        # nothing of caretaker: no verdict, and the ratio without the lag is shown too.
        local p99_verdict; p99_verdict=$(verdict "$wr <= 1.2 && $rr <= 1.2")
        if holds "$(st_lag "$w_before") > 0.5 * ${w_before%% *} || $(st_lag "$r_before") > 0.5 * ${r_before%% *}"; then
            p99_verdict="n/a (the app's rate was not held before caretaker started: the machine is saturated)"
        fi
        result ST "$label: app p99 with expiry ÷ before it (writes; page views); the same without schedule lag" \
            "writes $wr, without lag $wo; page views $rr, without lag $ro. Writes $(st_latency "$w_run" "$span") vs before $(st_latency "$w_before" "$(calc "$b1 - $b0")"), after $(st_latency "$w_after" "$(calc "$a1 - $a0")"); page views $(st_latency "$r_run" "$span") vs before $(st_latency "$r_before" "$(calc "$b1 - $b0")"), after $(st_latency "$r_after" "$(calc "$a1 - $a0")")" \
            "≤ 1.2 each" "$p99_verdict"

        # The size one "day" apart (the same point of the partitions' cycle), and its range.
        local s0 s1 send smin smax
        s0=$(st_at_sample "$samples" "$t0" 3)
        s1=$(st_at_sample "$samples" "$(calc "$t0 + $st_part_s")" 3)
        send=$(st_at_sample "$samples" "$t1" 3)
        read -r smin smax <<<"$(st_span_stat "$samples" "$t0" "$t1" 3)"
        local growth="n/a (the window is shorter than a \"day\")" size_verdict="n/a"
        if holds "$span >= $st_part_s"; then
            growth=$(fmt %.2f "$(calc "$s1 / $s0")")
            size_verdict=$(verdict "$growth <= 1.05")
        fi
        [ "$layout" = flat ] && size_verdict="-"
        local target="≤ 1.05"; [ "$layout" = flat ] && target="– (reported)"
        local wal wal_base per_post
        wal=$(st_wal_rate "$samples" "$t0:$t1"); wal_base=$(st_wal_rate "$samples" "$base")
        per_post=$(fmt %.0f "$(calc "($wal - $wal_base) / ($rate > 0 ? $rate : 1)")")
        local rss_max cpu_var0="cpu0_$layout" cpu_var1="cpu1_$layout"
        rss_max=$(awk -v a="$t0" -v b="$t1" '$1 >= a && $1 <= b && $6 > m { m = $6 } END { print m + 0 }' "$samples")
        result ST "$label: size of posts (indexes, TOAST) one \"day\" apart; WAL per expired post; caretaker's CPU and memory" \
            "$growth ($(st_mb "$s0") MB at the start, $(st_mb "$s1") MB a \"day\" later, $(st_mb "$send") MB at the end, $(st_mb "$smin")–$(st_mb "$smax") MB); WAL $per_post B per expired post ($(fmt %.2f "$(calc "$wal / 1048576")") MB/s with expiry, $(fmt %.2f "$(calc "$wal_base / 1048576")") MB/s without); caretaker CPU $(fmt %.1f "$(calc "100 * (${!cpu_var1} - ${!cpu_var0}) / $span")") % of a core, RSS max $(mib "$rss_max") MiB" \
            "$target" "$size_verdict"
        # Where the app's writes may wait: the server's counters, and with --wait-events
        # what the app's backends waited on and how often autovacuum was at work.
        local ends="$b0 $b1 $t0 $t1 $a0 $a1" m counters=()
        for m in b0 b1 t0 t1 a0 a1; do local v="st_counters_${m}_$layout"; counters+=("${!v}"); done
        local server_line; server_line="the server, a second, before caretaker/with it/after it: WAL $(fmt %.2f "$(calc "$(st_wal_rate "$samples" "$b0:$b1") / 1048576")")/$(fmt %.2f "$(calc "$wal / 1048576")")/$(fmt %.2f "$(calc "$(st_wal_rate "$samples" "$a0:$a1") / 1048576")") MB; $(st_counter_rates "$ends" "${counters[@]}")"
        if [ "$wait_events" = true ]; then
            server_line+=". An autovacuum worker at work in $(st_autovacuum_share "$work/st-$layout.waits" "$ends") of the samples. The app's writes: $(st_waits "$work/st-$layout.waits" st-write "$ends"). Page views: $(st_waits "$work/st-$layout.waits" st-read "$ends")"
        fi
        result ST "$label: where the app's time may go (before caretaker; with it; after it)" "$server_line" "–" "-"
        # The size over the run, every 5 minutes, for BENCHMARKS.md.
        echo "ST $layout: size of posts every 5 min from the app's start (MB): $(awk -v s="$start" '$1 >= s + n * 300 { printf "%s%.0f", (n ? ", " : ""), $3 / 1048576; n++ }' "$samples"); past due not yet gone: $(awk -v s="$start" '$1 >= s + n * 300 { printf "%s%d", (n ? ", " : ""), $2; n++ }' "$samples")" >>"$work/notes.txt"
    done
    # Where the machine's CPU went, with expiry and without: the whole machine (other
    # work included) and each part of the bench, in cores (CPU seconds a second).
    # (The servers of the layouts left out of the run are not named.)
    local with without
    with=$(awk -v a="$cpu_t0" -v b="$cpu_t1" -v run=",$st_layouts," 'BEGIN { split(a, x, " "); split(b, y, " "); t = (y[2] - x[2]) / 2
        printf "machine %.0f %% busy; ", 100 * (y[1] - x[1]) / (y[2] - x[2])
        if (run ~ /,part,/) printf "part server %.2f, ", (y[3] - x[3]) / t
        if (run ~ /,flat,/) printf "flat server %.2f, ", (y[4] - x[4]) / t
        printf "pgbench %.2f cores", (y[5] - x[5]) / t }')
    without=$(awk -v a="$cpu_b0" -v b="$cpu_b1" -v c="$cpu_a0" -v d="$cpu_a1" -v run=",$st_layouts," 'BEGIN { split(a, x, " "); split(b, y, " "); split(c, u, " "); split(d, v, " ")
        t = (y[2] - x[2] + v[2] - u[2]) / 2
        printf "machine %.0f %% busy; ", 100 * (y[1] - x[1] + v[1] - u[1]) / (y[2] - x[2] + v[2] - u[2])
        if (run ~ /,part,/) printf "part server %.2f, ", (y[3] - x[3] + v[3] - u[3]) / t
        if (run ~ /,flat,/) printf "flat server %.2f, ", (y[4] - x[4] + v[4] - u[4]) / t
        printf "pgbench %.2f cores", (y[5] - x[5] + v[5] - u[5]) / t }')
    result ST "where the CPU went ($(nproc) cores), with expiry; without (the baseline spans)" "$with; $without" "–" "-"
    echo "ST: layouts $st_layouts; time compressed $st_compress×: lifetimes ${st_min_s}–${st_max_s} s, partitions of ${st_part_s} s; expire-content on \"$st_schedule\"; per cluster the app writes $st_rate posts/s (16 clients) and serves $st_reads page views/s (8 clients); the app started $(fmt %.1f "$(calc "$start - $st_at")") s after the seeded moment; baseline $(fmt %.0f "$(calc "$b1 - $b0")") s before caretaker and $(fmt %.0f "$(calc "$a1 - $a0")") s after it, warm-up $st_warmup s, measured $(fmt %.0f "$span") s" >>"$work/notes.txt"
}
