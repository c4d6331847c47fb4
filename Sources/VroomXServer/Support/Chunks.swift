extension Array {
    /// The elements in runs of at most `size` (the last may be shorter): a
    /// long `IN (…)` list sent as several statements, each within the
    /// databases' limits on bound values.
    func chunks(of size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: Swift.max(size, 1)).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
