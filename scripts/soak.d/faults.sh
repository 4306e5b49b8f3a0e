# shellcheck shell=bash
# The soak's faults, sourced by scripts/soak (which defines $work, $soak_db,
# start_instance, start_smtp, stop_smtp, write_config, ...; the PostgreSQL ones
# use scripts/lib/postgres.sh).
# inject_faults runs in the background: it waits a random pause, injects one
# fault kind and waits for it to end, cycling through the chosen kinds in a
# random order each round, so each kind comes up equally often. Each fault
# appends one line to faults.tsv (loaded into soak.faults at the end).

fault() { printf '%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" "$1" "$2" >>"$work/faults.tsv"; log "fault: $1 ($2)"; }

# Sleeps $1 seconds in steps of one; false when the load phase ended meanwhile.
pause_or_stop() {
    local i
    for ((i = 0; i < $1; i++)); do
        [ -e "$work/stop-faults" ] && return 1
        sleep 1
    done
    [ ! -e "$work/stop-faults" ]
}

elapsed_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# hold_sql NAME SQL: runs SQL on a session of its own (application_name NAME),
# holding whatever it locks until its script commits; prints its output.
hold_sql() {
    local name=$1 sql=$2
    psql -X -q -At -v ON_ERROR_STOP=1 "$soak_db application_name=$name" <<<"$sql" 2>&1 || true
}

# ---------------------------------------------------------------- instances

# catch_running PID|"" COMMAND...: polls job_runs every few milliseconds on one
# psql session, for up to 10 s, until a run (of process PID, or of any) is in
# progress, then runs COMMAND at once. Sets $caught to "JOB run ID, ..." (or
# nothing, when no run was caught and COMMAND ran after the 10 s).
caught=""
catch_running() {
    local filter=${1:+AND pid = $1} i
    shift
    caught=""
    coproc WATCH { psql -X -q -At "$soak_db application_name=soak-watcher" 2>/dev/null; }
    for ((i = 0; i < 1500; i++)); do
        echo "SELECT coalesce(string_agg(job || ' run ' || id, ', '), '') FROM caretaker.job_runs WHERE status = 'running' $filter;" >&"${WATCH[1]}"
        read -t 5 -r caught <&"${WATCH[0]}" || break
        [ -n "$caught" ] && break
        sleep 0.003
    done
    "$@"
    exec {WATCH[1]}>&-
    wait "$WATCH_PID" 2>/dev/null || true
}

# kill -9 of an instance (b, c, or d on the partitioned layout, where a kill during
# a run may interrupt a partition's detach), then a restart 1-3 s later. Every other
# kill first waits until the victim is in the middle of a run, so that runs of dead
# processes occur and must be marked `interrupted` by a later instance.
kills=0
fault_kill() {
    local victim=$1 pid code during="at a random moment"
    pid=$(instance_pid "$victim")
    kills=$((kills + 1))
    if [ $((kills % 2)) = 1 ]; then
        # d's runs are recorded in the partitioned layout's database.
        local soak_db=$soak_db
        [ "$victim" = d ] && soak_db=$soak_part_db
        catch_running "$pid" kill -KILL "$pid"
        during=${caught:+during $caught}
        during=${during:-idle (no run caught within 10 s)}
    fi
    kill -KILL "$pid" 2>/dev/null || true
    code=$(wait_instance_exit "$victim")
    sleep $((1 + RANDOM % 3))
    start_instance "$victim"
    fault kill-9 "instance $victim (pid $pid) $during, exit $code; restarted as pid $(instance_pid "$victim")"
}

# Clock skew: the victim is restarted under libfaketime (Debian's `faketime`
# wrapper; a bare LD_PRELOAD of the library left caretaker without its
# command-line arguments) with its clock 1-6 hours ahead or behind, runs so for
# 20 s, and is restarted with the true time. Rule zero: every time decision uses
# the database's clock, so nothing may change (the not-early checks judge it).
fault_clock_skew() {
    local victim=$1 hours=$((1 + RANDOM % 6)) sign pid code skewed seen lines started
    sign=$([ $((RANDOM % 2)) = 0 ] && echo + || echo -)
    pid=$(instance_pid "$victim")
    kill -TERM "$pid" 2>/dev/null || true
    code=$(wait_instance_exit "$victim")
    lines=$(wc -l <"$work/logs/$victim.log")
    started=$EPOCHREALTIME
    start_instance "$victim" faketime -f "${sign}${hours}h"
    skewed=$(instance_pid "$victim")
    pause_or_stop 20 || sleep 2
    instance_alive "$victim" || echo "$victim: died while its clock was skewed (exit $(cat "$work/inst/$victim.exit"))" >>"$work/unexpected"
    # The log's time= is the instance's own (skewed) wall clock.
    seen=$(tail -n +$((lines + 1)) "$work/logs/$victim.log" | grep -o 'time=[^ ]*' | tail -n 1)
    kill -TERM "$skewed" 2>/dev/null || true
    wait_instance_exit "$victim" >/dev/null
    start_instance "$victim"
    fault clock-skew "instance $victim (pid $pid, exit $code after SIGTERM) ran $(elapsed_since "$started") s as pid $skewed with its clock ${sign}${hours} h off (its last log line said ${seen#time=} at $(date -u +%H:%M:%S)); restarted as pid $(instance_pid "$victim")"
}

# Reload under load: jobs.toml switches between two variants (expire-content's
# schedule @every 3s <-> 2s and batch_size 50 <-> 20; soak-heartbeat in the
# first, soak-reload in the second) and every instance gets SIGHUP. The moment
# a run is in progress is chosen: the signal goes out while one is (caught within 10 s).
reloads=0
fault_reload() {
    reloads=$((reloads + 1))
    config_variant=$((reloads % 2))
    write_config soak "$smtp_port"
    catch_running "" kill -HUP "$(instance_pid a)" "$(instance_pid b)" "$(instance_pid c)"
    record_schedule
    fault reload "SIGHUP to a, b, c with variant $config_variant (expire-content $expire_schedule, batch_size $expire_batch, operator job $operator_job) during ${caught:-no run caught within 10 s}"
}

# ---------------------------------------------------------------- PostgreSQL

primary_dir() { cat "$work/primary"; }
standby_dir() { cat "$work/standby" 2>/dev/null || true; }

fault_postgres_restart() {
    local started=$EPOCHREALTIME
    pg_restart "$(primary_dir)"
    fault postgres-restart "pg_ctl restart -m fast of the primary took $(elapsed_since "$started") s"
}

# kill -9 of the postmaster: its backends notice and exit, and the restart
# goes through crash recovery (retried while old backends still hold shared memory).
fault_postgres_crash() {
    local dir started=$EPOCHREALTIME postmaster i
    dir=$(primary_dir)
    postmaster=$(head -n 1 "$dir/data/postmaster.pid")
    kill -KILL "$postmaster"
    for ((i = 0; i < 30; i++)); do
        sleep 1
        pg_start_existing "$dir" 2>/dev/null && break
    done
    fault postgres-crash "kill -9 of the postmaster (pid $postmaster); up again after crash recovery in $(elapsed_since "$started") s ($((i + 1)) start attempts): $(grep -c 'database system was interrupted\|was not properly shut down' "$dir/server.log") crash recoveries logged so far"
}

# Failover: the primary stops with -m immediate, the standby is promoted, and
# the instances (multi-host conninfo, target_session_attrs=read-write) find
# the new primary. Synchronous replication is off while there is no standby
# and on again once the old primary has been rebuilt as one (pg_rewind, or a
# fresh base backup), so a commit acknowledged before a failover survives it.
fault_failover() {
    local old new started=$EPOCHREALTIME how promoted
    old=$(primary_dir) new=$(standby_dir)
    [ -n "$new" ] || { log "failover skipped: no standby"; return 0; }
    pg_stop "$old" immediate
    pg_promote "$new"
    psql -X -q "$(pg_conninfo "$new")" -c "ALTER SYSTEM SET synchronous_standby_names = ''" -c "SELECT pg_reload_conf()" >/dev/null
    echo "$new" >"$work/primary"
    echo "" >"$work/standby"
    promoted=$(elapsed_since "$started")
    if how=$(pg_rejoin_as_standby "$old" "$new"); then
        psql -X -q "$(pg_conninfo "$new")" -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
        echo "$old" >"$work/standby"
    else
        how="nothing: it could not be rebuilt (see $old/*.log); no standby, no more failovers"
        echo "$(basename "$old"): not rebuilt as a standby after a failover" >>"$work/unexpected"
    fi
    fault failover "primary $(basename "$old") stopped -m immediate, $(basename "$new") promoted in $promoted s; $(basename "$old") rebuilt as its synchronous standby by $how, streaming $(elapsed_since "$started") s after the stop"
}

# ---------------------------------------------------------------- SMTP

fault_smtp_outage() {
    stop_smtp
    sleep 10
    start_smtp
    fault smtp-outage "SMTP server stopped for 10 s"
}

# The server accepts connections but, for 10 s, answers every MAIL FROM with
# 451, or every DATA with 554 after the message, or closes the connection
# after the message without a reply (scripts/lib/smtp_server.py reads the mode from a file).
fault_smtp_broken() {
    local modes=(451-mail 554-data close-data) mode
    mode=${modes[RANDOM % 3]}
    echo "$mode" >"$work/smtp.mode"
    sleep 10
    echo "ok" >"$work/smtp.mode"
    fault smtp-broken "for 10 s: $mode"
}

# ---------------------------------------------------------------- the app

fault_row_locks() {
    local out
    out=$(hold_sql soak-locker "BEGIN;
SELECT 'posts=' || count(*) FROM (SELECT id FROM public.posts WHERE created_at <= now() - interval '25 seconds'
                                  ORDER BY created_at LIMIT 50 FOR UPDATE) x;
SELECT 'packs=' || count(*) FROM (SELECT id FROM public.packs WHERE NOT is_admin AND created_at <= now() - interval '25 seconds'
                                  ORDER BY created_at LIMIT 5 FOR UPDATE) x;
SELECT 'sessions=' || count(*) FROM (SELECT id FROM public.sessions WHERE revoked_at IS NULL
                                     ORDER BY last_seen_at LIMIT 10 FOR UPDATE) x;
SELECT 'communities=' || count(*) FROM (SELECT id FROM public.communities WHERE archived_at IS NULL
                                        ORDER BY random() LIMIT 5 FOR UPDATE) x;
SELECT 'requests=' || count(*) FROM (SELECT id FROM public.password_reset_requests WHERE status = 'pending'
                                     ORDER BY next_attempt_at LIMIT 5 FOR UPDATE) x;
SELECT pg_sleep(5);
COMMIT;")
    fault row-locks "held for 5 s: $(echo "$out" | grep '=' | tr '\n' ' ')"
}

# The session that goes idle next is held FOR UPDATE (as an app's long
# transaction would) until it has been past its idle deadline for 10 s: longer
# than any run. logout-inactive must skip it without rerunning in a loop.
fault_session_lock() {
    local out
    out=$(hold_sql soak-session-locker "BEGIN;
SELECT s.id || ' idle deadline in ' || round(extract(epoch FROM s.last_seen_at + interval '${idle_timeout} seconds' - now())::numeric, 1) || ' s'
FROM (SELECT id, last_seen_at FROM public.sessions WHERE revoked_at IS NULL ORDER BY last_seen_at LIMIT 1 FOR UPDATE) s;
SELECT pg_sleep(greatest(0, extract(epoch FROM min(last_seen_at) + interval '${idle_timeout} seconds' - now())) + 10)
FROM public.sessions WHERE revoked_at IS NULL;
COMMIT;")
    fault session-lock "session ${out%%$'\n'*}, held until 10 s past it"
}

# The app's surprises (scripts/soak.d/app-surprises.sql) for 20 s: a report
# references the oldest post (foreign key, NO ACTION), the oldest non-admin
# pack is put on hold (a trigger raises on its deletion), and the session that
# goes idle next is frozen (a CHECK rejects its revocation). Each row is
# recorded in soak.protected; no-blocked-stall checks that the rows behind
# them still went.
fault_app_surprise() {
    local out started=$EPOCHREALTIME
    out=$(soak_psql -At -c "SELECT soak.protect_rows()")
    pause_or_stop 20 || true
    soak_psql -At -c "SELECT soak.release_rows()" >/dev/null
    fault app-surprise "$(elapsed_since "$started") s: $out"
}

# The operator SQL job soak-flaky fails (its SQL raises) for 20 s: an incident
# for alerts-once (one alert, one recovery), and failed runs whose retries the
# runaway bound must allow.
fault_job_failing() {
    local started=$EPOCHREALTIME failed_for
    soak_psql -c "UPDATE soak.flaky SET failing = true, since = now()" -c "INSERT INTO soak.incidents (job, since) VALUES ('soak-flaky', now())"
    pause_or_stop 20 || true
    soak_psql -c "UPDATE soak.flaky SET failing = false" -c "UPDATE soak.incidents SET until = now() WHERE until IS NULL"
    failed_for=$(elapsed_since "$started")
    # The incident ends with the next successful run (and its recovery mail):
    # wait for it (up to 40 s), so that no other fault takes the SMTP server away meanwhile.
    local i recovered=""
    for ((i = 0; i < 40; i++)); do
        recovered=$(soak_psql -At -c "SELECT round(extract(epoch FROM min(r.started_at) - i.until)::numeric, 1)
            FROM soak.incidents i JOIN caretaker.job_runs r ON r.job = i.job AND r.status = 'succeeded' AND r.started_at >= i.until
            WHERE i.until = (SELECT max(until) FROM soak.incidents) GROUP BY i.until")
        [ -n "$recovered" ] && break
        sleep 1
    done
    sleep 3
    fault job-failing "soak-flaky failed every run for $failed_for s; it succeeded again ${recovered:-?} s after"
}

# ---------------------------------------------------------------- the injector

# Pauses between faults: 15-40 s in long runs; shorter in short ones, so
# that a one-minute run sees several faults.
fault_pause() {
    local low=15 spread=26
    if [ "$load_seconds" -lt 600 ]; then low=$((load_seconds / 20 + 2)) spread=$((load_seconds / 10 + 1)); fi
    echo $((low + RANDOM % spread))
}

# The first round starts with app-surprise and job-failing (when chosen): the
# faults that give no-blocked-stall and alerts-once something to judge come
# early enough for a one-minute soak to judge them; the rest follow at random.
inject_faults() {
    local round=() kind victims=(b c d) first=()
    for kind in app-surprise job-failing; do
        [[ " ${fault_kinds_chosen[*]} " == *" $kind "* ]] && first+=("$kind")
    done
    mapfile -t round < <([ ${#first[@]} = 0 ] || printf '%s\n' "${first[@]}"; printf '%s\n' "${fault_kinds_chosen[@]}" | grep -vxF -e app-surprise -e job-failing | shuf)
    while :; do
        [ ${#round[@]} -gt 0 ] || mapfile -t round < <(printf '%s\n' "${fault_kinds_chosen[@]}" | shuf)
        kind=${round[0]}
        round=("${round[@]:1}")
        pause_or_stop "$(fault_pause)" || return 0
        case $kind in
            kill-9) fault_kill "${victims[RANDOM % 3]}" ;;
            clock-skew) fault_clock_skew "${victims[RANDOM % 3]}" ;;
            reload) fault_reload ;;
            postgres-restart) fault_postgres_restart ;;
            postgres-crash) fault_postgres_crash ;;
            failover) fault_failover ;;
            smtp-outage) fault_smtp_outage ;;
            smtp-broken) fault_smtp_broken ;;
            row-locks) fault_row_locks ;;
            session-lock) fault_session_lock ;;
            app-surprise) fault_app_surprise ;;
            job-failing) fault_job_failing ;;
        esac
    done
}
