# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- P1: reset mail latency

# bcrypt_times COST N: N timings (ms, one a line) of a bcrypt hash with libxcrypt, the
# library caretaker calls, through Debian's python3 crypt module.
bcrypt_times() {
    "$python3" -W ignore - "$1" "$2" <<'PY'
import crypt, sys, time
cost, runs = int(sys.argv[1]), int(sys.argv[2])
for _ in range(runs):
    t = time.perf_counter()
    crypt.crypt("x", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2 ** cost))
    print(f"{(time.perf_counter() - t) * 1000:.1f}")
PY
}

# A real SMTP server (aiosmtpd) notes when it accepts each message; `caretaker run` in
# normal mode LISTENs; requests are inserted one by one with a pause, for existing
# users. Latency = arrival - requested_at.
row_P1() {
    clone ops p1
    only_job send-temp-passwords "@every 1m" | config "$work/p1.toml" p1
    # bcrypt is timed just before and just after the requests (median of both), so the
    # reference sees the same machine as the latencies do.
    local cost=12
    bcrypt_times "$cost" 5 >"$work/bcrypt.txt"
    daemon p1 "$work/p1.toml"
    local pid=$daemon_pid
    local mark; mark=$(wc -l <"$work/arrivals.tsv")
    local i
    for i in $(seq 1 "$resets"); do
        sql p1 -c "INSERT INTO password_reset_requests (email) VALUES ('user$((1000 + i))@example.org')"
        sleep "$reset_pause"
    done
    for _ in $(seq 1 30); do
        [ $(($(wc -l <"$work/arrivals.tsv") - mark)) -ge "$resets" ] && break
        # No point in waiting for mail that failed runs will not send.
        [ "$(sql p1 -c "SELECT count(*) FROM caretaker.job_runs WHERE status = 'failed'")" != 0 ] && break
        sleep 1
    done
    stop_child "$pid"
    bcrypt_times "$cost" 5 >>"$work/bcrypt.txt"
    tail -n +"$((mark + 1))" "$work/arrivals.tsv" >"$work/p1-arrivals.tsv"
    sql p1 -c "CREATE TABLE bench_arrivals (at timestamptz, rcpt text, message_id text, subject text, has_password bool)" \
        -c "\\copy bench_arrivals FROM '$work/p1-arrivals.tsv'"
    local n p50 p99 max
    read -r n p50 p99 max <<<"$(sql p1 -c "
        SELECT extract(epoch FROM a.at - r.requested_at) * 1000
        FROM password_reset_requests r JOIN bench_arrivals a ON lower(a.rcpt) = lower(r.email)" | "$python3" "$helpers/percentiles.py")"
    local bcrypt; bcrypt=$(median <"$work/bcrypt.txt")
    local pg_bcrypt; pg_bcrypt=$(sql p1 -c "
        CREATE FUNCTION pg_temp.bcrypt_ms(cost int) RETURNS float8 LANGUAGE plpgsql AS \$\$
            DECLARE t timestamptz := clock_timestamp(); h text;
            BEGIN h := crypt('x', gen_salt('bf', cost)); RETURN extract(epoch FROM clock_timestamp() - t) * 1000; END \$\$" \
        -c "SELECT round(pg_temp.bcrypt_ms($cost)::numeric, 1)")
    # Where the time goes: from the INSERT to the start of the run that picked it up
    # (NOTIFY, wake-up, dispatch), and the length of that run (bcrypt, UPDATE, SMTP).
    local wake run_ms
    read -r wake run_ms <<<"$(sql p1 -F ' ' -c "
        WITH picked AS (
            SELECT r.requested_at, j.started_at, j.finished_at
            FROM password_reset_requests r
            CROSS JOIN LATERAL (SELECT started_at, finished_at FROM caretaker.job_runs
                                WHERE job = 'send-temp-passwords' AND started_at >= r.requested_at
                                ORDER BY started_at LIMIT 1) j)
        SELECT round((percentile_disc(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - requested_at)) * 1000)::numeric),
               round((percentile_disc(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - started_at)) * 1000)::numeric)
        FROM picked")"
    local sent; sent=$(sql p1 -c "SELECT count(*) FROM password_reset_requests WHERE status = 'sent'")
    local failure; failure=$(sql p1 -c "SELECT error FROM caretaker.job_runs WHERE status = 'failed' ORDER BY id LIMIT 1")
    [ -n "$failure" ] && sent="$sent sent; a run failed: $failure"
    result P1 "reset request INSERT → accepted by the SMTP server (LISTEN path, bcrypt cost $cost)" \
        "p50 $(fmt %.0f "$p50") ms, p99 $(fmt %.0f "$p99") ms, max $(fmt %.0f "$max") ms ($n of $resets mailed, $sent sent; p50 INSERT → run start $wake ms, run $run_ms ms); bcrypt $bcrypt ms (median of 10; pgcrypto $pg_bcrypt ms)" \
        "p50 ≤ bcrypt + 50 ms = $(fmt %.0f "$(calc "$bcrypt + 50")") ms" "$(verdict "$n == $resets && $p50 <= $bcrypt + 50")"
}
