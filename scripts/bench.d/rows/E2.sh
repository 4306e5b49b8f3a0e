# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- E2: nothing due
# after the first. `once` pays for a fresh backend's cold catalog caches inside the run.
e2_daemon() {
    only_job expire-content "@every 1s" | config "$work/e2-daemon-$1.toml" "$1"
    run_bin=$caretaker daemon "e2-daemon-$1" "$work/e2-daemon-$1.toml"
    sleep 13
    stop_child "$daemon_pid"
    sql "$1" -c "
        SELECT round((percentile_disc(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - started_at)) * 1000)::numeric, 2)
        FROM (SELECT * FROM caretaker.job_runs WHERE job = 'expire-content' AND trigger = 'schedule'
              ORDER BY id OFFSET 1) r"
}

# A run with nothing due, on a small and a big table: what is left after the backlog
# is gone (~12 % young posts, ~8 % 24-48 h old waiting for their popularity-extended
# deadline). Cost must follow what is due, not the size of the table.
row_E2() {
    local big=e1_caretaker
    if ! wants E1; then
        big=e2_big
        clone seeded "$big"
        sql "$big" -c "DELETE FROM posts WHERE $post_due"
    fi
    sql small -c "DELETE FROM posts WHERE $post_due"
    settle small
    settle "$big"
    expire_config "$work/e2-small.toml" small
    expire_config "$work/e2-big.toml" "$big"
    local s_ms s_min s_del b_ms b_min b_del s_left b_left
    read -r s_ms s_min s_del _ <<<"$(e2_times small "$work/e2-small.toml")"
    read -r b_ms b_min b_del _ <<<"$(e2_times "$big" "$work/e2-big.toml")"
    local s_warm b_warm
    s_warm=$(e2_daemon small)
    b_warm=$(e2_daemon "$big")
    s_left=$(sql small -c "SELECT count(*) FROM posts")
    b_left=$(sql "$big" -c "SELECT count(*) FROM posts")
    result E2 "nothing due, $(human "$small_posts") posts ($(human "$s_left") left): run time (job_runs, median of 11)" \
        "$s_ms ms (min $s_min ms; $s_del posts fell due meanwhile; in the daemon: $s_warm ms)" "≤ 10 ms" "$(verdict "$s_ms <= 10")"
    result E2 "nothing due, $(human "$posts") posts ($(human "$b_left") left): run time (job_runs, median of 11)" \
        "$b_ms ms (min $b_min ms; $b_del posts fell due meanwhile; in the daemon: $b_warm ms)" "≤ 10 ms" "$(verdict "$b_ms <= 10")"
    local ratio; ratio=$(fmt %.2f "$(calc "$b_ms / $s_ms")")
    result E2 "nothing due: $(human "$posts") ÷ $(human "$small_posts") run time (medians)" \
        "$ratio (minimums: $(fmt %.2f "$(calc "$b_min / $s_min")"))" "≤ 1.5" "$(verdict "$ratio <= 1.5")"
}
