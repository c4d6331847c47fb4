import Foundation
import VroomXModels

/// The Messages tab (seed 003): newest first in Today / This Week / Earlier,
/// filters, time labels, and the unread count for the tab badge.
public struct MessagesState: Sendable, Hashable {
    public enum Filter: String, Sendable, CaseIterable, Hashable {
        case all, unread, tripAssignments, statusChanges

        public var title: String {
            switch self {
            case .all: return "All"
            case .unread: return "Unread"
            case .tripAssignments: return "Trip Assignments"
            case .statusChanges: return "Status Changes"
            }
        }

        func includes(_ notification: DriverNotification) -> Bool {
            switch self {
            case .all: return true
            case .unread: return notification.isUnread
            case .tripAssignments: return notification.type == .tripAssignment
            case .statusChanges: return notification.type == .statusChange
            }
        }
    }

    public struct Row: Sendable, Hashable, Identifiable {
        public let notification: DriverNotification
        public let timeLabel: String
        public var id: ID<DriverNotification> { notification.id }
        public var isUnread: Bool { notification.isUnread }
        /// SF Symbol per type (seed 003).
        public var symbol: String {
            switch notification.type {
            case .tripAssignment: return "bell"
            case .statusChange: return "arrow.triangle.swap"
            case .dispatchMessage: return "message"
            case .urgent: return "exclamationmark.triangle"
            }
        }
    }

    public struct Section: Sendable, Hashable, Identifiable {
        public let title: String
        public let rows: [Row]
        public var id: String { title }
    }

    public let sections: [Section]
    /// Unread across all messages (the badge), whatever the filter.
    public let unreadCount: Int
    public let filter: Filter

    public var isEmpty: Bool { sections.isEmpty }
    public static let emptyTitle = "No messages yet"
    public static let emptyBody = "Notifications from dispatch will appear here."

    public init(_ notifications: [DriverNotification], filter: Filter, now: Date, calendar: Calendar) {
        let labels = TimeLabels(calendar: calendar)
        let weekStart = calendar.dateInterval(of: .weekOfYear, for: now)?.start ?? now
        var today: [Row] = [], week: [Row] = [], earlier: [Row] = []
        for notification in notifications.sorted(by: { ($0.createdAt, $0.id.rawValue) > ($1.createdAt, $1.id.rawValue) })
        where filter.includes(notification) {
            let row = Row(notification: notification, timeLabel: labels.relative(notification.createdAt, now: now))
            if calendar.isDate(notification.createdAt, inSameDayAs: now) {
                today.append(row)
            } else if notification.createdAt >= weekStart {
                week.append(row)
            } else {
                earlier.append(row)
            }
        }
        sections = [Section(title: "Today", rows: today), Section(title: "This Week", rows: week),
                    Section(title: "Earlier", rows: earlier)].filter { !$0.rows.isEmpty }
        unreadCount = notifications.filter(\.isUnread).count
        self.filter = filter
    }
}

/// Where tapping a message leads (seed 003).
public enum MessageDestination: Sendable, Hashable {
    case order(ID<Order>, trip: ID<Trip>?)
    case trip(ID<Trip>)
    /// Urgent messages raise an alert with their text.
    case alert(title: String, body: String)
    /// Nothing to open: show the body inline.
    case inline
}

extension DriverNotification {
    /// Where tapping it leads: the same rule as tapping its push (seed 003)
    /// — a trip assignment opens the trip, a status change its order, an
    /// urgent message raises an alert, a dispatch message reads inline.
    public var destination: MessageDestination {
        switch NotificationDestination(self) {
        case .trip(let trip): return .trip(trip)
        case .order(let order): return .order(order, trip: data.tripID)
        case .urgent(let title, let body): return .alert(title: title, body: body)
        case .messages: return .inline
        }
    }
}
