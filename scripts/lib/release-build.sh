# shellcheck shell=bash
# The release build of the packaged binaries, shared by scripts/package and by
# scripts/test, which starts it early (at the lowest CPU priority, while the tests
# mostly wait) so that the package step finds it compiled.

# Static Swift runtime, full RELRO; in .build-release, apart from the debug build in .build.
release_build_flags=(-c release --static-swift-stdlib -Xlinker -z -Xlinker now --scratch-path .build-release)
# The dashboard is a binary of its own (Hummingbird), so that caretaker never links SwiftNIO.
release_executables=(caretaker caretaker-dashboard)

# Compiles and links each packaged executable in release mode.
build_release_binaries() {
    local executable
    for executable in "${release_executables[@]}"; do
        swift build "${release_build_flags[@]}" --product "$executable" || return
    done
}
