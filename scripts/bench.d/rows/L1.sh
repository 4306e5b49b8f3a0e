# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- L1: logout lateness

# Sessions whose idle deadlines (last_seen_at + 20 s) fall evenly over the next 5-35 s;
# `caretaker run` (normal mode) with logout-inactive on '@every 1m', so only its
# deadline wake-ups can be on time. Lateness = revoked_at - deadline.
row_L1() {
    clone ops l1
    only_job logout-inactive "@every 1m" 'idle_timeout = "20s"' | config "$work/l1.toml" l1
    sql l1 -c "INSERT INTO sessions (user_id, created_at, last_seen_at)
               SELECT 1 + i % 2000, now() - interval '1 hour',
                      now() - interval '20 seconds' + interval '5 seconds' + (i::float8 / $sessions) * interval '30 seconds'
               FROM generate_series(1, $sessions) i"
    daemon l1 "$work/l1.toml"
    local pid=$daemon_pid
    local waited=0
    while [ "$waited" -lt 60 ]; do
        sleep 1
        waited=$((waited + 1))
        [ "$(sql l1 -c "SELECT count(*) FROM sessions WHERE revoked_at IS NULL")" = 0 ] && break
    done
    stop_child "$pid"
    local n late_max late_p99 late_p50 late_min open runs
    read -r n late_min late_p50 late_p99 late_max open <<<"$(sql l1 -F ' ' -c "
        WITH l AS (SELECT extract(epoch FROM revoked_at - (last_seen_at + interval '20 seconds')) AS s
                   FROM sessions WHERE revoked_at IS NOT NULL)
        SELECT count(*), round(min(s)::numeric, 3), round(percentile_disc(0.5) WITHIN GROUP (ORDER BY s)::numeric, 3),
               round(percentile_disc(0.99) WITHIN GROUP (ORDER BY s)::numeric, 3), round(max(s)::numeric, 3),
               (SELECT count(*) FROM sessions WHERE revoked_at IS NULL)
        FROM l")"
    runs=$(sql l1 -c "SELECT count(*) FROM caretaker.job_runs WHERE job = 'logout-inactive' AND status = 'succeeded'")
    local measured="max ${late_max} s, p99 ${late_p99} s, p50 ${late_p50} s, min ${late_min} s ($n revoked in $runs runs"
    [ "$open" != 0 ] && measured="$measured; $open NOT revoked after 60 s"
    measured="$measured)"
    local ok="$late_max <= 2 && $open == 0 && $late_min >= 0"
    result L1 "logout lateness past idle_timeout, $sessions sessions, deadlines over 30 s" "$measured" "max ≤ 2 s" "$(verdict "$ok")"
}
