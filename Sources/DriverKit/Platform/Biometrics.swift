import Foundation
#if canImport(LocalAuthentication)
import LocalAuthentication
#endif

/// Face ID / Touch ID, offered after a PIN has been set up.
public protocol Biometrics: Sendable {
    /// Whether the device can do it now (hardware present and enrolled).
    var isAvailable: Bool { get }
    /// Asks the user; false when they cancel or fail.
    func authenticate(reason: String) async -> Bool
}

/// Linux (and devices without biometrics): never available; PIN only.
public struct UnavailableBiometrics: Biometrics {
    public init() {}
    public var isAvailable: Bool { false }
    public func authenticate(reason: String) async -> Bool { false }
}

#if canImport(LocalAuthentication)
public struct LocalAuthenticationBiometrics: Biometrics {
    public init() {}

    public var isAvailable: Bool {
        LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
    }

    public func authenticate(reason: String) async -> Bool {
        await withCheckedContinuation { continuation in
            LAContext().evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: reason) { success, _ in
                continuation.resume(returning: success)
            }
        }
    }
}
#endif
