import Testing
@testable import CaretakerCore

/// The catalogue of built-in jobs (`Jobs/BuiltInJob.swift`) agrees with itself and with `check`.
@Suite struct BuiltInJobTests {
    @Test("each built-in job's settings map back to its catalogue entry, and operator SQL to none")
    func settingsRoundTrip() throws {
        let configuration = try ConfigurationLoader.parse("[jobs.clean]\nschedule = \"@hourly\"\nsql = \"SELECT 1\"\n", file: "jobs.toml")
        for builtIn in BuiltInJob.allCases {
            #expect(configuration.job(named: builtIn.rawValue)?.builtIn == builtIn)
        }
        #expect(configuration.job(named: "clean")?.builtIn == nil)
    }

    @Test("check verifies every app column a built-in job is granted", arguments: BuiltInJob.allCases)
    func checkCoversGrantedColumns(job: BuiltInJob) {
        let checked = Set(SchemaCheck.expected.map { "\($0.table).\($0.column)" })
        for (table, privileges) in job.appTablePrivileges {
            let columns = privileges.select.union(privileges.update).union(privileges.insert)
                .union([privileges.lockColumn].compactMap { $0 })
                .subtracting(["ctid"])  // a system column every table has
            for column in columns.sorted() {
                #expect(checked.contains("\(table).\(column)"), "\(job.rawValue) uses \(table).\(column), which check does not verify")
            }
        }
    }

    @Test("only send-temp-passwords sends mail, only prune deletes run history")
    func flags() {
        #expect(BuiltInJob.allCases.filter(\.sendsMail) == [.sendTempPasswords])
        #expect(BuiltInJob.allCases.filter(\.deletesRunHistory) == [.prune])
    }
}
