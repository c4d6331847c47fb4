import Foundation
import VroomXModels

/// Getting paid: an invoice prepared for each delivered order with a
/// customer, drafts a dispatcher edits (more orders of the customer,
/// charges, terms), sending (a number from the carrier's sequence, the PDF
/// emailed once per send), voiding, and payments that settle it. The
/// policy and the transactions; the SQL is `InvoiceRepository`'s, the
/// money rules `InvoiceRules`.
public struct InvoiceService: Sendable {
    let store: Store

    // MARK: Reads

    public func documents(tenant: ID<Tenant>, status: InvoiceStatus? = nil, customer: ID<Customer>? = nil,
                          page: PageRequest = .init()) async throws -> DocumentPage {
        try await store.read { try await InvoiceRepository.documents(tenant: tenant, status: status, customer: customer, page, $0) }
    }

    public func invoice(_ id: ID<Invoice>, tenant: ID<Tenant>) async throws -> Invoice {
        guard let invoice = try await store.read({ try await InvoiceRepository.find(id, tenant: tenant, $0) }) else {
            throw AppError.notFound("Invoice")
        }
        return invoice
    }

    public func detail(_ id: ID<Invoice>, tenant: ID<Tenant>) async throws -> InvoiceDetail {
        try await store.read { db in
            guard let invoice = try await InvoiceRepository.find(id, tenant: tenant, db) else { throw AppError.notFound("Invoice") }
            return InvoiceDetail(invoice: invoice, payments: try await InvoiceRepository.payments(of: id, tenant: tenant, db))
        }
    }

    /// Money drivers collected and dispatch has not banked yet, oldest first (at most 500), with its invoice.
    func pendingDeposits(tenant: ID<Tenant>) async throws -> [(payment: InvoicePayment, invoice: Invoice)] {
        try await store.read { try await InvoiceRepository.pendingDeposits(tenant: tenant, limit: 500, $0) }.map { (payment: $0.0, invoice: $0.1) }
    }

    func emails(of id: ID<Invoice>, tenant: ID<Tenant>) async throws -> [QueuedMailRepository.Entry] {
        try await store.read { try await QueuedMailRepository.invoices.of(id.rawValue, tenant: tenant, $0) }
    }

    func page(status: InvoiceStatus?, customer: ID<Customer>?, offset: Int, limit: Int, tenant: ID<Tenant>) async throws -> [Invoice] {
        try await store.read { try await InvoiceRepository.page(tenant: tenant, status: status, customer: customer, offset: offset, limit: limit, $0) }
    }

    func counts(customer: ID<Customer>?, tenant: ID<Tenant>) async throws -> [InvoiceStatus: Int] {
        try await store.read { try await InvoiceRepository.counts(tenant: tenant, customer: customer, $0) }
    }

    /// The invoice each order is on (void invoices free their orders).
    func invoices(ofOrders orders: [ID<Order>], tenant: ID<Tenant>) async throws -> [ID<Order>: ID<Invoice>] {
        try await store.read { try await InvoiceRepository.invoices(ofOrders: orders, tenant: tenant, $0) }
    }

    /// A customer's delivered orders an invoice may bill: on no invoice, or on a draft other than `except` (they move).
    func billable(customer: ID<Customer>, except: ID<Invoice>?, tenant: ID<Tenant>) async throws -> [(order: Order, onDraft: Bool)] {
        try await store.read { db in
            var orders: [(Order, Bool)] = []
            for (id, onDraft) in try await InvoiceRepository.billable(customer: customer, except: except, tenant: tenant, db) {
                if let order = try await OrderRepository.find(id, .dispatch(tenant: tenant), db) { orders.append((order, onDraft)) }
            }
            return orders
        }
    }

    /// Delivered orders with a customer that no invoice bills yet (a customer's alone when given).
    func uninvoiced(customer: ID<Customer>? = nil, limit: Int = 200, tenant: ID<Tenant>) async throws -> [Order] {
        try await store.read { db in
            var orders: [Order] = []
            for id in try await InvoiceRepository.uninvoiced(customer: customer, tenant: tenant, limit: limit, db) {
                if let order = try await OrderRepository.find(id, .dispatch(tenant: tenant), db) { orders.append(order) }
            }
            return orders
        }
    }

