import Foundation
import VroomXModels

/// The customer list: a search box and one page of customers.
struct CustomersView: ConsoleView {
    struct Row: ConsoleView {
        let id: String
        let name: String
        let kind: String
        let contact: String
        let email: String
        let phone: String
        let open: String
        let delivered: String
        let revenue: String
    }

    let q: String
    let customers: [Row]
    let empty: Bool
    /// No customer at all (rather than none matching the search).
    let none: Bool
    let pager: ConsolePagerView?
    let imported: String
}

/// One customer: who they are, what they have booked and earned.
struct CustomerView: ConsoleView {
    let id: String
    let name: String
    let kind: String
    let billingContact: String
    let email: String
    let phone: String
    let address: String
    let paymentTerms: String
    let notes: String
    let notice: String
    let openCount: String
    let deliveredCount: String
    let cancelledCount: String
    let deliveredRevenue: String
    let openRevenue: String
    let lastOrder: TimeView?
    let openOrders: [OrderRowView]
    let pastOrders: [OrderRowView]
    let hasOpen: Bool
    let hasPast: Bool
    /// The past orders shown are the latest of more.
    let morePast: String
    /// Their invoices still owed, and what they come to.
    let openInvoices: [InvoiceRowView]
    let hasOpenInvoices: Bool
    let owed: String
    /// Delivered orders of theirs no invoice bills yet.
    let readyToInvoice: String
}

/// The form for a new customer or a customer's edit.
struct CustomerFormView: ConsoleView {
    let editing: Bool
    let customerID: String
    let heading: String
    let v: [String: String]
    let e: [String: String]
    let hasErrors: Bool
    let kinds: [ChoiceView]
    /// What the edit form was filled with, carried through it (`EditConflict`).
    let originals: [HiddenField]
}
