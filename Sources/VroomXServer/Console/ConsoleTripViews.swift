import Foundation
import VroomXModels

/// A trip as a line of the trips list, and the head of its own page.
struct TripRowView: ConsoleView {
    let id: String
    let number: String
    let driver: String
    let unassigned: Bool
    let route: String
    let origin: String
    let destination: String
    let dates: String
    let status: String
    let statusLabel: String
    let orders: Int
    let revenue: String
    let pay: String
    /// "—" when nobody gave the trip's miles (kept as 0).
    let miles: String
    let hasMiles: Bool

    init(_ trip: Trip, driver: Driver?, orders: Int) {
        id = trip.id.rawValue
        number = trip.number
        self.driver = driver?.name ?? "Unassigned"
        unassigned = driver == nil
        route = "\(trip.origin) → \(trip.destination)"
        origin = trip.origin
        destination = trip.destination
        dates = DayFormat.span(trip.startDate, trip.endDate) ?? ""
        status = trip.status.rawValue
        statusLabel = trip.status.title
        self.orders = orders
        revenue = ConsoleFormat.money(trip.revenueCents)
        pay = ConsoleFormat.money(trip.driverPayCents)
        miles = trip.miles > 0 ? ConsoleFormat.grouped(trip.miles) : "—"
        hasMiles = trip.miles > 0
    }
}

struct TripsPageView: ConsoleView {
    /// Under way, then planned: one page.
    let open: [TripRowView]
    /// Completed and cancelled, newest first: one page.
    let finished: [TripRowView]
    let noOpen: Bool
    let noFinished: Bool
    let empty: Bool
    let openPager: ConsolePagerView?
    /// The finished trips' pager.
    let pager: ConsolePagerView?
}

/// One trip: its head (`row`, whose keys the page answers too), its
/// orders, what it can become, its expenses and figures.
struct TripPageView: ConsoleView {
    struct OpenOrder: ConsoleView {
        let id: String
        let label: String
        /// The one order a search found: chosen already.
        let selected: Bool
    }

    struct StatusAction: ConsoleView {
        let status: String
        let label: String
        let danger: Bool
        /// The step the trip is waiting for (completing it once every vehicle is delivered).
        let primary: Bool
        /// What the browser asks before the change (nil: nothing).
        let confirm: String?
    }

    struct ExpenseCategory: ConsoleView {
        let category: String
        let amount: String
        let count: String
    }

    struct ExpenseLine: ConsoleView {
        let id: String
        let date: String
        let category: String
        let amount: String
        let notes: String
        let by: String
        /// Links to the receipt photos, each with its removal.
        let receipts: [ReceiptLink]
        /// Room for another receipt photo, and where it goes.
        let canAddReceipt: Bool
        let receiptUploadURL: String
    }

    struct ReceiptLink: ConsoleView {
        let url: String
        let removeURL: String
        let label: String
    }

    let row: TripRowView
    /// How many vehicles the trip still carries, against the trailer's capacity.
    let load: String
    let overCapacity: Bool
    let orderRows: [OrderRowView]
    let noOrders: Bool
    let openOrders: [OpenOrder]
    let hasOpenOrders: Bool
    /// What the add-order search looked for, what it found, and whether it ran past its deadline.
    let addSearch: String
    let addNote: String
    let addTooSlow: Bool
    let offersAdding: Bool
    let drivers: [OptionView]
    let isOpen: Bool
    let statusNote: String?
    let statusActions: [StatusAction]
    let expensePager: ConsolePagerView?
    let expenseCategories: [ExpenseCategory]
    let expenses: [ExpenseLine]
    let noExpenses: Bool
    let expenseTotal: String
    let ordersRevenue: String
    /// Dispatch typed the revenue: the page offers to let it follow the orders again.
    let revenueByHand: Bool
    let net: String
    let perMile: String
    let e: [String: String]
    let notice: String
    let headsUp: [String]
    let hasHeadsUp: Bool

    var fallback: (any ConsoleView)? { row }
}

struct TripFormView: ConsoleView {
    let editing: Bool
    let tripID: String
    let savedNumber: String
    let v: [String: String]
    let e: [String: String]
    let hasErrors: Bool
    let originals: [HiddenField]
    let drivers: [OptionView]
}
