/// Renders rows as aligned columns for people (SPEC §2); scripts use `--json`.
public struct TextTable: Sendable {
    public let headers: [String]
    public private(set) var rows: [[String]] = []

    public init(_ headers: [String]) {
        self.headers = headers
    }

    public mutating func append(_ row: [String]) {
        rows.append(row)
    }

    public func render() -> String {
        let all = [headers] + rows
        let widths = headers.indices.map { column in
            all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0
        }
        return all.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.rightPadded(to: widths[index])
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
