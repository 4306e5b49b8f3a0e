# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- E1: backlog expiry

# Two identical copies of the seeded table (~80 % due). On one, the single plain
# DELETE of every due post: the speed limit, one statement, every row lock held to
# the end. On the other, `caretaker once expire-content` (wall clock of the whole
# command: process start, connect, both passes, bookkeeping). Rows/s of each, the
# ratio, and caretaker's longest transactions from its own job_runs.stats.
row_E1() {
    clone seeded e1_delete
    clone seeded e1_caretaker
    local t0 t1 tag

    settle e1_delete
    t0=$(now)
    tag=$(psql -X -At -v ON_ERROR_STOP=1 "$(conninfo e1_delete)" -c "DELETE FROM posts WHERE $post_due")
    t1=$(now)
    local d_rows=${tag#DELETE } d_s; d_s=$(calc "$t1 - $t0")
    local d_rate; d_rate=$(calc "$d_rows / $d_s")
    drop e1_delete

    # The speed limit of the sweep itself: without the WAL budget and the busy share,
    # which exist to slow a backlog down for the app's sake (C1 judges them, at the defaults).
    expire_config "$work/e1.toml" e1_caretaker 'max_wal_rate = ""' 'max_busy_share = ""'
    settle e1_caretaker
    t0=$(now)
    expire_once "$work/e1.toml" || log "E1: caretaker once expire-content exited $?"
    t1=$(now)
    local c_s; c_s=$(calc "$t1 - $t0")
    local c_rows p99 pmax run_ms batches status
    read -r c_rows p99 pmax batches run_ms status <<<"$(last_run e1_caretaker posts_deleted batch_p99_ms batch_max_ms batches ms status)"
    [ "$c_rows" = n/a ] && c_rows=0
    local c_rate; c_rate=$(calc "$c_rows / $c_s")
    local ratio; ratio=$(fmt %.2f "$(calc "$c_rate / $d_rate")")

    result E1 "backlog expiry, $(human "$posts") posts: caretaker (max_wal_rate = \"\", max_busy_share = \"\") rows/s ÷ single DELETE rows/s" \
        "$ratio (caretaker $(krate "$c_rate") rows/s: $c_rows in $(fmt %.2f "$c_s") s, $status; DELETE $(krate "$d_rate") rows/s: $d_rows in $(fmt %.2f "$d_s") s)" \
        "≥ 0.9" "$(verdict "$ratio >= 0.9")"

    # The same at the defaults, WAL budget included, for comparison.
    clone seeded e1_default
    expire_config "$work/e1-default.toml" e1_default
    settle e1_default
    t0=$(now)
    expire_once "$work/e1-default.toml" || log "E1: caretaker once expire-content exited $?"
    t1=$(now)
    local g_s g_rows g_throttled g_wal
    g_s=$(calc "$t1 - $t0")
    read -r g_rows g_throttled g_wal <<<"$(last_run e1_default posts_deleted throttled_ms wal_bytes)"
    drop e1_default
    result E1 "the same at caretaker's defaults (WAL budget, busy share): rows/s ÷ single DELETE rows/s" \
        "$(fmt %.2f "$(calc "$g_rows / $g_s / $d_rate")") ($(krate "$(calc "$g_rows / $g_s")") rows/s: $g_rows in $(fmt %.2f "$g_s") s; $(fmt %.0f "$(calc "$g_wal / 1048576")") MB of WAL, throttled $g_throttled ms)" \
        "— (C1 judges the defaults)" "-"
    local p99_verdict="n/a (no batch_p99_ms in job_runs.stats)"
    [ "$p99" != n/a ] && p99_verdict=$(verdict "$p99 <= 50")
    result E1 "caretaker's transactions in that run: batch p99 / max" \
        "p99 $p99 ms, max $pmax ms ($batches batches; run $run_ms ms in job_runs)" "p99 ≤ 50 ms" "$p99_verdict"
}
