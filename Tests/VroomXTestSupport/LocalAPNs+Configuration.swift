import Foundation
import LocalAPNs
import VroomXServer

@_exported import LocalAPNs

extension LocalAPNsServer {
    /// The server's APNs settings for this local server: its provider key,
    /// team, topic and address, trusting its certificate.
    public var apnsConfiguration: APNsConfiguration {
        APNsConfiguration(privateKeyPEM: providerKeyPEM, keyID: keyID, teamID: teamID, topic: topic, baseURL: baseURL,
                          extraRootCertificatePEM: certificatePEM)
    }
}

/// Waits until a condition holds (work that happens in the background),
/// for at most `timeout` times the tests' wait scale (`TestWait`).
public func waitUntil(_ what: String, timeout: Duration = .seconds(15),
                       _ condition: @Sendable () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + TestWait.bound(timeout)
    while !(try await condition()) {
        guard ContinuousClock.now < deadline else { throw TestSetupError("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
