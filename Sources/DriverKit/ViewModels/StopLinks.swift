import Foundation
import VroomXModels

/// What a stop's contact and address open on the phone: a call, and the
/// route in Maps.
public enum StopLinks {
    /// `tel:` with the first number in the text as a phone dials it:
    /// "(312) 555-0142 ext. 7" → `tel:3125550142,7`, "+44 (0) 20 7946 0958"
    /// → `tel:+442079460958`. Words before it ("Fax", "Alex:") are skipped; a
    /// second number ("… / 555-0199", "… or …") is not read as an extension.
    /// Nil when there are too few digits to be a number.
    public static func call(_ text: String) -> URL? {
        let characters = Array(text.unicodeScalars)
        // The number starts at its first digit (or a + just before one).
        guard let firstDigit = characters.firstIndex(where: isDigit) else { return nil }
        var index = firstDigit
        let international = firstDigit > 0 && characters[firstDigit - 1] == "+"
        var digits = ""
        // The number: digits and what people put between them, up to anything else.
        while index < characters.count, isDigit(characters[index]) || " -.()\u{00A0}".unicodeScalars.contains(characters[index]) {
            // "+44 (0) 20 …": the trunk 0 in brackets is not dialled from abroad.
            if international, characters[index...].starts(with: "(0)".unicodeScalars) {
                index += 3
                continue
            }
            if isDigit(characters[index]) { digits.unicodeScalars.append(characters[index]) }
            index += 1
        }
        guard (7...15).contains(digits.count) else { return nil }
        // An extension right after it: "x12", "ext 12", "ext. 12", "#12" (up to 6 digits).
        let rest = String(String.UnicodeScalarView(characters[index...])).lowercased()
        var ext = ""
        if let marker = rest.firstMatch(of: /^\s*(?:ext\.?|x|#)\s*([0-9]{1,6})(?![0-9])/) { ext = String(marker.1) }
        return URL(string: "tel:" + (international ? "+" : "") + digits + (ext.isEmpty ? "" : "," + ext))
    }

    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

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