    // MARK: Drafts

    /// The draft a delivery prepares: the order's vehicles at their prices,
    /// on the order's terms (or its customer's). Nothing when the order
    /// names no customer or an invoice bills it already. Money collected at
    /// pickup (COP) prepares it then (`beforeDelivery`). Returns the draft made.
    @discardableResult
    func prepare(for order: Order, beforeDelivery: Bool = false, _ tx: TenantTransaction) async throws -> ID<Invoice>? {
        guard order.isBillable || beforeDelivery, let customerID = order.customerID,
              try await InvoiceRepository.invoices(ofOrders: [order.id], tenant: tx.tenant, tx.db).isEmpty,
              let customer = try await CustomerRepository.find(customerID, tenant: tx.tenant, tx.db) else { return nil }
        let terms = PaymentTerms(text: order.paymentTerms) ?? PaymentTerms(text: customer.paymentTerms) ?? .net30
        // Detention and a dry run known by now are billed with the vehicles; dispatch reviews the draft before it goes.
        let stopTerms = (try await CarrierProfileRepository.find(tenant: tx.tenant, tx.db) ?? CarrierProfile()).stopChargeTerms
        let invoice = Invoice(id: ID(), customerID: customer.id, customerName: customer.name, orders: [Self.invoiced(order)],
                              lines: InvoiceRules.vehicleLines(of: order) + order.stopCharges(terms: stopTerms), terms: terms, issuedOn: LocalDate(tx.now), createdAt: tx.now,
                              updatedAt: tx.now)
        try await InvoiceRepository.insert(invoice, sequence: nil, tx)
        return invoice.id
    }

    public func create(_ request: CreateInvoiceRequest, tenant: ID<Tenant>) async throws -> Invoice {
        let charges = try Self.checked(request.charges ?? [])
        let notes = try Validate.text(request.notes ?? "", FieldLimits.invoiceNotes)
        return try await store.write(tenant: tenant) { tx in
            let (customer, orders, carried) = try await billable(request.orderIDs, invoice: nil, tx)
            let issuedOn = try Self.checked(issuedOn: request.issuedOn ?? LocalDate(tx.now), now: tx.now)
            let terms = request.terms ?? PaymentTerms(text: orders[0].paymentTerms) ?? PaymentTerms(text: customer.paymentTerms) ?? .net30
            var lines = orders.flatMap(InvoiceRules.vehicleLines) + (try Self.joined(charges, carried))
            if request.stopCharges == true {
                let stopTerms = (try await CarrierProfileRepository.find(tenant: tx.tenant, tx.db) ?? CarrierProfile()).stopChargeTerms
                let stops = InvoiceRules.newStopCharges(of: orders, terms: stopTerms, besides: lines)
                guard lines.filter({ $0.kind != .vehicle }).count + stops.count <= InvoiceRules.chargesPerInvoice else {
                    throw AppError.validation("stop_charges", "These orders' detention and dry runs come to \(stops.count) charges beside the "
                                              + "others; an invoice takes at most \(InvoiceRules.chargesPerInvoice): bill some orders on another invoice.")
                }
                lines += stops
            }
            let invoice = Invoice(id: ID(), customerID: customer.id, customerName: customer.name, orders: orders.map(Self.invoiced),
                                  lines: lines, terms: terms,
                                  issuedOn: issuedOn, notes: notes, createdAt: tx.now, updatedAt: tx.now)
            try await InvoiceRepository.insert(invoice, sequence: nil, tx)
            return invoice
        }
    }

