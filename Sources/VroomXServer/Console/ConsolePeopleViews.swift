import Foundation
import VroomXModels

/// The drivers, active first, then those who left.
struct DriversView: ConsoleView {
    /// What a driver's phones hold that has not reached dispatch.
    struct PhoneWork: ConsoleView {
        struct Item: ConsoleView {
            let status: String
            let line: String
            let detail: String
            let made: TimeView?
        }

        let summary: String
        let alert: Bool
        let reported: TimeView?
        let more: String
        let items: [Item]
    }

    struct CurrentTrip: ConsoleView {
        let id: String
        let number: String
        let status: String
    }

    struct Row: ConsoleView {
        let phoneWork: PhoneWork?
        let id: String
        let name: String
        let email: String
        let phone: String
        let pay: String
        let trip: CurrentTrip?
        /// A driver with a trip to run cannot leave yet: the page says so rather than offer what the store refuses.
        let busy: Bool
        let unread: Int
        let seen: TimeView?
        let deactivated: TimeView?
    }

    struct Changed: ConsoleView {
        let name: String
        let deactivated: Bool
    }

    let drivers: [Row]
    let former: [Row]
    let hasFormer: Bool
    let empty: Bool
    let invited: String
    let saved: String
    let changed: Changed?
    let problem: String
}

/// Inviting a driver, or editing one.
struct DriverFormView: ConsoleView {
    let v: [String: String]
    let e: [String: String]
    let hasErrors: Bool
    let driverID: String
    let editing: Bool
    let email: String
    let heading: String
    let payTypes: [ChoiceView]
}

/// Writing to drivers, and what was sent.
struct MessagesView: ConsoleView {
    /// A driver's conversation in the inbox.
    struct Conversation: ConsoleView {
        let driverID: String
        let driver: String
        let last: String
        let at: TimeView?
        /// The driver's messages not yet opened ("" for none).
        let unread: String
    }

    struct Sent: ConsoleView {
        let driver: String
        let title: String
        let body: String
        /// A long message opens in place; a short one shows whole.
        let long: Bool
        let opening: String
        let urgent: Bool
        let sentAt: TimeView?
        let readAt: TimeView?
        /// An urgent message the driver answered "Got it".
        let gotIt: TimeView?
        /// Read where the phone had no signal: when dispatch learnt it, too.
        let readLate: TimeView?
    }

    let v: [String: String]
    let e: [String: String]
    let hasErrors: Bool
    let drivers: [OptionView]
    let allSelected: Bool
    let urgent: Bool
    let sent: [Sent]
    let noneSent: Bool
    let sentTo: String
    let conversations: [Conversation]
    let noConversations: Bool
}

/// What each driver earned over a week or a month.
/// A page that only says something: not found, not allowed, busy.
struct MessagePageView: ConsoleView {
    let heading: String
    let text: String
    let code: String
}

/// Signing in: the email, then the code, then (for a person of several
/// carriers) which carrier.
struct SignInView: ConsoleView {
    struct Carrier: ConsoleView {
        let id: String
        let name: String
    }

    let stepEmail: Bool
    let stepCode: Bool
    let stepCarrier: Bool
    let carriers: [Carrier]
    let v: [String: String]
    let e: [String: String]
    let notice: String?
    let signinToken: String
    let resendWait: Int?
    let noticeWait: Int?
}
