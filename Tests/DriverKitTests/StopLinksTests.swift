import DriverKit
import Foundation
import Testing
import VroomXModels

@Suite("A stop's call and directions")
struct StopLinksTests {
    @Test("a number as people write it dials as the phone does: digits, a leading +, an extension after a pause; a few digits are no number")
    func call() {
        #expect(StopLinks.call("(312) 555-0142")?.absoluteString == "tel:3125550142")
        #expect(StopLinks.call("+1 312.555.0142")?.absoluteString == "tel:+13125550142")
        #expect(StopLinks.call("312-555-0142 ext. 7")?.absoluteString == "tel:3125550142,7")
        #expect(StopLinks.call("312 555 0142 x12")?.absoluteString == "tel:3125550142,12")
        #expect(StopLinks.call("") == nil && StopLinks.call("ask at gate") == nil && StopLinks.call("555-01") == nil)
        #expect(StopLinks.call(String(repeating: "9", count: 40)) == nil)
        // Words around it, and a second number, are not dialled.
        #expect(StopLinks.call("Fax 312-555-0142")?.absoluteString == "tel:3125550142")
        #expect(StopLinks.call("Alex: 312 555 0142")?.absoluteString == "tel:3125550142")
        #expect(StopLinks.call("Main 312-555-0100 / fax 312-555-0101")?.absoluteString == "tel:3125550100")
        #expect(StopLinks.call("+1 312 555 0142 x12 or 555-0199")?.absoluteString == "tel:+13125550142,12")
        #expect(StopLinks.call("+44 (0) 20 7946 0958")?.absoluteString == "tel:+442079460958")
        #expect(StopLinks.call("312-555-0142 x1234567890")?.absoluteString == "tel:3125550142")
        // Only plain digits: a digit with a mark on it, or a keycap, is no digit.
        #expect(StopLinks.call("1\u{301}2345678") == nil)
        #expect(StopLinks.call("3\u{FE0F}\u{20E3}125550142")?.absoluteString == nil)
    }

    @Test("directions go to the pinned point when dispatch placed one, else to the address, by car")
    func directions() throws {
        let yard = Stop(name: "Manheim Chicago", address: "20401 Cox Ave, Matteson, IL 60443",
                        location: GeoPoint(latitude: 41.5031, longitude: -87.7448))
        let pinned = try #require(StopLinks.directions(to: yard))
        let items = URLComponents(url: pinned, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(pinned.host == "maps.apple.com")
        #expect(items.first { $0.name == "daddr" }?.value == "41.5031,-87.7448")
        #expect(items.first { $0.name == "q" }?.value == "Manheim Chicago")
        #expect(items.first { $0.name == "dirflg" }?.value == "d")

        let street = try #require(StopLinks.directions(to: Stop(address: "1200 W Lake St #4, Chicago, IL & more")))
        #expect(URLComponents(url: street, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "daddr" }?.value
                == "1200 W Lake St #4, Chicago, IL & more")
        #expect(!street.absoluteString.contains(" ") && street.absoluteString.contains("%23"))
        #expect(StopLinks.directions(to: Stop(address: "  ")) == nil)
    }
}
