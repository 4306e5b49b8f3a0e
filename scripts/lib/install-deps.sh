# shellcheck shell=bash
# Installs the Debian packages caretaker's scripts need, when missing.

# install_deps [SET...]: installs the packages of each SET that are missing (no SET: all of them).
#   build     what `swift build` compiles and links against (libpq, libcurl, libcrypt)
#   postgres  the throwaway PostgreSQL the demo, the tests and the bench start (runuser: util-linux)
#   test      the rest that the tests, the soak, the packaging and the bench use:
#             python3-aiosmtpd: the SMTP server; pgbouncer: the pooler tests; systemd: systemd-analyze and the bench's systemd-journald (M1);
#             postgresql-15-partman: pg_partman, which keeps the partitioned posts tables of the tests (Debian 12's
#             PostgreSQL is 15); openssl: throwaway CAs for the TLS tests; dpkg-dev (dpkg-shlibdeps), binutils (strip),
#             lintian and man-db: scripts/package and scripts/test-package (curl: its request to the
#             installed dashboard); chromium: the dashboard's browser test; prometheus: promtool and the
#             server the monitoring tests scrape with; faketime and libfaketime: the soak's clock-skew fault;
#             mandoc: `mandoc -T lint` of the generated caretaker.toml(5);
#             systemd-container (systemd-nspawn) and debootstrap: scripts/test-systemd's Debian container.
# scripts/demo asks for `build postgres` only, so that trying caretaker does not install a browser.
install_deps() {
    local sets=("$@")
    [ ${#sets[@]} -eq 0 ] && sets=(build postgres test)
    local wanted=()
    local set
    for set in "${sets[@]}"; do
        case "$set" in
            build) wanted+=(libpq-dev libcurl4-openssl-dev libcrypt-dev pkg-config) ;;
            postgres) wanted+=(postgresql postgresql-contrib util-linux) ;;
            test) wanted+=(python3-aiosmtpd systemd pgbouncer postgresql-15-partman openssl dpkg-dev binutils lintian
                           man-db curl chromium prometheus faketime libfaketime mandoc systemd-container debootstrap) ;;
            *) echo "install_deps: unknown set '$set'; the sets are: build, postgres, test" >&2; return 64 ;;
        esac
    done
    local missing=()
    local package
    for package in "${wanted[@]}"; do
        dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Puts the Swift toolchain on PATH when it is installed but not found.
ensure_swift() {
    if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
        export PATH="/opt/swift/usr/bin:$PATH"
    fi
    command -v swift >/dev/null 2>&1 || { echo "swift not found: install Swift 6.1 or newer" >&2; exit 1; }
}
