# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- C1: gentleness

# pg_counters: cluster-wide counters, one line: WAL position (bytes), then pg_stat_wal's
# records, full page images, buffers-full writes and syncs, then pg_stat_bgwriter's
# timed and requested checkpoints and buffers written by the checkpointer, the
# background writer and backends.
pg_counters() {
    sql postgres -F ' ' -c "
        SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, w.wal_records, w.wal_fpi, w.wal_buffers_full, w.wal_sync,
               b.checkpoints_timed, b.checkpoints_req, b.buffers_checkpoint, b.buffers_clean, b.buffers_backend
        FROM pg_stat_wal w, pg_stat_bgwriter b"
}

# cpu_ticks: busy and iowait jiffies of the whole machine, and the total (/proc/stat).
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }

# c1_sampler FILE: every 0.2 s, the time, autovacuum workers vacuuming posts (an
# autoanalyze alone, "autovacuum: ANALYZE public.posts", is not counted), and with a
# standby its replay lag (ms, from pg_stat_replication) and bytes not yet replayed.
c1_sampler() {
    while :; do
        sql postgres -F ' ' -c "
            SELECT extract(epoch FROM clock_timestamp()),
                   (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND query LIKE 'autovacuum: VACUUM%posts%'),
                   coalesce((SELECT round(extract(epoch FROM max(replay_lag)) * 1000) FROM pg_stat_replication), -1),
                   coalesce((SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)) FROM pg_stat_replication), -1)" || true
        sleep 0.2
    done >>"$1"
}

# c1_server_sampler FILE: with --wait-events, every 10 ms, every server process but the
# bench's own samplers, as "EPOCH|WHO|STATE|TYPE:EVENT": WHO "app" for pgbench's
# backends, "caretaker" for caretaker's, "delete" for the single DELETE's, else the
# backend type (walwriter, checkpointer, ...). One psql that repeats the query (\watch:
# no process per sample; exec, so that stopping this child stops it); each sample is a
# transaction of its own and holds back no vacuum. Appended: with --c1-runs, FILE keeps
# every attempt of the variant (--keep), and the readers take each attempt's samples by
# their time. stalls.py reads it (who held the app up when every client waited at once,
# BENCHMARKS.md, C1: stalls), and c1_app_waits takes the app's lines from it.
c1_server_sampler() {
    exec psql -X -q -At -F '|' "$(conninfo postgres)" >>"$1" 2>/dev/null <<'SQL'
SELECT extract(epoch FROM now()),
       CASE WHEN application_name = 'pgbench' THEN 'app'
            WHEN application_name LIKE 'caretaker%' THEN 'caretaker'
            WHEN query LIKE 'DELETE FROM posts%' THEN 'delete'
            ELSE backend_type END,
       coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, '')
FROM pg_stat_activity
WHERE pid <> pg_backend_pid()
  AND (backend_type <> 'client backend' OR application_name = 'pgbench' OR application_name LIKE 'caretaker%'
       OR query LIKE 'DELETE FROM posts%')
\watch 0.01
SQL
}

# c1_app_waits SERVER WAITS: the app's lines of c1_server_sampler's SERVER, as
# "EPOCH|STATE|TYPE:EVENT", into WAITS (wait_events.py and timeline.py read them).
c1_app_waits() { awk -F '|' -v OFS='|' '$2 == "app" { print $1, $3, $4 }' "$1" >"$2"; }

# disk_counters: the block device under the bench's data directory, from
# /proc/diskstats: "NAME WRITES SECTORS_WRITTEN FLUSHES" (nothing where the directory
# is on no block device, such as an overlay).
disk_counters() {
    local major minor
    read -r major minor <<<"$(stat -c '%Hd %Ld' "$work/pg/data" 2>/dev/null)"
    awk -v major="$major" -v minor="$minor" '$1 == major && $2 == minor { print $3, $8, $10, $19 + 0 }' /proc/diskstats
}

