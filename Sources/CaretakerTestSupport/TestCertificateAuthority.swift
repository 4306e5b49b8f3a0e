import Foundation

/// A throwaway certificate authority made with `openssl` for TLS tests, and a server
/// certificate it signed for `localhost` and 127.0.0.1 (valid for a day).
public struct TestCertificateAuthority: Sendable {
    /// The temporary directory holding the files below.
    public let directory: String
    /// The CA's certificate (PEM): what a client trusts (`sslrootcert`, `mail.ca_file`).
    public var certificate: String { directory + "/ca.crt" }
    /// The server's certificate and private key (PEM), signed by this CA.
    public var serverCertificate: String { directory + "/server.crt" }
    public var serverKey: String { directory + "/server.key" }

    public init(name: String = "caretaker test CA") throws {
        directory = NSTemporaryDirectory() + "caretaker-ca-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = """
            set -e
            cd "$1"
            curve="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
            openssl req -x509 $curve -keyout ca.key -out ca.crt -days 1 -subj "/CN=$2"
            openssl req $curve -keyout server.key -out server.csr -subj "/CN=localhost"
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > server.ext
            openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
                -extfile server.ext -out server.crt
            chmod 600 server.key
            """
        let log = directory + "/openssl.log"
        let status = try ChildProcess.run(["/bin/sh", "-c", script, "sh", directory, name], logPath: log)
        guard status == 0 else {
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw TemporaryPostgresError(message: "openssl could not make a test CA (\(status)): \(output)")
        }
    }

    /// Removes the files.
    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
