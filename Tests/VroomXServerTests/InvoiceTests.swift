import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Getting paid through the real API: a delivery prepares a draft, drafts
/// are merged and charged, sending numbers them without gaps, payments by
/// two dispatchers at once settle the invoice exactly, aging moves, the
/// PDF reads right in `pdftotext`, the QuickBooks files load in Python's
/// csv reader, and the customer's email goes once with the bills of lading.
@Suite("Invoices and payments")
struct InvoiceTests {
    /// An order of these vehicle prices for the customer, picked up and delivered by dispatch.
    static func delivered(_ number: String, prices: [Int], customer: ID<Customer>, trip: ID<Trip>, api: TestAPI, token: String) async throws -> Order {
        let vehicles = prices.enumerated().map { index, price in
            Vehicle(year: 2020 + index, make: "Toyota", model: "Camry", vin: index == 0 ? "4T1B11HK4MU123456" : "", priceCents: price)
        }
        let created = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
            number: number, tripID: trip, vehicles: vehicles, pickup: Stop(address: "1 Harbor Rd, Savannah, GA"),
            delivery: Stop(address: "9 Main St, Orlando, FL"), customerID: customer, externalLoadID: "LB-\(number)"), token: token)
        #expect(created.status == 201, "\(created.text)")
        let order = try created.decode(Order.self)
        for status in [OrderStatus.pickedUp, .delivered] {
            let moved = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(status: status), token: token)
            #expect(moved.status == 200, "\(moved.text)")
        }
        return order
    }

    static func drafts(_ api: TestAPI, token: String) async throws -> [Invoice] {
        try await api.call(.dispatchInvoices, query: "status=draft", token: token).decode(Items<Invoice>.self).items
    }

    @Test("a delivery prepares a draft; merged, charged and sent it takes INV-1001; two dispatchers paying at once settle it exactly; aging, PDF and the QuickBooks files follow",
          arguments: TestBackend.available)
    func deliveredToPaid(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let (dispatch, trip) = (alpha.dispatcher.accessToken, alpha.trips[0][0].id)
        try await server.run { api in
            _ = try await api.call(.dispatchUpdateCarrierProfile, json: UpdateCarrierProfileRequest(
                legalName: "Alpha Car Carriers LLC", mcNumber: "MC-123456", address: "1 Depot Rd, Joliet, IL 60431"), token: dispatch)
            let customer = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(
                name: "Midwest Auto Brokers", billingContact: "Dana Reyes", email: "billing@midwestauto.example", paymentTerms: "Net 30"),
                                              token: dispatch).decode(Customer.self)
            let first = try await Self.delivered("O-1", prices: [60_000, 55_000], customer: customer.id, trip: trip, api: api, token: dispatch)
            let second = try await Self.delivered("O-2", prices: [90_000], customer: customer.id, trip: trip, api: api, token: dispatch)

            // Each delivery prepared a draft on the customer's terms, a line per vehicle at its price.
            var drafts = try await Self.drafts(api, token: dispatch)
            #expect(drafts.count == 2)
            let draft = try #require(drafts.first { $0.orders.map(\.id) == [first.id] })
            let other = try #require(drafts.first { $0.orders.map(\.id) == [second.id] })
            #expect(draft.terms == .net30 && draft.number == nil && draft.totalCents == 115_000 && draft.lines.count == 2)
            #expect(draft.lines[0].description.contains("VIN 4T1B11HK4MU123456"), "\(draft.lines)")

            // One invoice for both: the second order moves off its own draft, which goes (a draft has no number to keep).
            let merge = UpdateInvoiceRequest(orderIDs: [first.id, second.id], charges: [
                InvoiceCharge(kind: .detention, description: "3 h at the auction", amountCents: 7_500),
                InvoiceCharge(kind: .other, description: "Repeat customer discount", amountCents: -2_500)])
            let merged = try await api.call(.dispatchUpdateInvoice, draft.id.rawValue, json: merge, token: dispatch).decode(Invoice.self)
            #expect(merged.totalCents == 210_000 && merged.lines.count == 5 && merged.orders.map(\.number) == ["O-1", "O-2"])
            #expect(try await api.call(.dispatchInvoice, other.id.rawValue, token: dispatch).status == 404)
            // A draft follows its orders: a price corrected on a delivered order shows on the draft at once.
            for price in [95_000, 90_000] {
                var vehicle = second.vehicles[0]
                vehicle.priceCents = price
                #expect(try await api.call(.dispatchUpdateOrder, second.id.rawValue, json: UpdateOrderRequest(vehicles: [vehicle]), token: dispatch).status == 200)
                let followed = try await api.call(.dispatchInvoice, draft.id.rawValue, token: dispatch).decode(InvoiceDetail.self).invoice
                #expect(followed.totalCents == 120_000 + price && followed.lines[2].amountCents == price, "\(followed.lines)")
            }
            // Refusals: a vehicle line typed by hand, a charge of nothing, another carrier's order.
            for (bad, field) in [(UpdateInvoiceRequest(charges: [InvoiceCharge(kind: .vehicle, amountCents: 100)]), "charges[0].kind"),
                                 (UpdateInvoiceRequest(charges: [InvoiceCharge(kind: .detention, amountCents: 0)]), "charges[0].amount_cents"),
                                 (UpdateInvoiceRequest(charges: [InvoiceCharge(kind: .other, amountCents: Int.min)]), "charges[0].amount_cents"),
                                 (UpdateInvoiceRequest(orderIDs: [beta.orders[beta.trips[0][0].id]![0].id]), "order_ids")] {
                let refused = try await api.call(.dispatchUpdateInvoice, draft.id.rawValue, json: bad, token: dispatch)
                #expect(refused.status == 422 && refused.text.contains("\"field\":\"\(field)\""), "\(refused.text)")
            }

            // Sent (handed over on the broker's portal): the carrier's first number, due 30 days after its date.
            let sent = try await api.call(.dispatchSendInvoice, draft.id.rawValue, json: SendInvoiceRequest(email: false), token: dispatch)
                .decode(Invoice.self)
            #expect(sent.number == "INV-1001" && sent.status == .sent && sent.dueOn == sent.issuedOn.adding(days: 30))
            #expect(try await api.call(.dispatchUpdateInvoice, draft.id.rawValue, json: UpdateInvoiceRequest(notes: "x"), token: dispatch).status == 409)
            // Another carrier sees nothing of it; a driver is no dispatcher.
            #expect(try await api.call(.dispatchInvoice, draft.id.rawValue, token: beta.dispatcher.accessToken).status == 404)
            #expect(try await api.call(.dispatchRecordPayment, draft.id.rawValue, json: RecordPaymentRequest(amountCents: 1, method: .cash),
                                       token: beta.dispatcher.accessToken).status == 404)
            #expect(try await api.call(.dispatchInvoice, draft.id.rawValue, token: alpha.driver.accessToken).status == 403)

            // 45 days after the due date the whole balance is 31–60 days late.
            let late = sent.dueOn.adding(days: 45)
            var aging = try await api.call(.dispatchReceivables, query: "as_of=\(late)", token: dispatch).decode(ReceivablesReport.self).customers
            #expect(aging.count == 1 && aging[0].days31to60Cents == 210_000 && aging[0].totalCents == 210_000)
            // Before the invoice was dated nothing was owed on it.
            #expect(try await api.call(.dispatchReceivables, query: "as_of=\(sent.issuedOn.adding(days: -1))", token: dispatch)
                .decode(ReceivablesReport.self).customers.isEmpty)

            // Two dispatchers record the two parts at the same moment; a lost answer sends the first again.
            let parts = [RecordPaymentRequest(id: ID(), amountCents: 100_000, method: .check, reference: "10442", receivedOn: sent.issuedOn),
                         RecordPaymentRequest(id: ID(), amountCents: 110_000, method: .ach, reference: "TRACE 0912", receivedOn: sent.issuedOn)]
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for (index, part) in parts.enumerated() {
                    let token = index == 0 ? dispatch : alpha.dispatcher.accessToken
                    group.addTask { try await api.call(.dispatchRecordPayment, draft.id.rawValue, json: part, token: token).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == [201, 201])
            let again = try await api.call(.dispatchRecordPayment, draft.id.rawValue, json: parts[0], token: dispatch).decode(InvoiceDetail.self)
            #expect(again.invoice.paidCents == 210_000 && again.invoice.status == .paid && again.invoice.balanceCents == 0 && again.payments.count == 2)
            var reused = parts[0]
            reused.amountCents = 5
            #expect(try await api.call(.dispatchRecordPayment, draft.id.rawValue, json: reused, token: dispatch).status == 409)
            #expect(try await api.call(.dispatchRecordPayment, draft.id.rawValue, json: RecordPaymentRequest(amountCents: 0, method: .cash),
                                       token: dispatch).status == 422)
            aging = try await api.call(.dispatchReceivables, query: "as_of=\(late)", token: dispatch).decode(ReceivablesReport.self).customers
            #expect(aging.isEmpty, "paid invoices owe nothing: \(aging)")
            #expect(try await api.call(.dispatchVoidInvoice, draft.id.rawValue, json: VoidInvoiceRequest(reason: "oops"), token: dispatch).status == 409)

            // A payment recorded by mistake comes off, and the invoice is owed again.
            let detail = try await api.call(.dispatchRemovePayment, draft.id.rawValue, parts[1].id!.rawValue, token: dispatch).decode(InvoiceDetail.self)
            #expect(detail.invoice.status == .partlyPaid && detail.invoice.balanceCents == 110_000)
            // A late retry of the removed payment does not bring it back; the right one is recorded anew.
            let retried = try await api.call(.dispatchRecordPayment, draft.id.rawValue, json: parts[1], token: dispatch).decode(InvoiceDetail.self)
            #expect(retried.invoice.balanceCents == 110_000 && retried.payments.count == 1)
            var corrected = parts[1]
            corrected.id = ID()
            #expect(try await api.call(.dispatchRecordPayment, draft.id.rawValue, json: corrected, token: dispatch).decode(InvoiceDetail.self)
                .invoice.status == .paid)

            // An order on a sent invoice is not billed again.
            let again2 = try await api.call(.dispatchCreateInvoice, json: CreateInvoiceRequest(orderIDs: [second.id]), token: dispatch)
            #expect(again2.status == 409 && again2.text.contains("INV-1001"), "\(again2.text)")
            // A draft discarded frees its order, billed again on a new one; the next invoice sent takes the next number.
            let third = try await Self.delivered("O-3", prices: [40_000], customer: customer.id, trip: trip, api: api, token: dispatch)
            drafts = try await Self.drafts(api, token: dispatch)
            let own = try #require(drafts.first { $0.orders.map(\.id) == [third.id] })
            _ = try await api.call(.dispatchUpdateInvoice, own.id.rawValue, json: UpdateInvoiceRequest(charges: [InvoiceCharge(kind: .dryRun, amountCents: 5_000)]),
                                   token: dispatch)
            // A new invoice naming it takes the order off its draft, and the draft's charges with it.
            let taking = try await api.call(.dispatchCreateInvoice, json: CreateInvoiceRequest(orderIDs: [third.id]), token: dispatch)
            #expect(taking.status == 201, "\(taking.text)")
            let discarded = try taking.decode(Invoice.self)
            #expect(discarded.totalCents == 45_000 && discarded.lines.map(\.kind) == [.vehicle, .dryRun], "\(discarded.lines)")
            #expect(try await api.call(.dispatchInvoice, own.id.rawValue, token: dispatch).status == 404)
            let voided = try await api.call(.dispatchVoidInvoice, discarded.id.rawValue, json: VoidInvoiceRequest(reason: "Wrong rate"),
                                            token: dispatch).decode(Invoice.self)
            #expect(voided.status == .void && voided.balanceCents == 0 && voided.number == nil, "a void invoice owes nothing")
            #expect(try await api.call(.dispatchInvoice, discarded.id.rawValue, token: dispatch).status == 404, "a discarded draft is gone")
            let created = try await api.call(.dispatchCreateInvoice, json: CreateInvoiceRequest(orderIDs: [third.id], terms: .net15), token: dispatch)
            #expect(created.status == 201, "\(created.text)")
            let thirdDraft = try created.decode(Invoice.self)
            #expect(thirdDraft.terms == .net15 && thirdDraft.totalCents == 40_000)
            // Sent with no body at all: by email, the default.
            let sentThird = try await api.call(.dispatchSendInvoice, thirdDraft.id.rawValue, token: dispatch)
            #expect(sentThird.status == 200, "\(sentThird.text)")
            #expect(try sentThird.decode(Invoice.self).number == "INV-1002")
            // Paid twice over by mistake: a credit, which receivables count against what the customer owes.
            _ = try await api.call(.dispatchRecordPayment, thirdDraft.id.rawValue, json: RecordPaymentRequest(amountCents: 40_000, method: .ach), token: dispatch)
            _ = try await api.call(.dispatchRecordPayment, thirdDraft.id.rawValue, json: RecordPaymentRequest(amountCents: 40_000, method: .ach), token: dispatch)
            aging = try await api.call(.dispatchReceivables, token: dispatch).decode(ReceivablesReport.self).customers
            #expect(aging.count == 1 && aging[0].currentCents == -40_000 && aging[0].totalCents == -40_000, "\(aging)")

            // The PDF, as a reader sees it.
            let pdf = try await api.call(.dispatchInvoicePDF, draft.id.rawValue, token: dispatch)
            #expect(pdf.status == 200 && pdf.headers[.contentType] == "application/pdf")
            let words = try await Self.pdfWords(pdf.body, keep: "invoice-\(backend).pdf")
            for expected in ["Alpha Car Carriers LLC", "MC 123456", "INVOICE", "Invoice INV-1001", "Terms Net 30", "BILL TO", "Midwest Auto Brokers",
                             "Dana Reyes", "REMIT PAYMENT TO", "Order O-1 (load LB-O-1): 2020 Toyota Camry, VIN 4T1B11HK4MU123456", "$600.00", "$900.00",
                             "Detention: 3 h at the auction", "$75.00", "Other: Repeat customer discount", "-$25.00", "Total $2,100.00",
                             "Check 10442", "-$1,000.00", "ACH TRACE 0912", "-$1,100.00", "Paid in full $0.00", "Page 1 of 1"] {
                #expect(words.contains(expected), "\(expected) is not in:\n\(words)")
            }

            // The QuickBooks files, read by Python's csv module.
            let month = "from=\(sent.issuedOn.adding(days: -1))&to=\(sent.issuedOn.adding(days: 1))"
            let invoicesCSV = try await api.call(.dispatchInvoicesExport, query: month, token: dispatch)
            #expect(invoicesCSV.status == 200 && invoicesCSV.headers[.contentType] == "text/csv; charset=utf-8")
            let rows = try await Self.csvRows(invoicesCSV.text)
            #expect(rows.first == Receivables.invoiceColumns)
            let lines = rows.dropFirst().filter { $0[0] == "INV-1001" }
            #expect(lines.count == 5 && lines.allSatisfy { $0[1] == "Midwest Auto Brokers" && $0[4] == "Net 30" }, "\(rows)")
            let cents = lines.compactMap { Decimal(string: $0[10]) }.reduce(Decimal(0), +)
            #expect(cents == Decimal(2_100), "\(lines.map { $0[10] })")
            #expect(rows.dropFirst().contains { $0[0] == "INV-1002" } && !rows.contains { $0.contains("O-2 alone") })
            let paymentRows = try await Self.csvRows(try await api.call(.dispatchPaymentsExport, query: month, token: dispatch).text)
            #expect(paymentRows.first == Receivables.paymentColumns && paymentRows.count == 5, "the removed payment is left out: \(paymentRows)")
            #expect(Set(paymentRows.dropFirst().filter { $0[5] == "INV-1001" }.map { $0[4] }) == ["1000.00", "1100.00"], "\(paymentRows)")
            #expect(try await api.call(.dispatchInvoicesExport, query: "from=2026-01-01&to=2025-01-01", token: dispatch).status == 422)
            // A client cannot grow an invoice's payments without end.
            for _ in 2..<InvoiceRules.paymentsPerInvoice {
                _ = try await api.call(.dispatchRecordPayment, thirdDraft.id.rawValue, json: RecordPaymentRequest(amountCents: 1, method: .cash), token: dispatch)
            }
            let tooMany = try await api.call(.dispatchRecordPayment, thirdDraft.id.rawValue, json: RecordPaymentRequest(amountCents: 1, method: .cash),
                                             token: dispatch)
            #expect(tooMany.status == 409 && tooMany.text.contains("the most one takes"), "\(tooMany.text)")
            #expect(try await api.call(.dispatchInvoice, thirdDraft.id.rawValue, token: dispatch).decode(InvoiceDetail.self).payments.count
                    == InvoiceRules.paymentsPerInvoice)
        }
    }

    @Test("sending emails the invoice PDF with each order's bill of lading once; a double click sends one; a factored invoice names the factor and the notice",
          .enabled(if: SMTPTestServer.isAvailable || ProcessInfo.processInfo.environment["CI"] == "true"))
    func mailedOnce() async throws {
        let smtp = try await SMTPTestServer.start()
        let server = try await TestServer.make(.sqlite) {
            $0.mailer = nil
            $0.smtpURL = "smtp://127.0.0.1:\(smtp.port)"
        }
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = alpha.dispatcher.accessToken
        try await server.run { api in
            let factoring = UpdateCarrierProfileRequest(legalName: "Alpha Car Carriers LLC", email: "billing@alpha.example",
                                                        factoringCompany: "Triumph Pay", factoringRemitTo: "PO Box 610028\nDallas, TX 75261")
            #expect(try await api.call(.dispatchUpdateCarrierProfile, json: factoring, token: dispatch).status == 200)
            let missing = UpdateCarrierProfileRequest(factoringCompany: "Triumph Pay", factoringRemitTo: "")
            #expect(try await api.call(.dispatchUpdateCarrierProfile, json: missing, token: dispatch).text.contains("factoring_remit_to"))
            let customer = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(
                name: "Sunbelt Dealer Group", email: "ap@sunbelt.example", paymentTerms: "Quick pay"), token: dispatch).decode(Customer.self)
            let quiet = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(name: "No Email Motors"), token: dispatch)
                .decode(Customer.self)
            _ = try await Self.delivered("M-1", prices: [50_000, 50_000, 80_000], customer: customer.id, trip: alpha.trips[0][0].id, api: api,
                                         token: dispatch)
            _ = try await Self.delivered("M-2", prices: [10_000], customer: quiet.id, trip: alpha.trips[0][0].id, api: api, token: dispatch)
            let drafts = try await Self.drafts(api, token: dispatch)
            let invoice = try #require(drafts.first { $0.customerID == customer.id })
            #expect(invoice.terms == .quickPay && invoice.totalCents == 180_000)

            // A double click: two sends, one email.
            for _ in 0..<2 {
                #expect(try await api.call(.dispatchSendInvoice, invoice.id.rawValue, json: SendInvoiceRequest(), token: dispatch).status == 200)
            }
            let raw = try #require(try await smtp.waitForMessages(1, timeout: .seconds(30)).first)
            let mail = BillOfLadingTests.mime(raw)
            #expect(mail.headers["to"] == "<ap@sunbelt.example>" && mail.headers["reply-to"] == "<billing@alpha.example>")
            #expect(mail.headers["from"]?.hasPrefix("=?UTF-8?B?\(Data("Alpha Car Carriers LLC".utf8).base64EncodedString())?= <") == true,
                    "from the carrier's name: \(mail.headers["from"] ?? "")")
            #expect(mail.headers["subject"]?.hasPrefix("Invoice INV-1001 from Alpha Car Carriers LLC: $1,800.00 due") == true, "\(mail.headers)")
            #expect(mail.text.contains("NOTICE OF ASSIGNMENT") && mail.text.contains("Remit to: Triumph Pay, PO Box 610028, Dallas, TX 75261"), "\(mail.text)")
            #expect(raw.components(separatedBy: "filename=").count - 1 == 2, "the invoice and the order's bill of lading")
            #expect(raw.contains("invoice-INV-1001.pdf") && raw.contains("bill-of-lading-M-1.pdf"))
            let words = try await Self.pdfWords(Data(try #require(mail.attachment)), keep: "invoice-factored.pdf")
            for expected in ["Invoice INV-1001", "Terms Quick pay", "REMIT PAYMENT TO", "Triumph Pay", "PO Box 610028", "NOTICE OF ASSIGNMENT",
                             "assigned to Triumph Pay", "Total $1,800.00"] {
                #expect(words.contains(expected), "\(expected) is not in:\n\(words)")
            }
            try await Task.sleep(for: .seconds(3))
            #expect(try smtp.messages().count == 1)
            let sends = try await server.store.read { try await QueuedMailRepository.invoices.of(invoice.id.rawValue, tenant: alpha.tenant.id, $0) }
            #expect(sends.map(\.state) == [.sent])

            // Sent again on purpose: a second email.
            #expect(try await api.call(.dispatchSendInvoice, invoice.id.rawValue, json: SendInvoiceRequest(), token: dispatch).status == 200)
            _ = try await smtp.waitForMessages(2, timeout: .seconds(30))

            // A customer without an email: refused with the field, or marked sent without one.
            let other = try #require(drafts.first { $0.customerID == quiet.id })
            let refused = try await api.call(.dispatchSendInvoice, other.id.rawValue, json: SendInvoiceRequest(), token: dispatch)
            #expect(refused.status == 422 && refused.text.contains("\"field\":\"email\""), "\(refused.text)")
            #expect(try await api.call(.dispatchInvoice, other.id.rawValue, token: dispatch).decode(InvoiceDetail.self).invoice.number == nil,
                    "a refused send takes no number")
        }
        await smtp.stop()
    }

    /// The words `pdftotext` reads, one space between them; a copy kept under .build/documents.
    static func pdfWords(_ bytes: Data, keep name: String) async throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("invoice-\(UUID()).pdf")
        defer { try? FileManager.default.removeItem(at: file) }
        try bytes.write(to: file)
        let samples = BillOfLadingTests.fixtures.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/documents")
        try? FileManager.default.createDirectory(at: samples, withIntermediateDirectories: true)
        try? bytes.write(to: samples.appendingPathComponent(name))
        let text = try await ChildProcess.run("/usr/bin/pdftotext", ["-layout", file.path, "-"])
        #expect(text.status == 0, "\(text.text)")
        return text.text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
    }

    /// The rows Python's csv module reads from a file.
    static func csvRows(_ text: String) async throws -> [[String]] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID()).csv")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(text.utf8).write(to: file)
        let script = "import csv, json, sys; print(json.dumps(list(csv.reader(open(sys.argv[1], newline='', encoding='utf-8')))))"
        let read = try await ChildProcess.run("/usr/bin/python3", ["-c", script, file.path])
        #expect(read.status == 0, "\(read.text)")
        return try JSONDecoder().decode([[String]].self, from: Data(read.text.utf8))
    }

    @Test("a driver's collection: no more than the order comes to, a check once, a driver's methods; it keeps its order on the draft, survives its removal as a spent id, and is banked once",
          arguments: TestBackend.available)
    func collectionsStayWithTheirOrder(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let (dispatch, driver, trip) = (alpha.dispatcher.accessToken, alpha.driver.accessToken, alpha.trips[0][0].id)
        try await server.run { api in
            let customer = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(name: "Gulf Dealer", paymentTerms: "COD"),
                                              token: dispatch).decode(Customer.self)
            let cod = try await Self.delivered("O-C1", prices: [60_000, 40_000], customer: customer.id, trip: trip, api: api, token: dispatch)
            let other = try await Self.delivered("O-C2", prices: [30_000], customer: customer.id, trip: trip, api: api, token: dispatch)
            func collect(_ cents: Int, _ method: PaymentMethod = .check, reference: String? = nil, id: ID<InvoicePayment> = ID(),
                         order: ID<Order>? = nil) async throws -> APIResponse {
                try await api.call(.collectPayment, json: CollectPaymentRequest(id: id, orderID: order ?? cod.id, amountCents: cents, method: method,
                                                                                reference: reference), token: driver)
            }
            // A driver is not handed an ACH payment; more than the order's $1,000.00 is a typo, not a credit.
            #expect(try await collect(10_000, .ach).errorCode == "validation_failed")
            let tooMuch = try await collect(9_999_999_900)
            #expect(tooMuch.status == 422 && tooMuch.text.contains("left to collect"), "\(tooMuch.text)")
            let first = ID<InvoicePayment>()
            #expect(try await collect(60_000, reference: "5501", id: first).status == 201)
            // The same check again is refused; so is more than the $400.00 left.
            let again = try await collect(100, reference: "5501")
            #expect(again.status == 409 && again.errorCode == "already_exists", "\(again.text)")
            #expect(try await collect(40_001).text.contains("$400.00 is left to collect"))
            // A date before the order was booked, or to come, is refused by name.
            let future = try await api.call(.collectPayment, json: CollectPaymentRequest(orderID: cod.id, amountCents: 100, method: .cash,
                                                                                          collectedOn: LocalDate(server.store.now).adding(days: 3)),
                                            token: driver)
            #expect(future.status == 422 && future.text.contains("\"field\":\"collected_on\""), "\(future.text)")

            // The collection keeps its order on the draft: dropping the order is refused, and so is moving it elsewhere.
            let draft = try #require(try await Self.drafts(api, token: dispatch).first { $0.orders.map(\.id) == [cod.id] })
            let otherDraft = try #require(try await Self.drafts(api, token: dispatch).first { $0.orders.map(\.id) == [other.id] })
            let dropped = try await api.call(.dispatchUpdateInvoice, draft.id.rawValue, json: UpdateInvoiceRequest(orderIDs: [other.id]), token: dispatch)
            #expect(dropped.status == 409 && dropped.text.contains("O-C1"), "\(dropped.text)")
            let moved = try await api.call(.dispatchUpdateInvoice, otherDraft.id.rawValue, json: UpdateInvoiceRequest(orderIDs: [other.id, cod.id]),
                                           token: dispatch)
            #expect(moved.status == 409, "\(moved.text)")

            // Removed by dispatch, then the draft discarded: the collection's id stays spent (sent again, it is not recorded again).
            #expect(try await api.call(.dispatchRemovePayment, draft.id.rawValue, first.rawValue, token: dispatch).status == 200)
            let voided = try await api.call(.dispatchVoidInvoice, draft.id.rawValue, json: VoidInvoiceRequest(reason: "Rebilled"), token: dispatch)
                .decode(Invoice.self)
            #expect(voided.status == .void && voided.number == nil)
            let resent = try await collect(60_000, reference: "5501", id: first)
            #expect(try resent.status == 201 && resent.decode(InvoicePayment.self).invoiceID == draft.id, "\(resent.text)")
            let fresh = try await api.call(.dispatchCreateInvoice, json: CreateInvoiceRequest(orderIDs: [cod.id]), token: dispatch).decode(Invoice.self)
            #expect(fresh.paidCents == 0)

            // Collected on the new invoice, banked: listed as held until then, deposited once; another day after that is refused.
            let second = ID<InvoicePayment>()
            #expect(try await collect(100_000, .cash, id: second).status == 201)
            // Its draft, printed, is paid in full: it asks for no money.
            let printed = try await api.call(.dispatchInvoicePDF, fresh.id.rawValue, token: dispatch)
            let words = try await Self.pdfWords(printed.body, keep: "invoice-collected-draft.pdf")
            #expect(words.contains("Paid in full") && !words.contains("Balance due"), "\(words)")
            let held = try await server.store.invoices.pendingDeposits(tenant: alpha.tenant.id)
            #expect(held.map(\.payment.id) == [second] && held.first?.invoice.id == fresh.id)
            let banked = try await api.call(.dispatchDepositPayment, fresh.id.rawValue, second.rawValue, token: dispatch)
            #expect(banked.status == 200, "\(banked.text)")
            #expect(try await api.call(.dispatchDepositPayment, fresh.id.rawValue, second.rawValue, token: dispatch).status == 200)
            let otherDay = try await api.call(.dispatchDepositPayment, fresh.id.rawValue, second.rawValue,
                                              json: DepositPaymentRequest(depositedOn: LocalDate(server.store.now).adding(days: -400)), token: dispatch)
            #expect(otherDay.status == 409 || otherDay.status == 422, "\(otherDay.text)")
            #expect(try await server.store.invoices.pendingDeposits(tenant: alpha.tenant.id).isEmpty)
            // The bookkeeper's file says who collected it and when it was banked.
            let csv = try await server.store.receivables.paymentsCSV(tenant: alpha.tenant.id, from: LocalDate(server.store.now).adding(days: -1),
                                                                     to: LocalDate(server.store.now).adding(days: 1))
            #expect(csv.contains("Collected by") && csv.contains("deposited"), "\(csv)")
        }
    }
}