    /// Changes a draft: its orders (all the customer's, delivered, on no
    /// other invoice), charges, terms, date and notes.
    public func update(_ id: ID<Invoice>, _ request: UpdateInvoiceRequest, tenant: ID<Tenant>) async throws -> Invoice {
        let charges = try request.charges.map(Self.checked)
        let notes = try request.notes.map { try Validate.text($0, FieldLimits.invoiceNotes) }
        return try await store.write(tenant: tenant) { tx in
            let current = try await locked(id, tx)
            if let base = request.baseVersion {
                try Validate.baseVersion(base, current: current.version)
                if base < current.version {
                    throw AppError(409, .conflict, "Someone else changed this invoice since version \(base); it is now version \(current.version).",
                                   field: "base_version")
                }
            }
            guard current.status == .draft else {
                throw AppError(409, .invalidTransition, current.status == .void ? "This invoice is void: make a new one."
                               : "Invoice \(current.number ?? "") was sent: void it and make a new one to change what it bills.", field: "status")
            }
            var edited = current
            let (_, orders, carried) = try await billable(request.orderIDs ?? current.orders.map(\.id), invoice: current, tx)
            // Money a driver collected for an order stays with that order's invoice.
            for dropped in current.orders where !orders.contains(where: { $0.id == dropped.id }) {
                let collected = try await InvoiceRepository.collections(forOrder: dropped.id, tx).reduce(0) { $0 + $1.amountCents }
                guard collected == 0 else {
                    throw AppError(409, .conflict, "Its driver collected \(MoneyFormat.dollars(collected)) for order \(dropped.number) on this draft: "
                                   + "the order stays on it (remove the collection first).", field: "order_ids")
                }
            }
            edited.orders = orders.map(Self.invoiced)
            edited.lines = orders.flatMap(InvoiceRules.vehicleLines) + (try Self.joined(charges ?? current.lines.filter { $0.kind != .vehicle }, carried))
            if let terms = request.terms { edited.terms = terms }
            if let issuedOn = request.issuedOn { edited.issuedOn = try Self.checked(issuedOn: issuedOn, now: tx.now) }
            if let notes { edited.notes = notes }
            return try await save(Self.settled(edited), from: current, tx)
        }
    }

    // MARK: Sending and voiding

    /// Sends an invoice: a draft takes the carrier's next number and its
    /// lines as its orders stand now; with `email` the PDF goes to the
    /// customer's email (once per send; a send already on its way is not
    /// doubled). Without it, the invoice is only marked sent (handed over
    /// another way, such as a broker's portal).
    public func send(_ id: ID<Invoice>, email: Bool, tenant: ID<Tenant>) async throws -> Invoice {
        try await store.write(tenant: tenant) { tx in
            let current = try await locked(id, tx)
            guard current.status != .void else {
                throw AppError(409, .invalidTransition, "A void invoice is not sent.", field: "status")
            }
            var edited = current
            var sequence: Int?
            if current.status == .draft {
                let orders = try await billable(current.orders.map(\.id), invoice: current, tx).orders  // its own: nothing carried
                edited.orders = orders.map(Self.invoiced)
                edited.lines = orders.flatMap(InvoiceRules.vehicleLines) + current.lines.filter { $0.kind != .vehicle }
                edited = Self.settled(edited)
                guard edited.totalCents > 0 else {
                    throw AppError.validation("lines", "The invoice comes to \(MoneyFormat.dollars(edited.totalCents)): there is nothing to bill.")
                }
                let next = try await InvoiceRepository.nextSequence(tx)
                sequence = next
                edited.factoring = try await CarrierProfileRepository.find(tenant: tx.tenant, tx.db)?.invoiceFactoring
                edited.number = InvoiceRules.number(next)
                edited.status = InvoiceRules.status(totalCents: edited.totalCents, paidCents: edited.paidCents)
            }
            if email {
                guard let customer = try await CustomerRepository.find(current.customerID, tenant: tenant, tx.db), !customer.email.isEmpty else {
                    throw AppError.validation("email", "\(current.customerName) has no email address: add one on the customer's page, or mark the invoice sent.")
                }
                let waiting = try await QueuedMailRepository.invoices.of(id.rawValue, tenant: tenant, tx.db).contains(where: \.isWaiting)
                if !waiting { try await QueuedMailRepository.invoices.enqueue(id.rawValue, recipient: customer.email, tx) }
                edited.sentAt = tx.now
            }
            guard edited != current else { return current }
            return try await save(edited, from: current, sequence: sequence, tx)
        }
    }

