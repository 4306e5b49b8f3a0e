import CaretakerText

/// The temporary-password message: a `Subject:` line, a blank line, then the body.
///
/// Placeholders: `{{name}}` (display name, or the address), `{{password}}`,
/// `{{expires_at}}` (UTC, from the database clock) and `{{app_name}}`.
public struct MailTemplate: Sendable, Equatable {
    public var subject: String
    public var body: String

    public static let `default` = MailTemplate(
        subject: "Your temporary password",
        body: """
            Hello {{name}},

            someone asked to reset the password of your {{app_name}} account.

            Temporary password: {{password}}

            It works until {{expires_at}}; you will be asked to choose a new password
            when you sign in with it. Your old password keeps working. If you did not
            ask for this, you can ignore this message.
            """)

    /// Parses a template file. Returns a message saying what is wrong when it cannot.
    public static func parse(_ text: String) -> Result<MailTemplate, TemplateProblem> {
        let normalized = text.replacing("\r\n", with: "\n")
        guard normalized.hasPrefix("Subject:") else {
            return .failure(TemplateProblem(message: "the first line must be \"Subject: …\""))
        }
        let parts = normalized.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        let subject = parts[0].dropFirst("Subject:".count).trimmed(where: { $0.isWhitespace && !$0.isNewline })
        let body = parts.count > 1 ? String(parts[1]).trimmingPrefixNewlines() : ""
        guard !subject.isEmpty else { return .failure(TemplateProblem(message: "the subject is empty")) }
        guard body.contains("{{password}}") else {
            return .failure(TemplateProblem(message: "the body must contain {{password}}"))
        }
        guard !subject.contains("{{password}}") else {
            return .failure(TemplateProblem(message: "the password must not be put in the subject"))
        }
        return .success(MailTemplate(subject: subject, body: body))
    }

    /// Fills the placeholders in one pass, so a value that itself looks like a
    /// placeholder (a display name of `{{password}}`) is never expanded.
    public func render(
        name: String, password: String, expiresAt: String, appName: String
    ) -> (subject: String, body: String) {
        let values = ["name": name, "password": password, "expires_at": expiresAt, "app_name": appName]
        return (Self.fill(subject, values), Self.fill(body, values))
    }

    private static func fill(_ text: String, _ values: [String: String]) -> String {
        var output = ""
        var rest = text[...]
        while let open = rest.firstRange(of: "{{") {
            output += rest[..<open.lowerBound]
            let afterOpen = rest[open.upperBound...]
            guard let close = afterOpen.firstRange(of: "}}"),
                let value = values[String(afterOpen[..<close.lowerBound])]
            else {
                output += "{{"
                rest = afterOpen
                continue
            }
            output += value
            rest = afterOpen[close.upperBound...]
        }
        return output + rest
    }
}

public struct TemplateProblem: Error, Sendable { public let message: String }

private extension String {
    func trimmingPrefixNewlines() -> String {
        String(drop { $0 == "\n" })
    }
}
