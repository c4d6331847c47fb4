/// Where one page of a long console list stands: the rows it shows and the
/// links to the pages beside it (the board, a trip's expenses), rendered by
/// the `pager` template.
struct ConsolePager {
    /// 1-based.
    let page: Int
    let pageSize: Int
    let total: Int

    var pages: Int { max(1, (total + pageSize - 1) / pageSize) }
    /// The index of the page's first row.
    var offset: Int { (page - 1) * pageSize }

    /// The page asked for, kept within the list (the first page for nonsense).
    static func clamped(_ requested: Int?, pageSize: Int, total: Int) -> ConsolePager {
        let last = ConsolePager(page: 1, pageSize: pageSize, total: total).pages
        return ConsolePager(page: min(max(requested ?? 1, 1), last), pageSize: pageSize, total: total)
    }

    /// The pager as its template shows it, for a page showing `shown` rows; `link` gives a page's address.
    func view(shown: Int, label: String, link: (Int) -> String) -> ConsolePagerView {
        view(shown: shown, label: label, ends: false, prev: page > 1 ? link(page - 1) : nil, next: page < pages ? link(page + 1) : nil)
    }

    /// The pager with the addresses of its links given, for a list whose
    /// pages are found from the rows beside them. A link that leads nowhere
    /// is shown disabled, so the pager keeps its shape from page to page;
    /// `ends` adds First and Last.
    func view(shown: Int, label: String, ends: Bool, first: String? = nil, prev: String?, next: String?, last: String? = nil) -> ConsolePagerView {
        ConsolePagerView(label: label, first: ConsoleFormat.grouped(total == 0 ? 0 : offset + 1), last: ConsoleFormat.grouped(offset + shown),
                         count: ConsoleFormat.grouped(total), page: ConsoleFormat.grouped(page), pages: ConsoleFormat.grouped(pages),
                         ends: ends, firstPage: first, prev: prev, next: next, lastPage: last)
    }
}

/// The `pager` template's keys.
struct ConsolePagerView: ConsoleView {
    let label: String
    let first: String
    let last: String
    let count: String
    let page: String
    let pages: String
    let ends: Bool
    let firstPage: String?
    let prev: String?
    let next: String?
    let lastPage: String?
}
