import Postgres

/// Where the previous batch of a keyset walk stopped. A query pages with
/// `(column, id) > ($n::timestamptz, $m::bigint) ORDER BY column, id`, or with
/// `id > $n ORDER BY id` when the rows are ordered by id alone, so each batch
/// starts after the last row of the one before, whatever the batches changed.
struct KeysetCursor: Sendable {
    /// The column ordered by before `id` (e.g. `created_at`); `nil`: `id` alone.
    let column: String?
    /// The last row's value of `column`, as the server sent it; `-infinity` before the first batch.
    private(set) var position = "-infinity"
    /// The last row's `id`.
    private(set) var id = Int64.min

    init(orderedBy column: String? = nil) { self.column = column }

    /// The query's keyset parameters: `position`, `id`, or only `id` when ordered by id alone.
    var parameters: [any PostgresBindable] { column == nil ? [id] : [position, id] }

    /// Moves past the last of `rows` (each carrying `id`, and `column` when there is one);
    /// stays where it is when there are none.
    mutating func advance(past rows: [Row]) {
        guard let last = rows.last, let lastID = last.int64("id") else { return }
        if let column {
            guard let value = last[column] else { return }
            position = value
        }
        id = lastID
    }
}
