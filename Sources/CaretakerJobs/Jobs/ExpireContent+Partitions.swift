/// The page sweep on a `posts` partitioned by range on `created_at`.
///
/// A TID range is one heap's, and the partitioned table has none of its own
/// (`pg_relation_size` is 0): each partition is sampled and swept on its own pages.
/// The queries still name `posts`, with the partition's bounds as parameters, so the
/// planner prunes them to that partition: the worker role needs rights on `posts`
/// only, which cover every partition, ones created later by the app or pg_partman
/// included (PostgreSQL checks the rights of the table a query names, not those of
/// the partitions it reaches through it).
///
/// The DEFAULT partition, and any without plain range bounds, are left to the index
/// path: no bounds prune a query to them alone.
struct PartitionSweep {
    let partition: PostPartition
    let pages: Int64
    let sample: DueSample
}

extension ExpireContentPass {
    /// Samples every partition large enough for the sweep; those with enough due go
    /// to `partitionSweeps`, oldest first, and the run sweeps when there is one.
    func partitionSweepDecision(_ partitions: [PostPartition]) throws -> PostPath {
        let whole = queries
        defer { queries = whole }
        var total: Int64 = 0
        for partition in partitions where !partition.isPartitioned && !partition.isDefault {
            guard let bounds = partition.bounds, partition.pages >= ExpireContent.sweepMinimumPages else { continue }
            queries = ExpireContentQueries(schema: context.schema, settings: settings, partition: bounds)
            let sample = try sampleDuePosts(pages: partition.pages)
            let path = ExpireContent.postPath(pages: partition.pages, sampled: sample.sampled, due: sample.due)
            context.logger.debug(
                "sampled a partition of posts",
                metadata: [
                    "partition": "\(partition.displayName)", "pages": "\(partition.pages)",
                    "due_share": "\(sample.sampled > 0 ? Double(sample.due) / Double(sample.sampled) : 0)",
                ])
            if case .sweep(let pages) = path {
                partitionSweeps.append(PartitionSweep(partition: partition, pages: pages, sample: sample))
                total += pages
            }
        }
        return total > 0 ? .sweep(pages: total) : .index
    }

    /// Sweeps each partition `partitionSweepDecision` chose, one after the other.
    func sweepPartitions() throws {
        let whole = queries
        defer {
            queries = whole
            sample = nil
        }
        for sweep in partitionSweeps {
            if context.recordStopIfDue() { return }
            guard let bounds = sweep.partition.bounds else { continue }
            queries = ExpireContentQueries(schema: context.schema, settings: settings, partition: bounds)
            sample = sweep.sample
            try sweepPosts(pages: sweep.pages)
        }
    }
}
