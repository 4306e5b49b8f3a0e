import CaretakerConfig
import CaretakerSupport
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Opens connections as `[database]` says, with the password from a file or a
/// systemd credential when one is configured.
public struct DatabaseConnector: Sendable {
    public let options: DatabaseOptions
    private let password: String?

    /// Name of the systemd credential (`LoadCredential=db-password:…`) read when present.
    public static let passwordCredential = "db-password"

    public init(
        options: DatabaseOptions, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SecretError) {
        self.options = options
        self.password = try Secrets.read(
            file: options.passwordFile, credential: Self.passwordCredential,
            environment: environment, purpose: "database.password_file")
    }

    /// Connects once; throws `.connection` after `connect_timeout`. When the server asks
    /// for a password and caretaker has none, the error says where one can come from.
    public func connect(applicationName: String = "caretaker") throws(PostgresError) -> Connection {
        do {
            return try Connection(
                Connection.Configuration(
                    conninfo: options.url, applicationName: applicationName,
                    connectTimeout: options.connectTimeout, password: password))
        } catch  where password == nil && error.message.contains("no password supplied") {
            throw PostgresError(
                kind: .connection,
                message: error.message + " — " + Self.missingPasswordAdvice)
        }
    }

    /// Where a database password comes from, for the error when the server wants one and there is none.
    public static let missingPasswordAdvice =
        "the server asks for a password and caretaker has none: put it in database.password_file, "
        + "in /etc/caretaker/db-password (the service's systemd credential \(passwordCredential)), "
        + "in ~/.pgpass or in PGPASSWORD"
}

/// Reads secrets from `*_file` keys or `$CREDENTIALS_DIRECTORY`; never logs them.
public enum Secrets {
    /// The first of: the configured file, then the systemd credential; `nil` when neither is set.
    /// An empty credential (or a lone newline) counts as none: the units pair each
    /// `LoadCredential=` with `SetCredential=ID:\n`, which systemd hands over when the
    /// operator has no such file.
    public static func read(
        file: String, credential: String, environment: [String: String],
        purpose: String
    ) throws(SecretError) -> String? {
        if !file.isEmpty { return try contents(of: file, purpose: purpose) }
        if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            let path = directory + "/" + credential
            if FileManager.default.fileExists(atPath: path) {
                let secret = try contents(of: path, purpose: "systemd credential \(credential)")
                return secret.isEmpty ? nil : secret
            }
        }
        return nil
    }

    private static func contents(of path: String, purpose: String) throws(SecretError) -> String {
        let text: String
        do {
            text = try TextFile.read(path)
        } catch {
            throw SecretError(message: "cannot read \(purpose) \(path): \(error)")
        }
        // A C library would cut the secret at a NUL byte: refuse it rather than send a part.
        if text.utf8.contains(0) {
            throw SecretError(message: "\(purpose) \(path) contains a NUL byte: write the secret alone, without one")
        }
        // Files written with `echo` end in a newline that is not part of the secret.
        return String(text.trimmingSuffix(while: { $0 == "\n" || $0 == "\r" }))
    }
}

/// A secret file could not be read. The message names the file, never its contents.
public struct SecretError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }

    package init(message: String) {
        self.message = message
    }
}

extension StringProtocol {
    func trimmingSuffix(while predicate: (Character) -> Bool) -> SubSequence {
        var end = endIndex
        while end > startIndex, predicate(self[index(before: end)]) { end = index(before: end) }
        return self[startIndex..<end]
    }
}
