import CaretakerConfig
import CaretakerSupport

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `[jobs.send-temp-passwords]`'s own keys.
public struct SendTempPasswordsSettings: Sendable {
    public var maxPerHour: Int = 3
    public var tempPasswordLength: Int = 16
    public var tempPasswordTTL: Duration = .seconds(24 * 3600)
    /// Defaults to `12`, `10` in low-footprint mode.
    public var bcryptCost: Int = 12
    public var maxAttempts: Int = 5
    public var templateFile: String = ""
    /// The template's text (the built-in one when `templateFile` is empty).
    public var template: MailTemplate = .default
}

extension SendTempPasswordsSettings {
    /// Reads them from the job's table, with their defaults and bounds; `template_file`
    /// is read now, relative to the configuration `file`.
    init(reading table: inout TableReader, file: String, worker: WorkerOptions) throws(ConfigurationError) {
        maxPerHour = try table.integer("max_per_hour", default: 3, in: 1...1000)
        // bcrypt reads at most 72 bytes of a password.
        tempPasswordLength = try table.integer("temp_password_length", default: 16, in: 12...72)
        tempPasswordTTL = try table.duration("temp_password_ttl", default: tempPasswordTTL, minimum: .seconds(60))
        bcryptCost = try table.integer("bcrypt_cost", default: worker.lowFootprint ? 10 : 12, in: 4...31)
        maxAttempts = try table.integer("max_attempts", default: 5, in: 1...100)
        templateFile = try table.string("template_file", default: "")
        if !templateFile.isEmpty {
            template = try Self.readTemplate(templateFile, relativeTo: file, table: table)
        }
    }

    private static func readTemplate(
        _ path: String, relativeTo file: String, table: TableReader
    ) throws(ConfigurationError) -> MailTemplate {
        let resolved =
            path.hasPrefix("/")
            ? path
            : URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(path).path
        let text: String
        do {
            text = try TextFile.read(resolved)
        } catch {
            throw table.error("template_file", "cannot read \(resolved) (\(error))")
        }
        if text.utf8.contains(0) { throw table.error("template_file", "\(resolved) contains a NUL byte") }
        switch MailTemplate.parse(text) {
        case .success(let template): return template
        case .failure(let problem): throw table.error("template_file", "\(resolved): \(problem.message)")
        }
    }
}
