extension Substring {
    /// `trimmingCharacters(in: .whitespaces)` (tabs and Unicode space
    /// separators) without Foundation's trip through UTF-16, which cost a
    /// tenth of an authenticated request's time on Linux.
    func trimmingHorizontalSpace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.isHorizontalSpace }),
              let last = scalars.lastIndex(where: { !$0.isHorizontalSpace }) else { return "" }
        return String(self[first..<scalars.index(after: last)])
    }
}

extension String {
    func trimmingHorizontalSpace() -> String { self[...].trimmingHorizontalSpace() }
}

extension Unicode.Scalar {
    /// The scalars of `CharacterSet.whitespaces`: tab, the space separators,
    /// and the zero-width space Foundation counts with them.
    var isHorizontalSpace: Bool {
        if isASCII { return self == " " || self == "\t" }
        return value == 0x200B || properties.generalCategory == .spaceSeparator
    }
}
