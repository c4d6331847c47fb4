import DriverKit
import Foundation
import Testing
import VroomXModels

/// View state at fixed instants, in a fixed calendar.
@Suite("DriverKit view state")
struct ViewStateTests {
    static var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "America/Chicago")!
        calendar.firstWeekday = 1 // Sunday
        return calendar
    }

    /// Wednesday 2026-02-11, 15:00 in Chicago.
    static let now = WireTime.parse("2026-02-11T21:00:00Z")!

    static func message(_ title: String, _ time: String, type: NotificationType = .dispatchMessage, read: Bool = false,
                        trip: ID<Trip>? = nil, order: ID<Order>? = nil) -> DriverNotification {
        DriverNotification(id: ID(), driverID: ID(), type: type, title: title, body: "body of \(title)",
                           data: NotificationData(tripID: trip, orderID: order), readAt: read ? now : nil, createdAt: WireTime.parse(time)!)
    }

    @Test("messages: Today / This Week / Earlier, newest first, with labels like \"2h ago\", \"Yesterday\", \"Feb 10\"")
    func messageSections() {
        let messages = [
            Self.message("just now", "2026-02-11T20:59:30Z"),
            Self.message("minutes", "2026-02-11T20:45:00Z", read: true),
            Self.message("hours", "2026-02-11T19:00:00Z", type: .tripAssignment),
            Self.message("this morning", "2026-02-11T06:30:00Z", type: .statusChange),   // 00:30 Chicago, still today
            Self.message("late yesterday", "2026-02-11T05:30:00Z", type: .urgent),        // 23:30 Chicago yesterday
            Self.message("monday", "2026-02-09T15:00:00Z", read: true),
            Self.message("saturday", "2026-02-07T15:00:00Z", type: .tripAssignment),      // last week
            Self.message("last year", "2025-12-30T15:00:00Z", read: true),
        ]
        let state = MessagesState(messages.shuffled(), filter: .all, now: Self.now, calendar: Self.calendar)
        #expect(state.sections.map(\.title) == ["Today", "This Week", "Earlier"])
        #expect(state.sections[0].rows.map(\.notification.title) == ["just now", "minutes", "hours", "this morning"])
        #expect(state.sections[0].rows.map(\.timeLabel) == ["Just now", "15m ago", "2h ago", "14h ago"])
        #expect(state.sections[1].rows.map(\.notification.title) == ["late yesterday", "monday"])
        #expect(state.sections[1].rows.map(\.timeLabel) == ["Yesterday", "Feb 9"])
        #expect(state.sections[2].rows.map(\.timeLabel) == ["Feb 7", "Dec 30, 2025"])
        #expect(state.unreadCount == 5)
        #expect(state.sections[1].rows[0].symbol == "exclamationmark.triangle")

        let unread = MessagesState(messages, filter: .unread, now: Self.now, calendar: Self.calendar)
        #expect(unread.sections.flatMap(\.rows).count == 5)
        #expect(unread.unreadCount == 5)
        let assignments = MessagesState(messages, filter: .tripAssignments, now: Self.now, calendar: Self.calendar)
        #expect(assignments.sections.flatMap(\.rows).map(\.notification.title) == ["hours", "saturday"])
        let changes = MessagesState(messages, filter: .statusChanges, now: Self.now, calendar: Self.calendar)
        #expect(changes.sections.map(\.title) == ["Today"])
        #expect(MessagesState([], filter: .all, now: Self.now, calendar: Self.calendar).isEmpty)
    }

    @Test("tapping a message leads where tapping its push does: an assignment to the trip, a status change to the order")
    func messageDestinations() {
        let trip = ID<Trip>(), order = ID<Order>()
        // "New order O-5001 on trip T-1002": the trip, as its push opens it (seed 003).
        #expect(Self.message("a", "2026-02-11T20:00:00Z", type: .tripAssignment, trip: trip, order: order).destination == .trip(trip))
        #expect(Self.message("b", "2026-02-11T20:00:00Z", type: .statusChange, trip: trip, order: order).destination == .order(order, trip: trip))
        #expect(Self.message("c", "2026-02-11T20:00:00Z", type: .urgent, trip: trip).destination == .alert(title: "c", body: "body of c"))
        #expect(Self.message("d", "2026-02-11T20:00:00Z", trip: trip).destination == .inline)  // a dispatch message reads in Messages
        for message in [Self.message("e", "2026-02-11T20:00:00Z", type: .tripAssignment, trip: trip, order: order),
                        Self.message("f", "2026-02-11T20:00:00Z", type: .statusChange, trip: trip, order: order)] {
            let push = NotificationDestination(message)
            switch (message.destination, push) {
            case (.trip(let a), .trip(let b)): #expect(a == b)
            case (.order(let a, _), .order(let b)): #expect(a == b)
            default: Issue.record("\(message.type): the message opens \(message.destination), its push \(push)")
            }
        }
    }

    @Test("banners: offline, the first download's loading message, an error that says why")
    func banners() {
        let offline = BannerState(status: SyncStatusSnapshot(isOnline: false, isSyncing: false, lastError: "x", lastSyncedAt: nil))
        #expect(offline.offline == "You're offline — showing cached data" && offline.error == nil)
        let first = BannerState(status: SyncStatusSnapshot(isOnline: true, isSyncing: true, lastError: nil, lastSyncedAt: nil))
        #expect(first.loading == "Loading your trips…")
        let later = BannerState(status: SyncStatusSnapshot(isOnline: true, isSyncing: true, lastError: nil, lastSyncedAt: Self.now))
        #expect(later.loading == nil)                                   // a routine sync shows nothing
        let failing = BannerState(status: SyncStatusSnapshot(isOnline: true, isSyncing: false, lastError: "The server is busy.", lastSyncedAt: Self.now))
        #expect(failing.error == "Couldn't sync: The server is busy.")
    }

    @Test("home: the trip on the road; the next stop is the one due first, a vehicle on the truck first on the same terms")
    func home() {
        let today = LocalDate(Self.now)
        func trip(_ number: String, _ status: TripStatus, start: Int) -> Trip {
            Trip(id: ID(), number: number, driverID: ID(), status: status, startDate: today.adding(days: start), endDate: nil,
                 origin: "A", destination: "B", revenueCents: 100, driverPayCents: 25, miles: 10, version: 1, createdAt: Self.now, updatedAt: Self.now)
        }
        let rolling = trip("T-2", .inProgress, start: -1)
        let next = trip("T-3", .planned, start: 2)
        func order(_ number: String, _ status: OrderStatus, on trip: Trip, eta: TimeInterval? = nil) -> Order {
            Order(id: ID(), number: number, tripID: trip.id, driverID: trip.driverID, vehicle: Vehicle(make: "Kia"),
                  pickup: Stop(address: "P \(number)"), delivery: Stop(address: "D \(number)"), status: status,
                  actualPickupDate: nil, actualDeliveryDate: nil, pickupETA: eta.map { Self.now.addingTimeInterval($0) },
                  deliveryETA: eta.map { Self.now.addingTimeInterval($0) }, revenueCents: 1, paymentTerms: "", version: 1,
                  createdAt: Self.now, updatedAt: Self.now)
        }
        let orders = [order("O-1", .assigned, on: rolling, eta: 600), order("O-2", .pickedUp, on: rolling, eta: 7200),
                      order("O-3", .pickedUp, on: rolling, eta: 3600), order("O-9", .assigned, on: next)]
        let state = HomeState(driver: nil, trips: [next, trip("T-1", .completed, start: -9), rolling], orders: orders, today: today)
        #expect(state.currentTrip?.number == "T-2")
        // The pickup expected in 10 minutes comes before the deliveries expected in one and two hours.
        #expect(state.nextStop?.kind == .pickup)
        #expect(state.nextStop?.order.number == "O-1")
        let laterPickup = [order("O-1", .assigned, on: rolling, eta: 5400)] + orders.dropFirst()
        let deliveryFirst = HomeState(driver: nil, trips: [rolling], orders: laterPickup, today: today)
        #expect(deliveryFirst.nextStop?.kind == .delivery && deliveryFirst.nextStop?.order.number == "O-3")
        #expect(state.upcomingTrips.map(\.number) == ["T-3"])
        let onlyPlanned = HomeState(driver: nil, trips: [next], orders: orders, today: today)
        #expect(onlyPlanned.currentTrip?.number == "T-3")
        #expect(onlyPlanned.nextStop?.order.number == "O-9")
    }

    @Test("earnings: pay per completed trip, per week and per month")
    func earnings() {
        // Completed at noon on the day given (a completed trip's last change is its completion).
        func trip(_ number: String, _ status: TripStatus, end: String, pay: Int, completed: String? = nil) -> Trip {
            Trip(id: ID(), number: number, driverID: ID(), status: status, startDate: LocalDate(end), endDate: LocalDate(end),
                 origin: "A", destination: "B", revenueCents: pay * 4, driverPayCents: pay, miles: 10, version: 1,
                 createdAt: Self.now, updatedAt: LocalDate(completed ?? end)!.startOfDay.addingTimeInterval(12 * 3600))
        }
        let trips = [trip("T-1", .completed, end: "2026-02-10", pay: 120_000), trip("T-2", .completed, end: "2026-02-09", pay: 80_000),
                     trip("T-3", .completed, end: "2026-02-03", pay: 50_000), trip("T-4", .completed, end: "2026-01-28", pay: 70_000),
                     // Planned to end in January, completed (and paid) in February's second week.
                     trip("T-7", .completed, end: "2026-01-20", pay: 10_000, completed: "2026-02-09"),
                     trip("T-5", .inProgress, end: "2026-02-12", pay: 99_000), trip("T-6", .cancelled, end: "2026-02-01", pay: 1)]
        let expenses = [Expense(id: ID(), tripID: trips[0].id, driverID: nil, category: .fuel, amountCents: 4_000,
                                date: LocalDate("2026-02-10")!, notes: "", createdAt: Self.now)]
        let state = EarningsState(trips: trips, expenses: expenses, calendar: Self.calendar)
        #expect(state.completed.map(\.trip.number) == ["T-1", "T-7", "T-2", "T-3", "T-4"])
        #expect(state.completed[0].expensesCents == 4_000)
        #expect(state.totalCents == 330_000)
        #expect(state.upcomingPayCents == 99_000)
        #expect(state.weeks.map(\.title) == ["Week of Feb 8", "Week of Feb 1", "Week of Jan 25"])
        #expect(state.weeks.map(\.payCents) == [210_000, 50_000, 70_000])
        #expect(state.months.map(\.title) == ["Feb 2026", "Jan 2026"])
        #expect(state.months.map(\.payCents) == [260_000, 70_000])
        #expect(MoneyFormat.dollars(123_456_78) == "$123,456.78")
        #expect(MoneyFormat.dollars(5) == "$0.05")
    }

    @Test("backoff: 5 s, 10 s, 20 s, 40 s … capped at 15 minutes, spread ±20 %")
    func backoff() {
        let schedule = (1...10).map { Backoff.outbox.delay(afterFailures: $0, random: 0.5) }
        #expect(schedule == [5, 10, 20, 40, 80, 160, 320, 640, 900, 900])
        #expect(Backoff.outbox.delay(afterFailures: 3, random: 0) == 16)
        #expect(Backoff.outbox.delay(afterFailures: 3, random: 1) == 24)
        #expect(Backoff.outbox.delay(afterFailures: 40, random: 1) == 900)
    }
}