    /// Voids an invoice, keeping its number and why; its orders can be
    /// invoiced again. One with payments recorded is refused: remove them
    /// first. A draft (no number yet) is thrown away: the answer is it, void.
    public func void(_ id: ID<Invoice>, reason: String, tenant: ID<Tenant>) async throws -> Invoice {
        let reason = try Validate.text(reason, FieldLimits.voidReason)
        return try await store.write(tenant: tenant) { tx in
            let current = try await locked(id, tx)
            guard current.status != .void else { return current }
            guard current.paidCents == 0 else {
                throw AppError(409, .invalidTransition,
                               "\(MoneyFormat.dollars(current.paidCents)) was paid against this invoice: remove the payments before voiding it.",
                               field: "status")
            }
            var edited = current
            edited.status = .void
            edited.voidReason = reason
            if current.status == .draft { return try await discard(edited, from: current, tx) }
            return try await save(edited, from: current, tx)
        }
    }

    // MARK: Payments

    /// Records money received. The payment's `id` (the client's) makes a
    /// repeated request one payment; two dispatchers recording at once are
    /// counted one after the other (the invoice's row is locked, what was
    /// paid is summed in the transaction). Paying more than is owed leaves
    /// a credit.
    public func recordPayment(_ id: ID<Invoice>, _ request: RecordPaymentRequest, tenant: ID<Tenant>) async throws -> InvoiceDetail {
        if let refusal = InvoiceRules.paymentProblem(amountCents: request.amountCents) { throw AppError(refusal) }
        let reference = try Validate.line(request.reference ?? "", FieldLimits.paymentReference)
        let note = try Validate.text(request.note ?? "", FieldLimits.paymentNote)
        let paymentID = request.id ?? ID()
        try await store.write(tenant: tenant) { tx in
            let current = try await locked(id, tx)
            // The same payment sent again (a lost answer, a double click) is the one recorded, even when it was removed since.
            if let earlier = try await InvoiceRepository.payment(paymentID, tenant: tenant, includingRemoved: true, tx.db) {
                guard earlier.invoiceID == id, earlier.amountCents == request.amountCents, earlier.method == request.method else {
                    throw Self.paymentIDTaken
                }
                return
            }
            switch current.status {
            case .draft:
                throw AppError(409, .invalidTransition, "Send the invoice (or mark it sent) before recording a payment against it.", field: "status")
            case .void:
                throw AppError(409, .invalidTransition, "This invoice is void: record the payment against the invoice that replaced it.",
                               field: "status")
            case .sent, .partlyPaid, .paid:
                break
            }
            guard try await InvoiceRepository.paymentCount(id, tx) < InvoiceRules.paymentsPerInvoice else {
                throw AppError(409, .conflict, "This invoice has \(InvoiceRules.paymentsPerInvoice) payments recorded, the most one takes.", field: "id")
            }
            let receivedOn = try Self.checked(receivedOn: request.receivedOn ?? LocalDate(tx.now), now: tx.now, field: "received_on")
            let recordedBy = try await tx.actingUser.asyncMap { try await AccountRepository.user($0, tenant: tenant, tx.db)?.email } ?? nil
            do {
                try await InvoiceRepository.insert(InvoicePayment(id: paymentID, invoiceID: id, amountCents: request.amountCents,
                                                                  method: request.method, reference: reference, receivedOn: receivedOn, note: note,
                                                                  recordedBy: recordedBy ?? "", createdAt: tx.now), tx)
            } catch DatabaseConstraintError.unique {
                throw Self.paymentIDTaken  // another carrier's: the same answer, so it tells nothing of them
            }
            _ = try await repaid(current, tx)
        }
        return try await detail(id, tenant: tenant)
    }

    static let paymentIDTaken = AppError(409, .idempotencyKeyReused, "A different payment was recorded with this id.", field: "id")

