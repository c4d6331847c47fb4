import Foundation

/// A driver app's version ("1.4" or "1.4.2"), which it sends with every
/// request, so a server that no longer speaks to old apps can tell them to
/// update before they get anything wrong. Compared number by number; a
/// missing number counts as 0 ("1.4" is "1.4.0").
public struct AppVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The request header the app states its version in.
    public static let header = "X-VroomX-App-Version"
    /// The answer's header naming the oldest version the server accepts.
    public static let minimumHeader = "X-VroomX-Minimum-App-Version"

    public let numbers: [Int]

    /// Up to four numbers of up to six digits each, separated by dots; nil for anything else.
    public init?(_ text: String) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard (1...6).contains(part.count), part.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(part) else { return nil }
            numbers.append(number)
        }
        self.numbers = numbers
    }

    public var description: String { numbers.map(String.init).joined(separator: ".") }

    public static func < (lhs: AppVersion, rhs: AppVersion) -> Bool {
        for index in 0..<max(lhs.numbers.count, rhs.numbers.count) {
            let (left, right) = (lhs.number(at: index), rhs.number(at: index))
            if left != right { return left < right }
        }
        return false
    }

    public static func == (lhs: AppVersion, rhs: AppVersion) -> Bool { !(lhs < rhs) && !(rhs < lhs) }

    public func hash(into hasher: inout Hasher) {
        var numbers = self.numbers
        while numbers.last == 0 { numbers.removeLast() }
        hasher.combine(numbers)
    }

    private func number(at index: Int) -> Int { index < numbers.count ? numbers[index] : 0 }
}