# c1_config FILE DB VARIANT: expire-content's configuration for a C1 variant (see --help);
# parts joined by "+" combine (compress+spacing=4s).
c1_config() {
    local extra=() worker="" part
    local IFS=+
    for part in $3; do
        case $part in
            default) ;;
            low-footprint) worker=$'[worker]\nlow_footprint = true\n' ;;
            unthrottled) extra+=('max_wal_rate = ""' 'max_busy_share = ""' 'synchronous_commit = true') ;;
            sync) extra+=('synchronous_commit = true') ;;
            compress) extra+=('compress_wal = true') ;;
            prune) extra+=('prune_swept_pages = true') ;;
            noprune) extra+=('prune_swept_pages = false') ;;
            nocompress) extra+=('compress_wal = false') ;;
            dedup) ;;  # the index, not the configuration: c1_attempt
            vacuumwait) extra+=('wait_for_vacuum = true') ;;
            novacuumwait) extra+=('wait_for_vacuum = false') ;;
            rate=*) extra+=("max_wal_rate = \"${part#rate=}/s\"") ;;
            fixed=*) extra+=("max_wal_rate = \"${part#fixed=}/s\"" 'max_commit_slowdown = ""') ;;
            slowdown=*) extra+=("max_commit_slowdown = \"${part#slowdown=}%\"") ;;
            spacing=*) extra+=("checkpoint_spacing = \"${part#spacing=}\"") ;;
            share=) extra+=('max_busy_share = ""') ;;
            share=*) extra+=("max_busy_share = \"${part#share=}%\"") ;;
            *) echo "scripts/bench: unknown C1 variant $part (see --help)" >&2; exit 64 ;;
        esac
    done
    unset IFS
    config "$1" "$2" <<TOML
$worker
[jobs.expire-content]
schedule = "$far"
catch_up = false
max_runtime = "1h"
$(printf '%s\n' "${extra[@]}")
TOML
}

# c1_app_scripts: pgbench's -f arguments for --app-workload; c1_app_what: its words in the
# table. Whatever the workload, the app never writes a row the expiry may delete.
c1_app_scripts() {
    case $app_workload in
        write) c1_app_args=(-f "$helpers/app.pgbench"); c1_app_what="app writes" ;;
        read) c1_app_args=(-f "$helpers/app-read.pgbench"); c1_app_what="app page views (reads)" ;;
        mixed) c1_app_args=(-f "$helpers/app-read.pgbench@4" -f "$helpers/app.pgbench@1")
            c1_app_what="app page views and writes (4:1)" ;;
    esac
}

# c1_run VARIANT: c1_attempt, repeated (at most twice more) while its baseline was
# disturbed: a p99 before the expiry over 15 times the median before it, where an
# undisturbed one is 5–8 times (the app's first changes after settle's checkpoint
# write full page images). Such a stall (25–200 ms, seen now and then on the bench's
# VM with nothing else running) would flatter the ratio; the repeat is logged, and a
# baseline still disturbed after three attempts is marked in the result.
c1_run() {
    local attempt
    for attempt in 1 2 3; do
        c1_attempt "$1"
        c1_disturbed=""
        holds "${c1[0]} > 15 * $c1_base_p50" || return 0
        c1_disturbed="; baseline disturbed (p99 ${c1[0]} ms, median $c1_base_p50 ms)"
        [ "$attempt" -lt 3 ] && log "C1 $1: baseline disturbed (p99 ${c1[0]} ms, median $c1_base_p50 ms): run again"
    done
    return 0
}

