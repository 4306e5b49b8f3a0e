# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- binary size

row_SIZE() {
    local plain_copy="$work/caretaker-plain"
    cp "$caretaker" "$plain_copy" && strip "$plain_copy"
    local plain_size; plain_size=$(stat -c %s "$plain_copy")
    if [ "$daemon_bin" != "$caretaker" ]; then
        local copy="$work/caretaker-static"
        cp "$daemon_bin" "$copy" && strip "$copy"
        result SIZE "binary, release, --static-swift-stdlib, stripped" \
            "$(fmt %.1f "$(calc "$(stat -c %s "$copy") / 1048576")") MiB (plain build stripped: $(fmt %.1f "$(calc "$plain_size / 1048576")") MiB + Swift runtime libraries)" \
            "— (report)" "-"
    else
        result SIZE "binary, release, stripped (static build skipped)" "$(fmt %.1f "$(calc "$plain_size / 1048576")") MiB" "— (report)" "-"
    fi
}