    /// Money a driver collected for an order of theirs, on delivery (COD)
    /// or at pickup (COP): a payment of the order's invoice (its draft is
    /// prepared if there is none yet), paid on collection and pending
    /// deposit until dispatch banks it. Sent again (the outbox, a lost
    /// answer), the same id is the same payment, also after it was removed.
    public func collect(_ request: CollectPaymentRequest, _ scope: Scope) async throws -> InvoicePayment {
        guard let driver = scope.driverID else { throw AppError.forbidden("A driver records the money they collected.") }
        if let refusal = InvoiceRules.paymentProblem(amountCents: request.amountCents) { throw AppError(refusal) }
        let reference = try Validate.line(request.reference ?? "", FieldLimits.paymentReference)
        return try await store.write(tenant: scope.tenant) { tx in
            // Sent again (the outbox, a lost answer): the payment it recorded, if the content is the same.
            func replayed() async throws -> InvoicePayment? {
                guard let earlier = try await InvoiceRepository.payment(request.id, tenant: scope.tenant, includingRemoved: true, tx.db) else {
                    return nil
                }
                guard earlier.collectedBy == driver, earlier.orderID == request.orderID, earlier.amountCents == request.amountCents,
                      earlier.method == request.method, earlier.reference == reference,
                      request.collectedOn == nil || request.collectedOn == earlier.receivedOn else { throw Self.paymentIDTaken }
                return earlier
            }
            if let earlier = try await replayed() { return earlier }
            guard let order = try await OrderRepository.find(request.orderID, scope, locking: true, tx.db) else { throw AppError.notFound("Order") }
            // The order's row is held: collections for it (a replay among them) are counted one after the other.
            if let earlier = try await replayed() { return earlier }
            guard order.status == .pickedUp || order.status == .delivered else {
                throw AppError(409, .invalidTransition, InvoiceRules.notCollectable(order), field: "order_id")
            }
            let earlier = try await InvoiceRepository.collections(forOrder: order.id, tx)
            guard earlier.count < InvoiceRules.collectionsPerOrder else {
                throw AppError(409, .conflict, "Order \(order.number) has \(InvoiceRules.collectionsPerOrder) collections recorded, the most one takes: ask dispatch.",
                               field: "id")
            }
            if let refusal = InvoiceRules.collectionProblem(amountCents: request.amountCents, method: request.method, order: order,
                                                            collectedCents: earlier.reduce(0) { $0 + $1.amountCents }) {
                throw AppError(refusal)
            }
            if !reference.isEmpty, earlier.contains(where: { $0.reference.lowercased() == reference.lowercased() }) {
                throw AppError(409, .alreadyExists, "\(request.method.label) \(reference) is recorded for order \(order.number) already.",
                               field: "reference")
            }
            guard order.customerID != nil else {
                throw AppError.validation("order_id", "Order \(order.number) names no customer to bill: ask dispatch to name one, then send this again.")
            }
            // Collected on a day already come, and not before the order was booked (a day's grace for time zones).
            let collectedOn = try Self.checked(receivedOn: request.collectedOn ?? LocalDate(tx.now), now: tx.now, field: "collected_on")
            guard collectedOn >= LocalDate(order.createdAt).adding(days: -1) else {
                throw AppError.validation("collected_on", "Order \(order.number) was booked on \(LocalDate(order.createdAt)): money for it is collected after that.")
            }
            var billed = try await InvoiceRepository.invoices(ofOrders: [order.id], tenant: tx.tenant, tx.db)[order.id]
            if billed == nil { billed = try await prepare(for: order, beforeDelivery: true, tx) }
            guard let id = billed else { throw AppError.notFound("Customer") }
            let current = try await locked(id, tx)
            guard try await InvoiceRepository.paymentCount(id, tx) < InvoiceRules.paymentsPerInvoice else {
                throw AppError(409, .conflict, "This order's invoice has \(InvoiceRules.paymentsPerInvoice) payments recorded, the most one takes.",
                               field: "id")
            }
            let name = try await DriverRepository.find(driver, tenant: tx.tenant, tx.db)?.name ?? ""
            let payment = InvoicePayment(id: request.id, invoiceID: id, amountCents: request.amountCents, method: request.method,
                                         reference: reference, receivedOn: collectedOn, recordedBy: name, collectedBy: driver, orderID: order.id,
                                         createdAt: tx.now)
            do {
                try await InvoiceRepository.insert(payment, tx)
            } catch DatabaseConstraintError.unique {
                throw Self.paymentIDTaken
            }
            _ = try await repaid(current, tx)
            return payment
        }
    }