# c1_attempt VARIANT: app load (pgbench, 4 clients, --app-rate tx/s) on a fresh copy; after
# --baseline seconds, the expiry (the single DELETE, or caretaker configured as VARIANT).
# Sets c1 to "BASE_P99 RUN_P99 BASE_N RUN_N RUN_MAX ROWS SECONDS WAL_MB FPI RECORDS
# BUFFERS_FULL WAL_SYNCS CKPT_TIMED CKPT_REQ BUF_CKPT BUF_CLEAN BUF_BACKEND CPU_BUSY%
# IOWAIT% AUTOVACUUM MAX_LAG_MS MAX_LAG_MB THROTTLED_MS BUDGET_CUTS LOWEST_KBPS LAST_KBPS
# RESTED_MS VACUUM_WAIT_MS": the p99 of transactions that
# started before the expiry and of those that started while it ran (same pgbench run,
# same database, so the ratio compares like with like), and what the cluster did while
# the expiry ran (counters from its start to 2 s after its end). Sets c1_base_p50, the
# median before the expiry, and c1_after_p99 and c1_after_n, the p99 and the number of
# transactions that started in the --after seconds after its end, and c1_halves, the
# baseline against itself (pgbench_p99.py); with the mixed app, c1_scripts, the p99 of
# page views and of writes during the expiry, each against its own before; with --window, sets
# c1_window_p99, the p99 of those that started in the --window seconds from its start.
c1_attempt() {
    local variant=$1 db=c1_${1//[^a-z0-9]/_}
    clone seeded "$db"
    # dedup: posts (pack_id, likes) as it was before migration 11, deduplicated.
    if [[ "+$variant+" == *+dedup+* ]]; then
        sql "$db" -c "ALTER INDEX posts_pack_likes_idx RESET (deduplicate_items); REINDEX INDEX posts_pack_likes_idx" >/dev/null
    fi
    settle "$db"
    local lo hi
    read -r lo hi <<<"$(sql "$db" -F ' ' -c "SELECT max(id) - 20000, max(id) FROM posts")"
    local prefix="$work/c1-$db"
    [ "$variant" != delete ] && c1_config "$work/$db.toml" "$db" "$variant"
    : >"$prefix.samples"
    c1_sampler "$prefix.samples" &
    local sampler_pid=$!
    spawned "$sampler_pid"
    local server_pid=""
    if [ "$wait_events" = true ]; then
        c1_server_sampler "$prefix.server" &
        server_pid=$!
        spawned "$server_pid"
    fi
    local p0; p0=$(now)
    pgbench -n "${c1_app_args[@]}" -c 4 -j 2 -R "$app_rate" -T 3600 --log --log-prefix="$prefix" \
        -D packs=1000 -D users=10000 -D recent_lo="$lo" -D recent_hi="$hi" \
        "$(conninfo "$db")" >"$prefix.out" 2>&1 &
    local bench_pid=$!
    spawned "$bench_pid"
    sleep "$baseline"
    local t0 t1 rows before after cpu0 cpu1 disk0 disk1
    before=$(pg_counters); cpu0=$(cpu_ticks); disk0=$(disk_counters)
    t0=$(now)
    if [ "$variant" = delete ]; then
        rows=$(psql -X -At -v ON_ERROR_STOP=1 "$(conninfo "$db")" -c "DELETE FROM posts WHERE $post_due")
        rows=${rows#DELETE }
    else
        expire_once "$work/$db.toml" || true
        rows=$(last_run "$db" posts_deleted)
    fi
    t1=$(now)
    # For a look afterwards (--keep): when the app started, and the expiry's span.
    echo "$variant $p0 $t0 $t1" >>"$work/c1-spans"
    # Let transactions that started during the expiry finish and reach the log.
    sleep 2
    after=$(pg_counters); cpu1=$(cpu_ticks); disk1=$(disk_counters)
    # The app goes on for --after seconds past the end, or to the end of the --window
    # when that is later (and 1 s more, for the last of those to finish): what the
    # deletion left behind, apart from the run itself.
    local tail=$after_seconds
    [ -n "$window_seconds" ] && tail=$(calc "($t0 + $window_seconds - $t1 > $after_seconds) ? $t0 + $window_seconds - $t1 : $after_seconds")
    sleep "$(calc "($tail > 1) ? $tail - 1 : 0")"
    kill -TERM "$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
    stop_child "$sampler_pid"
    c1_waits="" c1_stalls=""
    if [ -n "$server_pid" ]; then
        stop_child "$server_pid"
        c1_app_waits "$prefix.server" "$prefix.waits"
        c1_waits=$("$python3" "$helpers/wait_events.py" "$prefix.waits" "$(calc "$p0 + 1")" "$t0" "$t1" \
            "$(calc "$t1 + $after_seconds")" | paste -sd '|' | sed 's/|/. /g')
        c1_stalls=$("$python3" "$helpers/stalls.py" "$prefix.server" 4 "$t0" "$t1")
    fi
    # The disk under the data directory from the expiry's start to 2 s after its end.
    c1_disk=""
    if [ -n "$disk0" ] && [ -n "$disk1" ]; then
        c1_disk=$(awk -v a="$disk0" -v b="$disk1" -v s="$(calc "$t1 + 2 - $t0")" 'BEGIN {
            split(a, x, " "); split(b, y, " "); w = y[2] - x[2]; if (w <= 0) w = 1
            printf "the disk (%s): %.0f writes/s of %.0f kB, %.0f MB/s, %.0f flushes/s", y[1], (y[2] - x[2]) / s,
                (y[3] - x[3]) * 512 / 1024 / w, (y[3] - x[3]) * 512 / 1048576 / s, (y[4] - x[4]) / s }')
    fi
    local windows
    read -r -a windows <<<"$("$python3" "$helpers/pgbench_p99.py" "$(calc "$p0 + 1")" "$t0" "$t0" "$t1" \
        "$t1" "$(calc "$t1 + $after_seconds")" "$prefix".*[0-9])"
    c1_base_p50=${windows[5]} c1_after_p99=${windows[6]} c1_after_n=${windows[7]} c1_halves=${windows[8]}
    c1_scripts=""
    if [ "$app_workload" = mixed ]; then
        c1_scripts="; page views p99 ${windows[9]} ms (${windows[10]}× theirs before)"
        c1_scripts+=", writes p99 ${windows[11]} ms (${windows[12]}× theirs before)"
    fi
    c1_window_p99=""
    if [ -n "$window_seconds" ]; then
        # The same baseline; "during" is now the span from the start, nothing after it.
        local spanned
        read -r -a spanned <<<"$("$python3" "$helpers/pgbench_p99.py" "$(calc "$p0 + 1")" "$t0" "$t0" \
            "$(calc "$t0 + $window_seconds")" 0 0 "$prefix".*[0-9])"
        c1_window_p99=${spanned[1]}
    fi
    local counters
    counters=$(awk -v a="$before" -v b="$after" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ")
        printf "%.1f", (y[1] - x[1]) / 1048576
        for (i = 2; i <= n; i++) printf " %d", y[i] - x[i] }')
    local cpu
    cpu=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { split(a, x, " "); split(b, y, " "); t = y[3] - x[3]; if (t <= 0) t = 1
        printf "%.0f %.0f", 100 * (y[1] - x[1]) / t, 100 * (y[2] - x[2]) / t }')
    local during
    during=$(awk -v from="$t0" -v to="$(calc "$t1 + 2")" '$1 >= from && $1 <= to {
            if ($2 > av) av = $2; if ($3 > lag) lag = $3; if ($4 > bytes) bytes = $4 }
        END { printf "%s %d %.1f", (av > 0 ? "yes" : "no"), (lag == "" ? -1 : lag), (bytes == "" ? -1 : bytes / 1048576) }' "$prefix.samples")
    # How caretaker's run paced itself, from its stats in one read: throttled, the
    # budget's cuts, lowest and last rate, rested, waited for vacuums (c1[22] to c1[27]).
    local paced="n/a n/a n/a n/a n/a n/a"
    if [ "$variant" != delete ]; then
        paced=$(last_run "$db" throttled_ms budget_cuts wal_rate_lowest_kbps wal_rate_last_kbps rested_ms vacuum_wait_ms)
    fi
    drop "$db"
    c1=("${windows[@]:0:5}" $rows $(calc "$t1 - $t0") $counters $cpu $during $paced)
}

# c1_describe: the figures of one c1_run, as the table shows them.
c1_describe() {
    local lag=""
    [ "$standby" = true ] && lag="; standby replay lag max ${c1[20]} ms, ${c1[21]} MB behind"
    local throttle=""
    [ "${c1[22]}" != n/a ] && throttle="; throttled ${c1[22]} ms"
    [ "${c1[26]}" != n/a ] && throttle+="; rested ${c1[26]} ms (busy share)"
    [ "${c1[27]}" != n/a ] && throttle+="; waited ${c1[27]} ms for vacuums"
    [ "${c1[23]}" != n/a ] && throttle+="; budget cut ${c1[23]} times, lowest $((${c1[24]} / 1024)) MB/s, last $((${c1[25]} / 1024)) MB/s"
    local span=""
    [ -n "$window_seconds" ] && span="; over the $window_seconds s from its start: p99 $c1_window_p99 ms ($(c1_window_ratio)× before)"
    echo "p99 ${c1[1]} vs ${c1[0]} ms (median before $c1_base_p50 ms), max ${c1[4]} ms, ${c1[3]} tx${c1_disturbed:-}$c1_scripts; the baseline against itself (p99 of its second half ÷ its first) $c1_halves; in the ${after_seconds} s after: p99 $c1_after_p99 ms ($(c1_before_ratio "$c1_after_p99")× before), $c1_after_n tx$span; ${c1[5]} rows in $(fmt %.1f "${c1[6]}") s = $(krate "$(calc "${c1[5]} / ${c1[6]}")") rows/s$throttle; WAL ${c1[7]} MB (${c1[8]} records, ${c1[9]} full page images, ${c1[11]} WAL syncs, ${c1[10]} writes for full WAL buffers); checkpoints ${c1[13]} requested + ${c1[12]} timed; buffers written by checkpointer ${c1[14]}, bgwriter ${c1[15]}, backends ${c1[16]}; CPU busy ${c1[17]} %, iowait ${c1[18]} %${c1_disk:+; $c1_disk}; autovacuum on posts: ${c1[19]}$lag${c1_waits:+; the app backends while active: $c1_waits}${c1_stalls:+; stalls of the app (every client active at once) during the expiry: $c1_stalls}"
}

row_C1() {
    c1_app_scripts
    : >"$work/c1-points.tsv"
    : >"$work/c1-runs.tsv"
    local run
    for run in $(seq 1 "$c1_runs"); do
        c1_run_label=""
        [ "$c1_runs" -gt 1 ] && c1_run_label="run $run, "
        c1_series
    done
    [ "$c1_runs" -gt 1 ] && c1_summary
    if [ -n "$chart" ]; then
        local durability="durable"; [ "$durable" = true ] || durability="not durable"
        "$python3" "$helpers/tradeoff_svg.py" "$work/c1-points.tsv" "$chart" \
            "C1, $(human "$posts") posts, $durability, max_wal_size $(sql postgres -c "SHOW max_wal_size"), app $app_rate tx/s ($app_workload)"
        log "chart written to $chart"
    fi
}

# c1_before_ratio P99: P99 ÷ the app's p99 before the expiry, to two places (the p99
# during it, in the --after seconds after it, or over the --window from its start).
c1_before_ratio() { fmt %.2f "$(calc "$1 / ${c1[0]}")"; }

# c1_window_ratio: the p99 over the --window seconds from the expiry's start ÷ the p99
# before it; "-" without --window.
c1_window_ratio() {
    if [ -n "$window_seconds" ]; then c1_before_ratio "$c1_window_p99"; else echo -; fi
}

# c1_defaults_verdict RATIO SHARE: the defaults' target has two halves, p99 ratio
# ≤ 2 and rows/s ≥ 0.5× the single DELETE's. SHARE is empty when no `delete`
# variant ran: the pace half was not measured, so the row cannot be "met"
# (a missed p99 half is MISSED either way).
c1_defaults_verdict() {
    local ratio=$1 share=$2 p99
    p99=$(verdict "$ratio <= 2")
    if [ -n "$share" ]; then
        verdict "$ratio <= 2 && $share >= 0.5"
    elif [ "$p99" = met ]; then
        echo "not measured (p99 met; rows/s needs the delete variant)"
    else
        echo "$p99"
    fi
}

# c1_series: the single DELETE, then every other variant, each on a fresh copy.
c1_series() {
    local variant d_rate="" ratio rate label target verdict_text
    local variants=()
    IFS=, read -r -a variants <<<"$c1_variants"
    # The single DELETE first: the other rows' rows/s are compared with it.
    if [[ ",$c1_variants," == *",delete,"* ]]; then
        c1_run delete
        d_rate=$(calc "${c1[5]} / ${c1[6]}")
        ratio=$(c1_before_ratio "${c1[1]}")
        result C1 "${c1_run_label}$c1_app_what during the expiry ($app_rate tx/s, 4 clients), single DELETE: p99 ÷ p99 without expiry" \
            "$ratio ($(c1_describe))" "— (reference)" "-"
        printf 'single DELETE\t%s\t%s\n' "$ratio" "$d_rate" >>"$work/c1-points.tsv"
        printf 'single DELETE\t%s\t-\t-\t%s\t%s\t%s\n' "$ratio" "$(c1_before_ratio "$c1_after_p99")" "$(c1_window_ratio)" \
            "$c1_halves" >>"$work/c1-runs.tsv"
    fi
    for variant in "${variants[@]}"; do
        [ "$variant" = delete ] && continue
        c1_run "$variant"
        ratio=$(c1_before_ratio "${c1[1]}")
        rate=$(calc "${c1[5]} / ${c1[6]}")
        local speed="" share=""
        if [ -n "$d_rate" ]; then
            share=$(fmt %.2f "$(calc "$rate / $d_rate")")
            speed="; rows/s ÷ the DELETE's: $share"
        fi
        case $variant in
            default) label="caretaker (defaults)"; target="≤ 2, rows/s ≥ 0.5× DELETE"
                verdict_text=$(c1_defaults_verdict "$ratio" "$share") ;;
            low-footprint) label="caretaker (low-footprint mode)"; target="≤ 1.5"; verdict_text=$(verdict "$ratio <= 1.5") ;;
            *) label="caretaker ($variant)"; target="— (tuning option)"; verdict_text="-" ;;
        esac
        result C1 "${c1_run_label}$c1_app_what during the expiry ($app_rate tx/s, 4 clients), $label: p99 ÷ p99 without expiry" \
            "$ratio$speed ($(c1_describe))" "$target" "$verdict_text"
        printf '%s\t%s\t%s\n' "$label" "$ratio" "$rate" >>"$work/c1-points.tsv"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$ratio" "${share:--}" "$verdict_text" "$(c1_before_ratio "$c1_after_p99")" \
            "$(c1_window_ratio)" "$c1_halves" >>"$work/c1-runs.tsv"
    done
}

