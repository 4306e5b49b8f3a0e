# shellcheck shell=bash
# The previous release's .deb, for the upgrade test (scripts/test-systemd).
#
#   source scripts/lib/previous-release.sh; previous_release_deb
#
# The previous release is the second entry of debian/changelog; its commit is the one
# that put that entry at the top of debian/changelog (the release commit: there are no
# tags). The package is built from that commit's own tree with its own scripts/package
# (a release build: minutes, once) and kept under /var/cache/caretaker-test/, keyed by
# the commit, so later runs reuse it. Prints the path of the .deb.
previous_release_deb() {
    local version commit cache deb tree
    version=$(sed -n 's/^caretaker (\([^)]*\)).*/\1/p' debian/changelog | sed -n 2p)
    [ -n "$version" ] || { echo "previous-release: debian/changelog has no second entry" >&2; return 1; }
    if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
        echo "previous-release: this clone is shallow; the release commit of $version needs the history (git fetch --unshallow)" >&2
        return 1
    fi
    commit=$(git log --reverse --format=%H -S"caretaker ($version)" -- debian/changelog | head -n 1)
    [ -n "$commit" ] || { echo "previous-release: no commit added the changelog entry of $version" >&2; return 1; }
    cache=/var/cache/caretaker-test/previous-$commit
    deb=$(ls "$cache"/caretaker_"${version}"_*.deb 2>/dev/null | head -n 1)
    if [ -z "$deb" ]; then
        echo "previous-release: building caretaker $version from its release commit ${commit:0:10} (once; cached in $cache)" >&2
        tree=$(mktemp -d /var/cache/caretaker-test/previous-build-XXXXXX)
        git archive "$commit" | tar -x -C "$tree"
        if ! (cd "$tree" && scripts/package --output "$cache") >"$tree.log" 2>&1; then
            tail -n 30 "$tree.log" >&2
            rm -rf "$tree" "$tree.log"
            echo "previous-release: building $version at ${commit:0:10} failed" >&2
            return 1
        fi
        rm -rf "$tree" "$tree.log"
        deb=$(ls "$cache"/caretaker_"${version}"_*.deb 2>/dev/null | head -n 1)
        [ -n "$deb" ] || { echo "previous-release: no caretaker_${version}_*.deb in $cache" >&2; return 1; }
    fi
    echo "$deb"
}