    /// Dispatch banked money a driver collected (on `day`, today when not
    /// said, and never before it was collected). Marked again on the same
    /// day it is the same deposit; another day is refused.
    public func deposit(_ paymentID: ID<InvoicePayment>, of id: ID<Invoice>, on day: LocalDate?, tenant: ID<Tenant>) async throws -> InvoiceDetail {
        try await store.write(tenant: tenant) { tx in
            _ = try await locked(id, tx)
            guard let payment = try await InvoiceRepository.payment(paymentID, tenant: tenant, tx.db), payment.invoiceID == id else {
                throw AppError.notFound("Payment")
            }
            guard payment.collectedBy != nil else {
                throw AppError(409, .invalidTransition, "This payment was received, not collected by a driver: there is nothing to deposit.",
                               field: "payment")
            }
            let depositedOn = try Self.checked(receivedOn: day ?? max(LocalDate(tx.now), payment.receivedOn), now: tx.now, field: "deposited_on")
            guard depositedOn >= payment.receivedOn else {
                throw AppError.validation("deposited_on", "The money was collected on \(payment.receivedOn): it is deposited on that day or later.")
            }
            if let done = payment.depositedOn {
                guard done == depositedOn || day == nil else {
                    throw AppError(409, .invalidTransition, "This money was marked deposited on \(done) already.", field: "deposited_on")
                }
                return
            }
            try await InvoiceRepository.deposit(paymentID, on: depositedOn, tx)
        }
        return try await detail(id, tenant: tenant)
    }

    /// Takes off a payment recorded by mistake (kept, marked removed: the same payment sent again later is not recorded again).
    public func removePayment(_ paymentID: ID<InvoicePayment>, of id: ID<Invoice>, tenant: ID<Tenant>) async throws -> InvoiceDetail {
        try await store.write(tenant: tenant) { tx in
            let current = try await locked(id, tx)
            guard let payment = try await InvoiceRepository.payment(paymentID, tenant: tenant, tx.db), payment.invoiceID == id else {
                throw AppError.notFound("Payment")
            }
            try await InvoiceRepository.remove(payment.id, tx)
            _ = try await repaid(current, tx)
        }
        return try await detail(id, tenant: tenant)
    }

    /// The invoice with what was paid summed again from its payments.
    private func repaid(_ current: Invoice, _ tx: TenantTransaction) async throws -> Invoice {
        var edited = current
        edited.paidCents = try await InvoiceRepository.paid(current.id, tx)
        // A draft (money a driver collected before it was sent) stays one until it is sent.
        if current.status != .draft { edited.status = InvoiceRules.status(totalCents: edited.totalCents, paidCents: edited.paidCents) }
        return try await save(edited, from: current, tx)
    }

    // MARK: Rules

    private func locked(_ id: ID<Invoice>, _ tx: TenantTransaction) async throws -> Invoice {
        guard let invoice = try await InvoiceRepository.find(id, tenant: tx.tenant, locking: true, tx.db) else { throw AppError.notFound("Invoice") }
        return invoice
    }

    private func save(_ edited: Invoice, from current: Invoice, sequence: Int? = nil, _ tx: TenantTransaction) async throws -> Invoice {
        guard edited != current else { return current }
        var saved = edited
        saved.version = current.version + 1
        saved.updatedAt = tx.now
        do {
            try await InvoiceRepository.update(saved, from: current, sequence: sequence, tx)
        } catch DatabaseConstraintError.unique {
            throw AppError(409, .alreadyExists, "One of these orders was put on another invoice meanwhile.", field: "order_ids")
        }
        return saved
    }