# c1_summary: each caretaker variant over the --c1-runs runs: the median ratio and pace,
# their range, and in how many runs its targets were met. One run on this kind of
# machine decides little (one setting has ranged from 1.3× to 25× at 5M in ten runs), so
# BENCHMARKS.md judges a setting by these.
c1_summary() {
    local label
    while IFS= read -r label; do
        local line target="-"
        line=$(awk -F'\t' -v l="$label" '$1 == l' "$work/c1-runs.tsv" | "$python3" -c '
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in sys.stdin]
ratios = [float(r[1]) for r in rows]
shares = [float(r[2]) for r in rows if r[2] != "-"]
met = sum(r[3] == "met" for r in rows)
judged = sum(r[3] in ("met", "MISSED") for r in rows)
afters = [float(r[4]) for r in rows]
spans = [float(r[5]) for r in rows if r[5] != "-"]
text = f"median {statistics.median(ratios):.2f} (range {min(ratios):.2f}–{max(ratios):.2f})"
text += f"; after the expiry median {statistics.median(afters):.2f} (range {min(afters):.2f}–{max(afters):.2f})"
if spans:
    within = sum(s <= 2 for s in spans)
    text += (f"; over the {sys.argv[1]} s from its start median {statistics.median(spans):.2f}"
             f" (range {min(spans):.2f}–{max(spans):.2f}; within 2× in {within} of {len(spans)})")
if shares:
    text += f"; rows/s ÷ the DELETE median {statistics.median(shares):.2f} (range {min(shares):.2f}–{max(shares):.2f})"
if judged:
    text += f"; target met in {met} of {judged} runs"
print(f"{statistics.median(ratios)}\t{statistics.median(shares) if shares else ''}\t{text}")' "$window_seconds")
        local median_ratio=${line%%$'\t'*} rest=${line#*$'\t'}
        local median_share=${rest%%$'\t'*} text=${rest#*$'\t'}
        local verdict_text="-"
        case $label in
            "caretaker (defaults)") target="median ≤ 2, rows/s median ≥ 0.5× DELETE"
                verdict_text=$(c1_defaults_verdict "$median_ratio" "$median_share") ;;
            "caretaker (low-footprint mode)") target="median ≤ 1.5"; verdict_text=$(verdict "$median_ratio <= 1.5") ;;
        esac
        result C1 "over $c1_runs runs, $label, $c1_app_what: app p99 ÷ p99 without expiry" "$text" "$target" "$verdict_text"
    done < <(cut -f1 "$work/c1-runs.tsv" | awk '!seen[$0]++')
    # What a per-run ratio may stray by chance: every attempt's baseline against itself.
    local halves
    halves=$(cut -f7 "$work/c1-runs.tsv" | "$python3" -c '
import math, statistics, sys
r = [float(x) for x in sys.stdin.read().split() if not math.isnan(float(x))]
print(f"median {statistics.median(r):.2f} (range {min(r):.2f}–{max(r):.2f}) over {len(r)} baselines;"
      f" within 0.8–1.25 in {sum(0.8 <= x <= 1.25 for x in r)}" if r else "no baseline")')
    result C1 "over $c1_runs runs, the baseline against itself, $c1_app_what: p99 of its second half ÷ its first, no expiry in either" \
        "$halves" "-" "-"
}
