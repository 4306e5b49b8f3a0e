# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- S1: start to READY=1

# Spawn to the READY=1 datagram on a socket we bind (NOTIFY_SOCKET; caretaker-testkit
# ready, the tests' NotifySocket), database up, every job enabled on far schedules;
# median of --ready-runs start-ups.
row_S1() {
    clone ops s1
    jobs "$far" | config "$work/s1.toml" s1
    local normal low plain=""
    normal=$("$testkit" ready "$ready_runs" "$daemon_bin" run --config "$work/s1.toml" | median)
    low=$("$testkit" ready "$ready_runs" "$daemon_bin" run --config "$work/s1.toml" --low-footprint | median)
    if [ "$daemon_bin" != "$caretaker" ]; then
        plain=$("$testkit" ready "$ready_runs" "$caretaker" run --config "$work/s1.toml" | median)
        plain="; plain build $plain ms"
    fi
    result S1 "start to READY=1, database up ($daemon_build, median of $ready_runs)" \
        "$normal ms (low-footprint $low ms$plain)" "≤ 150 ms" "$(verdict "$normal <= 150")"
}
