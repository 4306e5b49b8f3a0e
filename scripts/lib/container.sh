# shellcheck shell=bash
# A throwaway Debian 12 machine whose PID 1 is a real systemd, for the tests that run
# caretaker's package and units as an operator would (scripts/test-systemd).
#
#   source scripts/lib/container.sh
#   container_boot DIR       boots a copy of the cached root file system; DIR holds its
#                            writable layer and is removed by container_stop
#   container_run CMD...     runs CMD inside it as root (all of its namespaces)
#   container_stop           powers it off (killed after 20 s) and removes DIR
#
# The root file system (debootstrap --variant=minbase, about 300 MB) is built once and
# kept under /var/cache/caretaker-test/, keyed by CONTAINER_ROOT_KEY: change the key
# when the package list changes. Each boot gets an overlay on top of it, so a run
# never changes the cached root. systemd-nspawn runs with --register=no (a host
# without systemd-machined) and shares the host's network, so a PostgreSQL the test
# starts on 127.0.0.1 is reachable from inside.
# Needs root, debootstrap and systemd-container (scripts/lib/install-deps.sh: test).

CONTAINER_SUITE=bookworm
CONTAINER_MIRROR=${CONTAINER_MIRROR:-http://deb.debian.org/debian}
# The package's run-time dependencies and psql (the README's steps) come with the
# root, so that installing the .deb needs no download; apt's lists are there too, for
# a dependency added later.
CONTAINER_PACKAGES=systemd,systemd-sysv,dbus,procps,libpq5,libcurl4,libcrypt1,tzdata,postgresql-client-15
CONTAINER_ROOT_KEY="$CONTAINER_SUITE-minbase-1-$(echo "$CONTAINER_PACKAGES" | md5sum | cut -c1-8)"
CONTAINER_CACHE=/var/cache/caretaker-test
container_dir=""
container_pid=""

# container_root: prints the cached root file system's path, building it first when absent.
container_root() {
    local root="$CONTAINER_CACHE/root-$CONTAINER_ROOT_KEY"
    if [ ! -d "$root" ]; then
        local building="$root.building.$$"
        mkdir -p "$CONTAINER_CACHE"
        rm -rf "$CONTAINER_CACHE"/root-*.building.* 2>/dev/null || true
        echo "container: building the $CONTAINER_SUITE root file system in $root (once)" >&2
        debootstrap --variant=minbase --include="$CONTAINER_PACKAGES" "$CONTAINER_SUITE" "$building" \
            "$CONTAINER_MIRROR" >"$CONTAINER_CACHE/debootstrap.log" 2>&1 \
            || { tail -n 30 "$CONTAINER_CACHE/debootstrap.log" >&2; echo "container: debootstrap failed" >&2; return 1; }
        printf 'deb %s %s main\n' "$CONTAINER_MIRROR" "$CONTAINER_SUITE" >"$building/etc/apt/sources.list"
        chroot "$building" apt-get update -qq >/dev/null 2>&1 || echo "container: apt-get update failed in the root (no lists)" >&2
        chroot "$building" apt-get clean
        # No console login and no network configuration of its own: it shares the host's.
        echo caretaker-test >"$building/etc/hostname"
        ln -sf /dev/null "$building/etc/systemd/system/getty@.service"
        ln -sf /dev/null "$building/etc/systemd/system/console-getty.service"
        mv "$building" "$root"
        # Older roots (another key) are no longer used.
        find "$CONTAINER_CACHE" -maxdepth 1 -name 'root-*' ! -name "root-$CONTAINER_ROOT_KEY" -exec rm -rf {} + 2>/dev/null || true
    fi
    echo "$root"
}

# container_boot DIR: boots the container (overlay over the cached root in DIR) and
# waits until its systemd has finished starting (is-system-running: running or degraded).
container_boot() {
    container_dir=$1
    local root state i
    root=$(container_root) || return 1
    mkdir -p "$container_dir/upper" "$container_dir/work" "$container_dir/root"
    mount -t overlay overlay -o "lowerdir=$root,upperdir=$container_dir/upper,workdir=$container_dir/work" \
        "$container_dir/root" || return 1
    systemd-nspawn --quiet --boot --register=no --keep-unit --console=passive \
        --machine="caretaker-test-$$" -D "$container_dir/root" >"$container_dir/console.log" 2>&1 &
    local nspawn=$!
    echo "$nspawn" >"$container_dir/nspawn.pid"
    for ((i = 0; i < 300; i++)); do
        container_pid=$(ps -o pid= --ppid "$nspawn" 2>/dev/null | head -n 1 | tr -d ' ' || true)
        if [ -n "$container_pid" ] && [ "$(cat "/proc/$container_pid/comm" 2>/dev/null)" = systemd ]; then
            state=$(container_run systemctl is-system-running 2>/dev/null || true)
            case "$state" in running | degraded) return 0 ;; esac
        fi
        kill -0 "$nspawn" 2>/dev/null || { cat "$container_dir/console.log" >&2; echo "container: systemd-nspawn exited" >&2; return 1; }
        sleep 0.1
    done
    cat "$container_dir/console.log" >&2
    echo "container: systemd did not finish starting within 30 s (state: ${state:-none})" >&2
    return 1
}

# container_run CMD...: CMD inside the container as root, in its namespaces and its
# root, with a plain environment.
container_run() {
    nsenter -t "$container_pid" -a -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}

# container_stop: powers the container off and removes its directory. Never fails.
container_stop() {
    [ -n "$container_dir" ] || return 0
    local nspawn i
    nspawn=$(cat "$container_dir/nspawn.pid" 2>/dev/null || true)
    if [ -n "$nspawn" ] && kill -0 "$nspawn" 2>/dev/null; then
        # SIGRTMIN+4 asks systemd for a clean poweroff.
        # (Every step may fail here: this runs from EXIT traps under set -e.)
        [ -n "$container_pid" ] && kill -RTMIN+4 "$container_pid" 2>/dev/null || true
        for ((i = 0; i < 200; i++)); do
            kill -0 "$nspawn" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$nspawn" 2>/dev/null || true
        wait "$nspawn" 2>/dev/null || true
    fi
    umount "$container_dir/root" 2>/dev/null || umount -l "$container_dir/root" 2>/dev/null || true
    rm -rf "$container_dir" || true
    container_dir=""
    container_pid=""
    return 0
}
