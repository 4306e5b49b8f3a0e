# shellcheck shell=bash
# Installs the Debian packages caretaker needs to build and test, when missing.
install_deps() {
    # chromium: the dashboard's browser test. openssl: throwaway CAs for the TLS tests; dpkg-dev (dpkg-shlibdeps), binutils (strip),
    # lintian and man-db: scripts/package and scripts/test-package (curl: its request to the installed dashboard);
    # prometheus: promtool and the server the monitoring tests scrape with; faketime and libfaketime: the soak's clock-skew fault.
    local wanted=(libpq-dev libcurl4-openssl-dev libcrypt-dev postgresql postgresql-contrib python3-aiosmtpd pkg-config util-linux systemd pgbouncer
                  openssl dpkg-dev binutils lintian man-db curl chromium prometheus faketime libfaketime)
    local missing=()
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
