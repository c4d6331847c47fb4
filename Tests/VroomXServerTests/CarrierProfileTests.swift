import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The carrier's profile: defaults until saved, numbers read as carriers
/// write them, edits with versions, each carrier its own.
@Suite("Carrier profile")
struct CarrierProfileTests {
    @Test("the profile reads as defaults until saved, takes MC and DOT numbers as carriers write them, and conflicts on a stale version",
          arguments: TestBackend.available)
    func profile(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let dispatch = alpha.dispatcher.accessToken
        try await server.run { api in
            let blank = try await api.call(.dispatchCarrierProfile, token: dispatch).decode(CarrierProfile.self)
            #expect(blank.version == 0 && blank.legalName.isEmpty && blank.trackingLinkInEmails)
            let saved = try await api.call(.dispatchUpdateCarrierProfile, json: UpdateCarrierProfileRequest(
                legalName: "Alpha Car Carriers LLC", mcNumber: " mc-123456 ", dotNumber: "USDOT 3456789", address: "1 Depot Rd, Joliet, IL",
                phone: "815-555-0100", email: "Dispatch@Alpha.example", bolTerms: "Carrier is not liable for\r\ninterior items.",
                trackingLinkInEmails: false, baseVersion: 0), token: dispatch)
            #expect(saved.status == 200, "\(saved.text)")
            let profile = try saved.decode(CarrierProfile.self)
            #expect(profile.mcNumber == "123456" && profile.dotNumber == "3456789" && profile.email == "dispatch@alpha.example")
            #expect(profile.bolTerms == "Carrier is not liable for\ninterior items." && !profile.trackingLinkInEmails && profile.version == 1)
            for (request, field) in [(UpdateCarrierProfileRequest(mcNumber: "MC-12A"), "mc_number"),
                                     (UpdateCarrierProfileRequest(dotNumber: "1234567890"), "dot_number"),
                                     (UpdateCarrierProfileRequest(email: "nope"), "email"),
                                     (UpdateCarrierProfileRequest(bolTerms: String(repeating: "t", count: 4001)), "bol_terms")] {
                let refused = try await api.call(.dispatchUpdateCarrierProfile, json: request, token: dispatch)
                #expect(refused.status == 422 && refused.error?.field == field, "\(field): \(refused.text)")
            }
            let stale = try await api.call(.dispatchUpdateCarrierProfile, json: UpdateCarrierProfileRequest(phone: "1", baseVersion: 0), token: dispatch)
            #expect(stale.status == 409 && stale.error?.field == "base_version")
            // Each carrier its own; drivers have no say.
            #expect(try await api.call(.dispatchCarrierProfile, token: beta.dispatcher.accessToken).decode(CarrierProfile.self).version == 0)
            #expect(try await api.call(.dispatchCarrierProfile, token: alpha.driver.accessToken).status == 403)
        }
    }
}
