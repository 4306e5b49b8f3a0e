// libFuzzer harness for the parsers that read operator and user input.
//
// Built by scripts/fuzz as the package's `caretaker-fuzz` product (declared only
// when CARETAKER_FUZZ=1), linked against the targets it fuzzes:
//
//     CARETAKER_FUZZ=1 swift build -c release --sanitize fuzzer --sanitize address \
//         --scratch-path .build-libfuzzer --product caretaker-fuzz
//
// One binary, four targets, chosen by $CARETAKER_FUZZ_TARGET: config, schedule,
// duration, address. Besides crashes and memory errors, each target traps on a
// broken property (the same ones Tests/CaretakerCoreTests/FuzzTests.swift checks).

import CaretakerCore
import Foundation

private enum Target: String {
    case config, schedule, duration, address
}

private let target: Target = {
    let name = ProcessInfo.processInfo.environment["CARETAKER_FUZZ_TARGET"] ?? ""
    guard let target = Target(rawValue: name) else {
        fatalError("set CARETAKER_FUZZ_TARGET to config, schedule, duration or address (got \"\(name)\")")
    }
    return target
}()

private let instants: [Date] = [0, -1, 1_774_746_000, 1_792_890_000, 951_782_400, -2_208_988_800, 4_102_444_799.5]
    .map { Date(timeIntervalSince1970: $0) }
private let zones = ["UTC", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kathmandu"].compactMap(
    ZoneInfo.init(identifier:))

private func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
}

private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func caretakerFuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    switch target {
    case .config: fuzzConfiguration(text)
    case .schedule: fuzzSchedule(text, zone: zones[size % zones.count])
    case .duration: fuzzDuration(text)
    case .address: fuzzAddress(text)
    }
    return 0
}

private func fuzzConfiguration(_ text: String) {
    // `template_file` is read from disk: keep the fuzzer away from devices that never end.
    if text.contains("/dev/") || text.contains("/proc/") || text.contains("/sys/") { return }
    let file = "/nonexistent-caretaker-fuzz/jobs.toml"
    let lineCount = text.utf8.count { $0 == 0x0A } + 1
    do {
        let configuration = try ConfigurationLoader.parse(text, file: file)
        for job in configuration.jobs {
            for date in instants {
                if let next = job.schedule.nextDate(after: date) {
                    require(next > date, "\(job.name): next slot \(next) not after \(date)")
                }
            }
        }
    } catch {
        require(error.line >= 0 && error.line <= lineCount, "line \(error.line) outside 0...\(lineCount): \(error)")
        require(!error.message.isEmpty, "empty message")
        require(!error.key.isEmpty || error.message.hasPrefix("TOML syntax error"), "no key named: \(error)")
        require(
            !error.description.unicodeScalars.contains(where: isControl),
            "not one line: \(error.description.debugDescription)")
    }
}

private func fuzzSchedule(_ text: String, zone: ZoneInfo) {
    guard let schedule = try? Schedule(parsing: text, timeZone: zone) else { return }
    for date in instants {
        guard let next = schedule.nextDate(after: date) else { continue }
        require(next > date, "\(text.debugDescription): next slot \(next) not after \(date)")
        require(
            schedule.previousDate(atOrBefore: next) == next,
            "\(text.debugDescription): slot \(next) is not its own previous slot")
        if let before = schedule.previousDate(atOrBefore: next.addingTimeInterval(-0.001)) {
            require(before <= date, "\(text.debugDescription): slot \(before) between \(date) and \(next)")
        }
    }
}

private func fuzzDuration(_ text: String) {
    guard let duration = DurationText.parse(text) else { return }
    require(duration >= .zero, "negative duration from \(text.debugDescription)")
    require(
        DurationText.parse(DurationText.format(duration)) == duration, "\(text.debugDescription) does not round-trip")
}

private func fuzzAddress(_ text: String) {
    let valid = MailAddress.isValid(text)
    require(
        valid == ((try? MailAddress(text)) != nil) && valid == (MailAddress.problem(in: text) == nil),
        "isValid, init and problem(in:) disagree on \(text.debugDescription)")
    if valid {
        require(
            !text.contains(where: { "\r\n ,<>\"\\".contains($0) }) && text.utf8.count <= 254,
            "valid address with a forbidden character: \(text.debugDescription)")
    }
    if let mailbox = try? Mailbox(parsing: text) {
        require(!mailbox.description.unicodeScalars.contains(where: isControl), "mailbox with a control character")
    }
}
