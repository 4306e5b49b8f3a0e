/// Renders rows as aligned columns for people; scripts use `--json`.
struct TextTable: Sendable {
    let headers: [String]
    private(set) var rows: [[String]] = []

    init(_ headers: [String]) {
        self.headers = headers
    }

    mutating func append(_ row: [String]) {
        rows.append(row)
    }

    func render() -> String {
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
