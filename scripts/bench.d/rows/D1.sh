# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- D1: the dashboard's overview, 7 days ÷ 24 hours

# caretaker-dashboard (release) on scripts/demo-history.sql's made-up week (every
# job on the schedule the file gives it), the overview fetched over HTTP with curl,
# --dashboard-runs times per window after one warm-up: the page's bytes and the
# median time to the last byte, 7 days against 24 hours, and the dashboard's RSS after.
row_D1() {
    migrated d1
    sql d1 -f "$root/scripts/demo-history.sql" >/dev/null
    local runs; runs=$(sql d1 -c "SELECT count(*) FROM caretaker.job_runs")
    config "$work/d1.toml" d1 <<'TOML'
[jobs.expire-content]
schedule = "@every 5m"
[jobs.leader-succession]
schedule = "@every 5m"
[jobs.logout-inactive]
schedule = "@every 1m"
[jobs.send-temp-passwords]
schedule = "@every 1m"
[jobs.prune]
schedule = "@daily"
TOML
    "$dashboard_bin" --config "$work/d1.toml" --listen 127.0.0.1:0 >"$work/d1.log" 2>&1 &
    local pid=$!
    spawned "$pid"
    local url=""
    for _ in $(seq 1 100); do
        url=$(sed -n 's/.*url=\(http:[^ ]*\).*/\1/p' "$work/d1.log" | head -n 1)
        [ -n "$url" ] && break
        sleep 0.1
    done
    [ -n "$url" ] || { echo "scripts/bench: D1: caretaker-dashboard did not listen: $(cat "$work/d1.log")" >&2; exit 1; }
    local window bytes=() ms=()
    for window in 24h 7d; do
        curl -sf -o /dev/null "${url}?window=$window"
        bytes+=("$(curl -sf -o /dev/null -w '%{size_download}' "${url}?window=$window")")
        ms+=("$(for _ in $(seq 1 "$dashboard_runs"); do
            curl -sf -o /dev/null -w '%{time_total}\n' "${url}?window=$window" | awk '{ printf "%.1f\n", $1 * 1000 }'
        done | median)")
    done
    local rss; rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
    stop_child "$pid"
    local binary="release build"
    [ "$dashboard_bin" = "$root/.build-bench/release/caretaker-dashboard" ] || binary="--dashboard-bin $dashboard_bin"
    result D1 "dashboard overview, 7 days ÷ 24 hours ($runs runs in the week; $binary, median of $dashboard_runs)" \
        "bytes $(fmt %.2f "$(calc "${bytes[1]} / ${bytes[0]}")") ($(fmt %.0f "$(calc "${bytes[1]} / 1024")") KiB vs $(fmt %.0f "$(calc "${bytes[0]} / 1024")") KiB); time $(fmt %.2f "$(calc "${ms[1]} / ${ms[0]}")") (${ms[1]} vs ${ms[0]} ms); RSS after $(mib "$rss") MiB" \
        "— (report)" "-"
}
