# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- M1 + W1: memory and wake-ups

# M1: daemons in normal and low-footprint mode, each on its own copy of a busy database
# with every job on '@every 1s' and fresh work fed each second (an hour of runs in a
# minute). Then SIGHUP with far schedules; after 15 s idle, RSS and USS
# (Private_Clean + Private_Dirty of smaps_rollup). Each M1 daemon runs its own copy of
# the executable: pages of a file that one process alone maps count as private, as they
# would for the only caretaker on a Pi, so daemons sharing one file would hide them.
# The plain build (Swift runtime as shared libraries) runs too, for comparison, and two
# more low-footprint daemons with monitoring on: one with [metrics] listen (scraped
# each second while busy and every 7 s while idle), one with [metrics] textfile.
# The low-footprint daemon runs --m1-runs times with stderr to a file and as many times
# with its log on a real systemd-journald (started in a mount namespace of its own, so
# that the host's /run is untouched): stderr on journald's stream socket and
# JOURNAL_STREAM naming it, as under systemd, so each entry goes to the native socket
# with its fields. The figure of each mode is the median of its runs.
# W1, at the same time: two fresh daemons with nothing due; voluntary context
# switches of all their threads over --idle seconds. The low-footprint one is the target.
# M1's monitoring variants (low-footprint mode): [metrics] of daemon NAME, if any.
m1_metrics() {
    case $1 in
        m1_listen) printf '[metrics]\nlisten = "127.0.0.1:%s"\n\n' "$m1_metrics_port" ;;
        m1_textfile) printf '[metrics]\ntextfile = "%s"\n\n' "$work/m1_textfile.prom" ;;
    esac
}
# A scrape of m1_listen's /metrics, as Prometheus would make it.
scrape_m1() {
    "$python3" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5).read()' \
        "http://127.0.0.1:$m1_metrics_port/metrics" || log "M1: scrape of m1_listen failed"
}

# start_journald: systemd-journald in a mount namespace of its own (tmpfs over /run/systemd,
# /run/log and /var/log/journal, so nothing of the host's is read or written); sets journald_pid.
start_journald() {
    unshare -m --propagation private bash -c '
        for dir in /run/systemd /run/log /var/log/journal; do mkdir -p "$dir"; mount -t tmpfs tmpfs "$dir"; done
        mkdir -p /run/systemd/journal
        exec /lib/systemd/systemd-journald' >"$work/journald.log" 2>&1 &
    journald_pid=$!
    spawned "$journald_pid"
    for _ in $(seq 1 100); do
        nsenter -t "$journald_pid" -m test -S /run/systemd/journal/stdout && return 0
        sleep 0.05
    done
    echo "scripts/bench: systemd-journald did not start (see $work/journald.log)" >&2
    exit 1
}
# in_journal CMD...: CMD in journald's mount namespace.
in_journal() { nsenter -t "$journald_pid" -m "$@"; }

# journal_daemon NAME CONFIG [FLAGS...]: like daemon, with stderr on journald's stream.
journal_daemon() {
    local name=$1 cfg=$2; shift 2
    env -u NOTIFY_SOCKET -u WATCHDOG_USEC -u WATCHDOG_PID \
        nsenter -t "$journald_pid" -m "$python3" "$helpers/journal_stream.py" caretaker \
        "${run_bin:-$daemon_bin}" run --config "$cfg" "$@" >/dev/null &
    daemon_pid=$!
    spawned "$daemon_pid"
    for _ in $(seq 1 100); do
        in_journal journalctl -q -o cat "_PID=$daemon_pid" 2>/dev/null | grep -q 'msg=ready' && break
        sleep 0.1
    done
}

