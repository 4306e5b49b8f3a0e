# shellcheck shell=bash
# The documents the package ships under /usr/share/doc/caretaker/, in one place, so
# that the package and the link check agree on what is shipped.

# ship_docs DIR: copies the README, the benchmark and reliability pages and the manual
# (docs/, with its images) into DIR, keeping their relative paths, so every link
# between them resolves there as it does in the repository.
ship_docs() {
    local dest=$1
    install -d "$dest"
    install -m 644 README.md BENCHMARKS.md RELIABILITY.md "$dest/"
    local file
    while IFS= read -r file; do
        install -D -m 644 "$file" "$dest/$file"
    done < <(find docs -type f \( -name '*.md' -o -name '*.png' -o -name '*.svg' \) | sort)
}

# man_page_date: the date of debian/changelog's newest entry (YYYY-MM-DD), which the
# generated man pages carry, so that a rebuild of one version gives the same page.
man_page_date() {
    date -u -d "$(dpkg-parsechangelog -l debian/changelog -S Date)" +%Y-%m-%d
}
