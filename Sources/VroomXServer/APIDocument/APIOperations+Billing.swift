import Foundation
import VroomXModels

extension APIOperation {
    static var billing: [APIOperation] { [
        APIOperation(.dispatchInvoices, .billing, "The carrier's invoices, newest first",
                     details: "status and customer_id narrow the list. A delivered order with a customer prepares a draft by itself.",
                     answer: .list(Invoice.self), refusals: [400: "invalid_parameter"]),
        APIOperation(.dispatchCreateInvoice, .billing, "A draft invoice for delivered orders of one customer",
                     details: "A line per vehicle at its price, then the charges given (detention, dry_run, fuel_surcharge; other may be negative: a discount). Terms default to the first order's, then the customer's payment terms, then Net 30; the date to today. At most \(InvoiceRules.ordersPerInvoice) orders and \(InvoiceRules.chargesPerInvoice) charges.",
                     body: .json(CreateInvoiceRequest.self),
                     answer: .created(Invoice.self),
                     refusals: [
                         409: "already_exists (field order_ids): an order is on another invoice (void it to bill the order again)",
                         422: "validation_failed: an order not delivered, another carrier's, of another customer or with none; a charge out of range"
                     ]),
        APIOperation(.dispatchInvoice, .billing, "An invoice and the payments recorded against it",
                     answer: .ok(InvoiceDetail.self),
                     refusals: [404: "not_found (also for another carrier's invoice)"]),
        APIOperation(.dispatchUpdateInvoice, .billing, "Edit a draft: its orders, charges, terms, date, notes",
                     details: "order_ids and charges replace the lists; vehicle lines follow the orders. With base_version, a draft changed since is 409 conflict.",
                     body: .json(UpdateInvoiceRequest.self),
                     answer: .ok(Invoice.self),
                     refusals: [
                         404: "not_found",
                         409: "invalid_transition (field status): the invoice was sent; conflict (field base_version); already_exists (field order_ids)"
                     ]),
        APIOperation(.dispatchSendInvoice, .billing, "Send an invoice (a draft takes the carrier's next number)",
                     details: "With email (the default) the invoice PDF and each order's bill of lading go to the customer's email, once per send; a send still on its way is not doubled. email: false only marks it sent. Sending a sent invoice emails it again.",
                     body: .optionalJSON(SendInvoiceRequest.self),
                     answer: .ok(Invoice.self),
                     refusals: [
                         404: "not_found",
                         409: "invalid_transition: the invoice is void",
                         422: "validation_failed: field email (the customer has no email address), order_ids (an order is no longer delivered), lines (nothing to bill)"
                     ]),
        APIOperation(.dispatchVoidInvoice, .billing, "Void an invoice, with the reason",
                     details: "The number stays taken; its orders may be invoiced again. Voiding a void invoice changes nothing.",
                     body: .json(VoidInvoiceRequest.self),
                     answer: .ok(Invoice.self),
                     refusals: [404: "not_found", 409: "invalid_transition: payments were recorded against it (remove them first)"]),
        APIOperation(.dispatchInvoicePDF, .billing, "The invoice as a PDF",
                     details: "The carrier (or, while it factors, the factoring company to remit to, with the notice of assignment), the customer billed, the lines, payments, and the balance due.",
                     answer: Answer(200, "The PDF", .file),
                     refusals: [404: "not_found"]),
        APIOperation(.dispatchRecordPayment, .billing, "Record money received against an invoice",
                     details: "The status follows what was paid: partly_paid, then paid (more than the total is a credit shown as a negative balance). id is yours: sending the same payment again records it once. received_on defaults to today.",
                     body: .json(RecordPaymentRequest.self),
                     answer: .created(InvoiceDetail.self),
                     refusals: [
                         404: "not_found",
                         409: "invalid_transition: a draft (send it first) or void invoice; idempotency_key_reused: a different payment has this id; conflict: the invoice has its 100 payments",
                         422: "validation_failed: amount_cents, received_on (not yet come, or over ten years ago), reference, note"
                     ]),
        APIOperation(.dispatchRemovePayment, .billing, "Take off a payment recorded by mistake",
                     answer: .ok(InvoiceDetail.self),
                     refusals: [404: "not_found: no such invoice or payment on it"]),
        APIOperation(.dispatchDepositPayment, .billing, "Mark money a driver collected as deposited",
                     details: "deposited_on defaults to today; it is not before the day it was collected. The payment is then no longer pending deposit.",
                     body: .json(DepositPaymentRequest.self),
                     answer: .ok(InvoiceDetail.self),
                     refusals: [
                         404: "not_found: no such invoice or payment on it",
                         409: "invalid_transition: the payment was received by dispatch, not collected by a driver",
                         422: "validation_failed: deposited_on"
                     ]),
        APIOperation(.dispatchPaymentPhoto, .billing, "Download the photo of a check or cash receipt a driver collected (Range supported)",
                     answer: Answer(200, "The file", .file),
                     refusals: [404: "not_found"]),
        APIOperation(.dispatchReceivables, .billing, "What each customer owes, by how late",
                     details: "Open invoices' balances per customer in columns current (not yet due), 1–30, 31–60, 61–90 and over 90 days past due, figured on as_of (today when not given). Largest total first.",
                     answer: .ok(ReceivablesReport.self)),
        APIOperation(.dispatchInvoicesExport, .billing, "Invoices dated in a period, as QuickBooks Online imports them (CSV)",
                     details: "One row per line with columns \(Receivables.invoiceColumns.joined(separator: ", ")); dates MM/DD/YYYY. from and to default to this month; at most 550 days. Void invoices are left out.",
                     answer: Answer(200, "The CSV file", .file),
                     refusals: [422: "validation_failed: to before from, or a period over 550 days"]),
        APIOperation(.dispatchPaymentsExport, .billing, "Payments received in a period (CSV)",
                     details: "Columns \(Receivables.paymentColumns.joined(separator: ", ")). from and to default to this month; at most 550 days.",
                     answer: Answer(200, "The CSV file", .file),
                     refusals: [422: "validation_failed: to before from, or a period over 550 days"]),
    ] }
}
