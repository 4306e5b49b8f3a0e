// The mutable table tree built while parsing, and the TOML 1.0 rules for
// defining tables: by `[header]`, by dotted keys, or implicitly as the parent
// of a deeper header. The finished tree is frozen into `TOMLTable` values.

/// A table under construction. Reference type so the parser can hold the "current
/// table" while its parents are still being filled in; never leaves the parser.
final class TOMLTableBuilder {
    /// How a table came to exist; decides whether it may be reopened or extended.
    enum Origin {
        /// The document root, or the top of an inline table.
        case root
        /// Named only as the parent of a deeper header (`a` in `[a.b]`); a later `[a]` may define it.
        case implicit
        /// Defined by its own `[header]`.
        case header
        /// Defined by dotted keys (`a.b = 1` defines `a`).
        case dotted
    }

    /// What a key holds: a finished value (including inline tables, which are closed)
    /// or a table still open for more keys.
    enum Node {
        case value(TOMLValue)
        case table(TOMLTableBuilder)
    }

    struct Slot {
        let key: String
        let node: Node
        let line: Int
    }

    var origin: Origin
    var headerLine: Int
    /// Key names from the root (from the top of the inline table, for inline tables), for messages.
    let path: [String]
    /// Nesting level: 0 for the root, parent + 1 for sub-tables.
    let depth: Int
    private(set) var slots: [Slot] = []
    private var index: [String: Int] = [:]

    init(origin: Origin, path: [String] = [], depth: Int, headerLine: Int) {
        self.origin = origin
        self.path = path
        self.depth = depth
        self.headerLine = headerLine
    }

    /// The slot for `key`, if defined.
    func slot(_ key: String) -> Slot? {
        guard let position = index[key] else { return nil }
        return slots[position]
    }

    /// Adds `key`; the caller has checked that it is new.
    func insert(_ key: String, _ node: Node, line: Int) {
        guard index[key] == nil else { return }
        index[key] = slots.count
        slots.append(Slot(key: key, node: node, line: line))
    }

    /// The finished, immutable table. Recursion is bounded by `TOMLParser.maxDepth`.
    func freeze() -> TOMLTable {
        let entries = slots.map { slot in
            switch slot.node {
            case .value(let value):
                TOMLTable.Entry(key: slot.key, value: value, line: slot.line)
            case .table(let table):
                TOMLTable.Entry(key: slot.key, value: .table(table.freeze()), line: slot.line)
            }
        }
        return TOMLTable(entries: entries, headerLine: headerLine)
    }
}

extension TOMLParser {
    /// `[a.b.c]`: walks from the root, creating missing tables, and returns `a.b.c`.
    ///
    /// Parents may be implicit, header-defined or dotted-defined tables; the last part
    /// must be new or implicit (which this header now defines).
    func openTable(
        _ parts: [KeyPart], in root: TOMLTableBuilder, header: Mark
    ) throws(TOMLSyntaxError) -> TOMLTableBuilder {
        var table = root
        for (position, part) in parts.enumerated() {
            let isLast = position == parts.count - 1
            let name = Self.dotted(parts[...position].map(\.name))
            guard let slot = table.slot(part.name) else {
                let child = try newChild(of: table, named: part, origin: isLast ? .header : .implicit)
                child.headerLine = isLast ? header.line : 0
                table.insert(part.name, .table(child), line: part.mark.line)
                table = child
                continue
            }
            let child = try existingTable(slot, named: name, at: part)
            if isLast {
                switch child.origin {
                case .implicit:
                    child.origin = .header
                    child.headerLine = header.line
                case .header, .root:
                    throw error("table [\(name)] is already defined on line \(child.headerLine)", at: header)
                case .dotted:
                    throw error(
                        "table [\(name)] was already defined by dotted keys on line \(slot.line); "
                            + "add its keys there instead", at: header)
                }
            }
            table = child
        }
        return table
    }

    /// `a.b.c = value` in `start`: creates (or enters) tables `a` and `a.b`, then sets `c`.
    func assign(_ value: TOMLValue, to parts: [KeyPart], in start: TOMLTableBuilder) throws(TOMLSyntaxError) {
        var table = start
        for (position, part) in parts.dropLast().enumerated() {
            let name = Self.dotted(parts[...position].map(\.name))
            guard let slot = table.slot(part.name) else {
                let child = try newChild(of: table, named: part, origin: .dotted)
                table.insert(part.name, .table(child), line: part.mark.line)
                table = child
                continue
            }
            let child = try existingTable(slot, named: name, at: part)
            switch child.origin {
            case .header:
                throw error(
                    "cannot add keys to table [\(Self.dotted(child.path))] with dotted keys: it has its own header "
                        + "on line \(child.headerLine); add them there", at: part.mark)
            case .implicit:
                child.origin = .dotted
            case .dotted, .root:
                break
            }
            table = child
        }
        guard let last = parts.last else { return }
        if let slot = table.slot(last.name) {
            if case .table = slot.node {
                throw error("key \(quoted(parts)) is already defined as a table (on line \(slot.line))", at: last.mark)
            }
            throw error("duplicate key \(quoted(parts)) (first defined on line \(slot.line))", at: last.mark)
        }
        table.insert(last.name, .value(value), line: last.mark.line)
    }

    /// The open table in `slot`, or an error when the key holds a value or an inline table.
    private func existingTable(
        _ slot: TOMLTableBuilder.Slot, named name: String, at part: KeyPart
    ) throws(TOMLSyntaxError) -> TOMLTableBuilder {
        switch slot.node {
        case .table(let table):
            return table
        case .value(.table):
            throw error(
                "table \"\(name)\" was written as an inline table on line \(slot.line) and cannot be extended",
                at: part.mark)
        case .value(let value):
            throw error(
                "key \"\(name)\" is already defined as \(Self.withArticle(value.typeName)) on line \(slot.line), "
                    + "so it cannot also be a table", at: part.mark)
        }
    }

    /// A new sub-table `part` of `parent`, within the nesting limit.
    private func newChild(
        of parent: TOMLTableBuilder, named part: KeyPart, origin: TOMLTableBuilder.Origin
    ) throws(TOMLSyntaxError) -> TOMLTableBuilder {
        guard parent.depth < Self.maxDepth else {
            throw error("tables and arrays are nested more than \(Self.maxDepth) levels deep", at: part.mark)
        }
        return TOMLTableBuilder(origin: origin, path: parent.path + [part.name], depth: parent.depth + 1, headerLine: 0)
    }

    /// "an integer", "a string", …
    static func withArticle(_ typeName: String) -> String {
        let vowels: Set<Character> = ["a", "e", "i", "o", "u"]
        guard let first = typeName.first, vowels.contains(first) else { return "a " + typeName }
        return "an " + typeName
    }
}
