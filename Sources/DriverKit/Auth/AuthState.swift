import Foundation
import VroomXModels

/// Where the driver is in signing in.
public enum AuthState: Sendable, Hashable {
    case signedOut
    /// A code was emailed; waiting for the driver to type it.
    case codeSent(email: String)
    /// Signed in, but no PIN yet (asked for right after the first sign-in).
    case needsPINSetup
    /// Signed in with a PIN; the PIN (or biometrics) opens the app.
    case locked
    case unlocked
}

/// Errors a sign-in screen shows as they are.
public enum AuthError: Error, Sendable, Hashable, CustomStringConvertible {
    case driverNotFound
    /// The code was right and the email drives for several carriers: one
    /// of `AuthFlow.carrierChoices` must be chosen (`chooseCarrier`).
    case carrierRequired
    case invalidPIN(attemptsLeft: Int)
    /// Too many wrong PINs: the driver must sign in with email again.
    case pinLockedOut
    case pinFormat
    /// Logout would throw away changes that never reached the server:
    /// how many, and what they are in the driver's words.
    case unsyncedChanges(count: Int, atStake: String)
    case server(String)

    public var description: String {
        switch self {
        case .driverNotFound: return "Driver account not found. Contact your dispatcher."
        case .carrierRequired: return "You drive for more than one carrier. Choose the one you are working for now."
        case .invalidPIN(let left): return "Wrong PIN. \(left) attempt\(left == 1 ? "" : "s") left."
        case .pinLockedOut: return "Too many wrong PINs. Sign in with your email."
        case .pinFormat: return "The PIN is 4 digits."
        case .unsyncedChanges(let count, let atStake):
            return "Not at dispatch yet: \(atStake.isEmpty ? NumberText.count(count, "change") : atStake). "
                + "Signing out would lose \(count == 1 ? "it" : "them"). Sync first, or log out anyway."
        case .server(let message): return message
        }
    }
}

/// Another driver's unsynced work kept on this device for them.
public struct SetAsideWork: Sendable, Hashable {
    public let email: String
    public let changes: Int
    public let files: Int
    /// The phone holds their session and sends the work in their name.
    public let sentInTheirName: Bool

    public init(email: String, changes: Int, files: Int, sentInTheirName: Bool) {
        self.email = email
        self.changes = changes
        self.files = files
        self.sentInTheirName = sentInTheirName
    }

    public var count: Int { changes + files }

    /// What the driver signed in now is told.
    public var notice: String {
        let what = [changes > 0 ? NumberText.count(changes, "unsynced change") : nil, files > 0 ? NumberText.count(files, "file") : nil]
            .compactMap { $0 }.joined(separator: " and ")
        return sentInTheirName
            ? "This phone also holds \(what) of \(email): it sends \(count == 1 ? "it" : "them") to dispatch in their name when it has signal."
            : "This phone also holds \(what) of \(email). \(count == 1 ? "It stays" : "They stay") here, untouched, until \(email) signs in again."
    }
}
