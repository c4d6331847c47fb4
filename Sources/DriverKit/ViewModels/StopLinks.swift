import Foundation
import VroomXModels

/// What a stop's contact and address open on the phone: a call, and the
/// route in Maps.
public enum StopLinks {
    /// `tel:` with the number as a phone dials it (digits, a leading + and
    /// an extension after `,`): "(312) 555-0142 ext. 7" → `tel:3125550142,7`.
    /// Nil when there are too few digits to be a number.
    public static func call(_ phone: String) -> URL? {
        let lowered = phone.lowercased()
        // An extension ("x12", "ext. 12", "ext 12") waits for the call to connect.
        let parts = lowered.split(separator: /\s*(ext\.?|x)\s*/, maxSplits: 1)
        let number = String(parts.first ?? "")
        let digits = number.filter(\.isASCIIDigit)
        guard (7...15).contains(digits.count) else { return nil }
        let plus = number.trimmingCharacters(in: .whitespaces).hasPrefix("+") ? "+" : ""
        let ext = parts.count > 1 ? String(parts[1].filter(\.isASCIIDigit)) : ""
        return URL(string: "tel:" + plus + digits + (ext.isEmpty ? "" : "," + ext))
    }

    /// Directions to the stop in Apple Maps: to its pinned point when dispatch
    /// placed one (the yard's gate, not the street's middle), else to its address.
    public static func directions(to stop: Stop) -> URL? {
        var components = URLComponents(string: "https://maps.apple.com/")
        if let point = stop.location, point.isValid {
            components?.queryItems = [URLQueryItem(name: "daddr", value: "\(point.latitude),\(point.longitude)"),
                                      URLQueryItem(name: "q", value: stop.name.isEmpty ? stop.address : stop.name)]
        } else {
            let address = stop.address.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !address.isEmpty else { return nil }
            components?.queryItems = [URLQueryItem(name: "daddr", value: address)]
        }
        components?.queryItems?.append(URLQueryItem(name: "dirflg", value: "d"))
        return components?.url
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
