import Testing
import VroomXModels

@Suite("Inspection slots")
struct MediaSlotTests {
    @Test("slots come in walk-around order: required angles as shot, optional ones, damages by number, video, signature")
    func walkOrder() {
        let shuffled: [MediaSlot] = ["signature", "damage_10", "vin_plate", "damage_2", "front", "interior", "left_side", "rear", "walkthrough"]
        #expect(shuffled.sorted { $0.walkOrder < $1.walkOrder }.map(\.rawValue)
            == ["front", "rear", "left_side", "vin_plate", "interior", "damage_2", "damage_10", "walkthrough", "signature"])
    }
}
