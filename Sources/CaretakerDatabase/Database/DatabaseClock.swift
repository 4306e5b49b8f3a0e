import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The database's clock: the only clock caretaker decides by (a host with a wrong
/// clock must never expire anything early).
public enum DatabaseClock {
    /// `now()` on the server, to the microsecond.
    public static func now(_ connection: Connection) throws -> Date {
        guard
            let seconds = try connection.query("SELECT extract(epoch FROM clock_timestamp())::float8 AS now").first?
                .double("now")
        else {
            throw PostgresError(kind: .query, message: "the server did not return its clock")
        }
        return Date(timeIntervalSince1970: seconds)
    }
}