row_M1_W1() {
    local name mode build entry k
    m1_metrics_port=$("$python3" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # name:mode:build of each M1 daemon
    local m1=(m1_low:low:"$daemon_build" m1_normal:normal:"$daemon_build"
              m1_listen:low:"$daemon_build" m1_textfile:low:"$daemon_build")
    [ "$(realpath "$daemon_bin")" != "$(realpath "$caretaker")" ] && m1+=(m1_plain:low:"plain build")
    for k in $(seq 2 "$m1_runs"); do m1+=(m1_low_$k:low:"$daemon_build"); done
    for k in $(seq 1 "$m1_runs"); do m1+=(m1_journal_$k:low:"$daemon_build"); done
    start_journald
    declare -A pid
    for entry in "${m1[@]}"; do
        IFS=: read -r name mode build <<<"$entry"
        clone ops "$name"
        sql "$name" -f "$helpers/seed-busy.sql"
        { m1_metrics "$name"; jobs "@every 1s"; } | config "$work/$name.toml" "$name"
        if [ "$build" = "plain build" ]; then cp "$caretaker" "$work/caretaker-$name"; else cp "$daemon_bin" "$work/caretaker-$name"; fi
        # Written back before it runs: pages of a file still waiting for writeback count as dirty.
        sync "$work/caretaker-$name"
        local flags=(); [ "$mode" = low ] && flags=(--low-footprint)
        if [[ $name == m1_journal_* ]]; then
            run_bin="$work/caretaker-$name" journal_daemon "$name" "$work/$name.toml" "${flags[@]}"
        else
            run_bin="$work/caretaker-$name" daemon "$name" "$work/$name.toml" "${flags[@]}"
        fi
        pid[$name]=$daemon_pid
    done
    for mode in low normal; do
        clone ops "w1_$mode"
        jobs "$far" | config "$work/w1_$mode.toml" "w1_$mode"
        local flags=(); [ "$mode" = low ] && flags=(--low-footprint)
        daemon "w1_$mode" "$work/w1_$mode.toml" "${flags[@]}"
        pid[w1_$mode]=$daemon_pid
    done

    # W1 counts from a few seconds after READY, when start-up work is over.
    sleep 3
    local counters=()
    for mode in low normal; do
        "$testkit" wakeups "${pid[w1_$mode]}" "$idle_seconds" >"$work/w1_$mode.out" &
        counters+=($!)
    done

    local tick=0 start; start=$(now)
    while holds "$(now) - $start < $busy_seconds"; do
        tick=$((tick + 1))
        for entry in "${m1[@]}"; do sql "${entry%%:*}" -v tick="$tick" -f "$helpers/feed.sql"; done
        scrape_m1
        sleep 1
    done
    for entry in "${m1[@]}"; do
        name=${entry%%:*}
        { m1_metrics "$name"; jobs "$far"; } | config "$work/$name.toml" "$name"
        kill -HUP "${pid[$name]}"
    done
    # Idle, m1_listen is scraped as Prometheus would (every 15 s): last just before the reading.
    sleep 7; scrape_m1; sleep 7; scrape_m1; sleep 1
    local rss uss pss threads hwm dirty anon runs
    local -a uss_file=() uss_journal=() rss_file=() rss_journal=()
    for entry in "${m1[@]}"; do
        IFS=: read -r name mode build <<<"$entry"
        read -r rss uss pss threads hwm dirty anon <<<"$("$testkit" memory "${pid[$name]}")"
        local label=$mode; [ "$mode" = low ] && label=low-footprint
        [ "$name" = m1_listen ] && label="$label, [metrics] listen (scraped each second, then 1 s before the reading),"
        [ "$name" = m1_textfile ] && label="$label, [metrics] textfile (rewritten after each run),"
        [ "$name" = m1_journal_1 ] && label="$label, log on systemd-journald,"
        # Where the resident memory sits, printed under the table (what would close a miss).
        if [[ $name != m1_low_* && $name != m1_journal_[2-9]* ]]; then
            { echo "M1, $label mode, $build: largest resident mappings"
              "$testkit" memory "${pid[$name]}" --top 8; echo; } >>"$work/notes.txt"
        fi
        case $name in
            m1_low|m1_low_*) uss_file+=("$uss"); rss_file+=("$rss"); continue ;;
            m1_journal_*) uss_journal+=("$uss"); rss_journal+=("$rss"); continue ;;
        esac
        runs=$(sql "$name" -c "SELECT count(*) FROM caretaker.job_runs")
        local measured="RSS $(mib "$rss") MiB, USS $(mib "$uss") MiB, of which $(mib "$dirty") MiB dirty ($(mib "$anon") MiB anonymous); peak RSS $(mib "$hwm") MiB, $threads threads"
        local what="idle memory after $runs runs in ${busy_seconds} s, $label mode ($build)"
        result M1 "$what" "$measured" "— (for comparison)" "-"
    done
    # What a scrape costs the idle low-footprint daemon: m1_listen's CPU (user + system)
    # over 20 scrapes a second apart; each maps code back in, and the daemon hands it back
    # after it. Measured after the memory readings, which it would disturb.
    local cpu_before cpu_after
    cpu_before=$(cpu_seconds "${pid[m1_listen]}")
    for k in $(seq 1 20); do scrape_m1; sleep 1; done
    cpu_after=$(cpu_seconds "${pid[m1_listen]}")
    result M1 "CPU of a /metrics scrape, low-footprint mode ($daemon_build), idle, [metrics] listen: the mean of 20 scrapes a second apart" \
        "$(fmt %.1f "$(calc "1000 * ($cpu_after - $cpu_before) / 20")") ms (user + system, in ticks of $(fmt %.0f "$(calc "1000 / $(getconf CLK_TCK)")") ms)" "— (for comparison)" "-"
    # The low-footprint mode, stderr to a file against the journal: the median of each series.
    local entries; entries=$(in_journal journalctl -q -o cat SYSLOG_IDENTIFIER=caretaker JOB=expire-content | wc -l)
    local series label_of_series uss_list rss_med uss_med
    for series in file journal; do
        if [ "$series" = file ]; then
            label_of_series="stderr to a file"; uss_list=("${uss_file[@]}"); rss_med=$(printf '%s\n' "${rss_file[@]}" | median)
        else
            label_of_series="log on systemd-journald (native entries; $entries with JOB=expire-content in the journal)"
            uss_list=("${uss_journal[@]}"); rss_med=$(printf '%s\n' "${rss_journal[@]}" | median)
        fi
        uss_med=$(printf '%s\n' "${uss_list[@]}" | median)
        local each=""; for uss in "${uss_list[@]}"; do each="$each${each:+, }$(mib "$uss")"; done
        result M1 "idle memory after the busy minute, low-footprint mode ($daemon_build), $label_of_series: median of ${#uss_list[@]} daemons" \
            "USS $(mib "$uss_med") MiB (each: $each), RSS $(mib "$rss_med") MiB" "USS ≤ 4 MiB, RSS ≤ 16 MiB" \
            "$(verdict "$uss_med <= 4096 && $rss_med <= 16384")"
    done

    # W1 ends --idle seconds after it started.
    wait "${counters[@]}"
    local switches t_start t_end gone connections
    for mode in low normal; do
        read -r switches t_start t_end gone <<<"$(cat "$work/w1_$mode.out")"
        connections=$(sql postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'w1_$mode' AND application_name LIKE 'caretaker%'")
        local note="$switches in ${idle_seconds} s ($t_end threads, $connections database connections while idle"
        [ "$gone" -gt 0 ] && note="$note, $gone threads ended meanwhile (their switches are not counted)"
        note="$note)"
        if [ "$mode" = low ]; then
            result W1 "wake-ups while idle, low-footprint mode: voluntary context switches" "$note" "≤ 2" "$(verdict "$switches <= 2")"
        else
            result W1 "wake-ups while idle, normal mode (LISTEN connection open)" "$note" "— (for comparison)" "-"
        fi
    done
    for name in "${!pid[@]}"; do stop_child "${pid[$name]}"; done
}