    /// The orders an invoice may bill, in the order given: the carrier's,
    /// delivered, all of one customer, and on no other invoice.
    /// `carried`: the charges of drafts this emptied (they go with their orders).
    private func billable(_ ids: [ID<Order>], invoice: Invoice?, _ tx: TenantTransaction) async throws
        -> (customer: Customer, orders: [Order], carried: [InvoiceLine]) {
        guard !ids.isEmpty else { throw AppError.validation("order_ids", "An invoice bills at least one delivered order.") }
        guard ids.count <= InvoiceRules.ordersPerInvoice else {
            throw AppError.validation("order_ids", "An invoice bills at most \(InvoiceRules.ordersPerInvoice) orders.")
        }
        guard Set(ids).count == ids.count else { throw AppError.validation("order_ids", "An order is listed twice.") }
        var orders: [Order] = []
        for id in ids {
            guard let order = try await OrderRepository.find(id, .dispatch(tenant: tx.tenant), locking: true, tx.db) else {
                throw AppError.validation("order_ids", "An order in order_ids is not one of the carrier's.")
            }
            guard order.isBillable else {
                throw AppError.validation("order_ids", "Order \(order.number) is \(order.status.label): an invoice bills delivered orders "
                                          + "(and cancelled ones after a dry run).")
            }
            orders.append(order)
        }
        let customers = Set(orders.compactMap(\.customerID))
        guard let customerID = orders[0].customerID, customers.count == 1, orders.allSatisfy({ $0.customerID != nil }) else {
            throw AppError.validation("order_ids", orders.contains { $0.customerID == nil }
                                      ? "Order \(orders.first { $0.customerID == nil }?.number ?? "") names no customer: name who pays for it first."
                                      : "These orders are for different customers: an invoice bills one customer.")
        }
        if let invoice, invoice.customerID != customerID {
            throw AppError.validation("order_ids", "This invoice bills \(invoice.customerName): add only their orders.")
        }
        // An order on another draft moves to this invoice; one on a sent invoice stays there.
        var carried: [InvoiceLine] = []
        for (order, other) in try await InvoiceRepository.invoices(ofOrders: ids, tenant: tx.tenant, tx.db) where other != invoice?.id {
            guard let holder = try await InvoiceRepository.find(other, tenant: tx.tenant, locking: true, tx.db) else { continue }
            let name = orders.first { $0.id == order }?.number ?? ""
            guard holder.status == .draft else {
                throw AppError(409, .alreadyExists, "Order \(name) is on invoice \(holder.number ?? "") already: void that invoice to bill it again.",
                               field: "order_ids")
            }
            // Money collected against a draft stays with it: the draft is sent as it is.
            guard holder.paidCents == 0 else {
                throw AppError(409, .alreadyExists,
                               "Order \(name) is on a draft with \(MoneyFormat.dollars(holder.paidCents)) collected: send that draft to bill it.",
                               field: "order_ids")
            }
            carried += try await release(order, from: holder, tx)
        }
        guard let customer = try await CustomerRepository.find(customerID, tenant: tx.tenant, tx.db) else { throw AppError.notFound("Customer") }
        return (customer, orders, carried)
    }

    /// Takes an order off a draft. A draft left with no order goes (it has
    /// no number to keep); its charges are returned, to go with the order.
    private func release(_ order: ID<Order>, from draft: Invoice, _ tx: TenantTransaction) async throws -> [InvoiceLine] {
        var edited = draft
        // The order's own charges (its detention, a dry run) go with it.
        let own = draft.lines.filter { $0.orderID == order && $0.kind != .vehicle }
        edited.orders.removeAll { $0.id == order }
        edited.lines.removeAll { $0.orderID == order }
        guard edited.orders.isEmpty else {
            _ = try await save(Self.settled(edited), from: draft, tx)
            return own
        }
        edited.status = .void
        edited.voidReason = "Its orders moved to another invoice."
        _ = try await discard(Self.settled(edited), from: draft, tx)
        return edited.lines + own
    }

    /// Throws a draft away (`void`: it, void). It goes (a draft has no number
    /// to keep) unless a payment was ever recorded on it: a removed collection
    /// is kept, and so the draft, void, billing nothing — the collection's id stays spent.
    private func discard(_ void: Invoice, from draft: Invoice, _ tx: TenantTransaction) async throws -> Invoice {
        guard try await InvoiceRepository.paymentCount(draft.id, tx) > 0 else {
            try await InvoiceRepository.deleteDraft(draft.id, tx)
            return void
        }
        return try await save(void, from: draft, tx)
    }

    /// The charges given and those carried from emptied drafts, within the limit.
    static func joined(_ charges: [InvoiceLine], _ carried: [InvoiceLine]) throws -> [InvoiceLine] {
        guard charges.count + carried.count <= InvoiceRules.chargesPerInvoice else {
            throw AppError.validation("charges", "With the charges of the drafts its orders come from, the invoice would have more than \(InvoiceRules.chargesPerInvoice).")
        }
        return charges + carried
    }

    /// A delivered order changed (its vehicles, prices, number): a draft billing it follows; a sent invoice keeps what it billed.
    func follow(_ order: Order, _ tx: TenantTransaction) async throws {
        guard let id = try await InvoiceRepository.invoices(ofOrders: [order.id], tenant: tx.tenant, tx.db)[order.id],
              let draft = try await InvoiceRepository.find(id, tenant: tx.tenant, locking: true, tx.db), draft.status == .draft else { return }
        var edited = draft
        edited.orders = draft.orders.map { $0.id == order.id ? Self.invoiced(order) : $0 }
        // Its vehicles' lines follow it; its detention and dry run stay as dispatch left them.
        let position = draft.lines.firstIndex { $0.orderID == order.id && $0.kind == .vehicle } ?? draft.lines.count
        edited.lines.removeAll { $0.orderID == order.id && $0.kind == .vehicle }
        edited.lines.insert(contentsOf: InvoiceRules.vehicleLines(of: order), at: min(position, edited.lines.count))
        _ = try await save(Self.settled(edited), from: draft, tx)
    }

    /// Charges as lines, each refusal naming its charge.
    static func checked(_ charges: [InvoiceCharge]) throws -> [InvoiceLine] {
        guard charges.count <= InvoiceRules.chargesPerInvoice else {
            throw AppError.validation("charges", "An invoice takes at most \(InvoiceRules.chargesPerInvoice) charges.")
        }
        return try charges.enumerated().map { index, charge in
            if let refusal = InvoiceRules.chargeProblem(charge, field: "charges[\(index)]") { throw AppError(refusal) }
            let description = try Validate.line(charge.description ?? "", FieldLimits.chargeDescription, field: "charges[\(index)].description")
            return InvoiceLine(kind: charge.kind, description: description.isEmpty ? charge.kind.label : description, amountCents: charge.amountCents)
        }
    }

    /// An invoice is dated within a year of today.
    static func checked(issuedOn: LocalDate, now: Date) throws -> LocalDate {
        let today = LocalDate(now)
        guard issuedOn >= today.adding(days: -366), issuedOn <= today.adding(days: 366) else {
            throw AppError.validation("issued_on", "An invoice is dated within a year of today.")
        }
        return issuedOn
    }

    /// Money is received on a day already come (anywhere on earth), within the last ten years.
    static func checked(receivedOn: LocalDate, now: Date, field: String) throws -> LocalDate {
        guard receivedOn <= LocalDate(now.addingTimeInterval(14 * 3600)) else {
            throw AppError.validation(field, "The payment is dated \(receivedOn), which has not come yet.")
        }
        guard receivedOn >= LocalDate(now).adding(days: -3660) else {
            throw AppError.validation(field, "The payment is dated more than ten years ago.")
        }
        return receivedOn
    }

    /// The due date and total as its lines and terms make them.
    static func settled(_ invoice: Invoice) -> Invoice {
        var settled = invoice
        settled.dueOn = InvoiceRules.dueDate(issuedOn: invoice.issuedOn, terms: invoice.terms)
        settled.totalCents = InvoiceRules.total(of: invoice.lines)
        return settled
    }

    static func invoiced(_ order: Order) -> InvoicedOrder {
        InvoicedOrder(id: order.id, number: order.number, externalLoadID: order.externalLoadID, deliveredOn: order.actualDeliveryDate.map { LocalDate($0) })
    }
}

extension Optional {
    /// `map` with an asynchronous transform.
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}

extension Store {
    /// Invoices and the payments against them.
    public var invoices: InvoiceService { InvoiceService(store: self) }
}
