import Crypto
@testable import DriverKit
import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The driver's side of getting paid, through DriverKit against a real
/// server over HTTP: money collected on delivery with a photo of the check,
/// and receipt photos on expenses — made offline, sent exactly once.
@Suite("Getting paid in DriverKit")
@MainActor
struct GettingPaidTests {
    nonisolated static func hex(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    nonisolated static func write(_ bytes: [UInt8], name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("paid-\(UUID().uuidString.prefix(8))-\(name)")
        try Data(bytes).write(to: url)
        return url
    }

    @Test("a 3-vehicle COD order delivered offline with an $1,800 check collected and photographed: after sync its invoice is paid once, pending deposit, and the photo opens for dispatch")
    func collectedOnDelivery() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let dispatch = carrier.dispatcher.accessToken
        let trip = carrier.trips[0][0].id
        // A dealer who pays the driver on delivery, and a load of three cars at $600 each, picked up.
        let tenant = carrier.tenant.id
        let customer = try await server.store.customers.create(CreateCustomerRequest(
            name: "Coastal Dealer Group", email: "ap@coastal.example", paymentTerms: "COD"), tenant: tenant)
        let vehicles = (0..<3).map { Vehicle(year: 2021 + $0, make: "Honda", model: "Civic", priceCents: 60_000) }
        let created = try await server.store.orders.create(CreateOrderRequest(
            number: "O-COD", tripID: trip, vehicles: vehicles, pickup: Stop(address: "1 Port Way, Jacksonville, FL"),
            delivery: Stop(address: "700 Dealer Row, Tampa, FL"), customerID: customer.id), tenant: tenant)
        let order = try await server.store.orders.update(created.id, UpdateOrderRequest(status: .pickedUp), tenant: tenant)
        let other = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        await app.syncNow()
        try await eventually("the picked-up load on the phone") { try app.database.order(order.id)?.status == .pickedUp }

        // At the dealer with no signal: each car's delivery inspection, then the check for all three.
        await live.stop()
        for vehicle in order.vehicles {
            let inspection = try app.startInspection(order: order.id, vehicle: vehicle.id, kind: .delivery)
            try app.updateInspection(inspection, customerUnavailable: true)
            for slot in MediaSlot.requiredPhotos {
                try await app.attach(try Self.write(MediaSamples.jpeg(size: 1024), name: "\(slot).jpg"), to: inspection, slot: slot)
            }
            try app.completeInspection(inspection)
        }
        #expect(try app.database.order(order.id)?.status == .delivered)
        let front = MediaSamples.jpeg(size: 48_000), back = MediaSamples.jpeg(size: 31_000)
        // Not a photo, or an amount of nothing: refused on the phone at once, nothing queued.
        await #expect(throws: LocalRejection.self) {
            try await app.collectPayment(order: order.id, amountCents: 180_000, method: .check, photos: [try Self.write(MediaSamples.pdf(), name: "x.pdf")])
        }
        await #expect(throws: LocalRejection.self) { try await app.collectPayment(order: order.id, amountCents: 0, method: .check) }
        // The order screen offers it once the load is picked up, and says what is wrong with an amount.
        let screen = OrderDetailViewModel(app: app, order: order.id)
        try await eventually("the order screen offers to record money") { screen.canCollect }
        #expect(await screen.collect(amount: "1,800.5.0", method: .check, reference: "", photos: []) == false)
        #expect(screen.lastError == "An amount looks like 1800.00.")
        let recorded = await screen.collect(amount: "1,800.00", method: .check, reference: "10442",
                                            photos: [try Self.write(front, name: "front.jpg"), try Self.write(back, name: "back.jpg")])
        #expect(recorded && screen.lastError == nil)
        let payment = try #require(try app.database.uploads().compactMap(\.paymentID).first)
        #expect(try app.database.uploads().filter { $0.paymentID == payment }.count == 2)
        let waiting = try app.database.outbox().first { $0.mutation.kind == .collectPayment }
        // The order screen lists it, waiting; more than the order comes to, or the same check again, is refused on the phone.
        #expect(try app.database.collections(order: order.id).map(\.summary) == ["$1,800.00 check 10442"])
        #expect(try app.database.collections(order: order.id).first?.state == .waiting)
        await #expect(throws: LocalRejection.self) { try await app.collectPayment(order: order.id, amountCents: 1, method: .cash) }
        await #expect(throws: LocalRejection.self) {
            try await app.collectPayment(order: order.id, amountCents: 1, method: .check, reference: "10442")
        }
        let photoItem = try #require(try app.database.uploads().first { $0.paymentID == payment })
        #expect(try app.database.words(for: photoItem) == "the photo of the $1,800.00 check collected for O-COD")
        #expect(waiting?.about == "the $1,800.00 check 10442 collected for O-COD", "\(String(describing: waiting?.about))")

        // Back in coverage: the changes go once, the photos after the collection they belong to.
        try await live.start()
        await app.syncNow()
        try await eventually("every file uploaded", timeout: .seconds(120)) { try app.database.uploads().allSatisfy { $0.status == .completed } }
        try await eventually("nothing left to sync") { try app.database.unsyncedCount() == 0 }
        // It reached dispatch: the phone keeps it for the order's screen.
        #expect(try app.database.collections(order: order.id).map(\.state) == [.recorded])

        // (One run of the in-process API at the end: it closes the test server's database when it returns.)
        try await server.run { api in
            let drafts = try await api.call(.dispatchInvoices, query: "status=draft", token: dispatch).decode(Items<Invoice>.self).items
            let invoice = try #require(drafts.first { $0.orders.map(\.id) == [order.id] })
            #expect(invoice.terms == .cod && invoice.totalCents == 180_000 && invoice.paidCents == 180_000 && invoice.balanceCents == 0)
            var detail = try await api.call(.dispatchInvoice, invoice.id.rawValue, token: dispatch).decode(InvoiceDetail.self)
            let collected = try #require(detail.payments.first)
            #expect(detail.payments.count == 1 && collected.id == payment && collected.collectedBy == carrier.driverID(0))
            #expect(collected.orderID == order.id && collected.reference == "10442" && collected.method == .check && collected.pendingDeposit)
            #expect(collected.photos.map(\.sha256) == [Self.hex(front), Self.hex(back)])

            // The photo opens for dispatch, in full and in part; not for another carrier.
            let photo = try await api.call(.dispatchPaymentPhoto, invoice.id.rawValue, payment.rawValue, collected.photos[0].id.rawValue, token: dispatch)
            #expect(photo.status == 200 && Self.hex(Array(photo.body)) == Self.hex(front))
            #expect(try await api.call(.dispatchPaymentPhoto, invoice.id.rawValue, payment.rawValue, collected.photos[0].id.rawValue,
                                       token: other.dispatcher.accessToken).status == 404)

            // The same collection sent again (an answer lost on the road) is the one payment; another id for it is refused.
            let again = CollectPaymentRequest(id: payment, orderID: order.id, amountCents: 180_000, method: .check, reference: "10442")
            #expect(try await api.call(.collectPayment, json: again, token: carrier.driver.accessToken).status == 201)
            var changed = again
            changed.amountCents = 18_000
            #expect(try await api.call(.collectPayment, json: changed, token: carrier.driver.accessToken).errorCode == "idempotency_key_reused")
            // Another driver cannot add to it, nor collect on an order that is not theirs.
            let stranger = carrier.drivers[1].accessToken
            #expect(try await api.call(.addCollectionPhoto, payment.rawValue, bytes: MediaSamples.jpeg(), token: stranger).status == 404)
            var foreign = again
            foreign.id = ID()
            #expect(try await api.call(.collectPayment, json: foreign, token: stranger).status == 404)
            detail = try await api.call(.dispatchInvoice, invoice.id.rawValue, token: dispatch).decode(InvoiceDetail.self)
            #expect(detail.payments.count == 1 && detail.invoice.paidCents == 180_000)

            // Sent (numbered), it is paid; banked, nothing is pending.
            let sent = try await api.call(.dispatchSendInvoice, invoice.id.rawValue, json: SendInvoiceRequest(email: false), token: dispatch)
                .decode(Invoice.self)
            #expect(sent.status == .paid && sent.number == "INV-1001")
            let early = try await api.call(.dispatchDepositPayment, invoice.id.rawValue, payment.rawValue,
                                           json: DepositPaymentRequest(depositedOn: collected.receivedOn.adding(days: -1)), token: dispatch)
            #expect(early.status == 422 && early.text.contains("deposited_on"), "\(early.text)")
            let banked = try await api.call(.dispatchDepositPayment, invoice.id.rawValue, payment.rawValue, json: DepositPaymentRequest(),
                                            token: dispatch).decode(InvoiceDetail.self)
            #expect(banked.payments.count == 1 && !banked.payments[0].pendingDeposit && banked.invoice.status == .paid)
        }
        await app.shutdown()
        await live.stop()
    }

    @Test("a fuel receipt photographed offline reaches its expense: it opens for the driver and dispatch, not another driver; deleting the expense removes the file")
    func receiptOnExpense() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let trip = carrier.trips[0][0].id
        await live.stop()
        let expense = try app.createExpense(trip: trip, category: .tolls, amountCents: 2_450, notes: "I-95 Fort McHenry")
        let receipt = MediaSamples.jpeg(size: 22_000)
        try await app.addReceipt(try Self.write(receipt, name: "toll.jpg"), to: expense)
        let item = try #require(try app.database.uploads().first { $0.expenseID == expense })
        #expect(try app.database.words(for: item) == "the receipt of the $24.50 tolls expense")
        // The trip screen counts the receipt already, while it waits on the phone.
        let tripScreen = TripDetailViewModel(app: app, trip: trip)
        let listed = try #require(try app.database.expenses(trip: trip).first { $0.id == expense })
        #expect(tripScreen.receiptsLabel(listed) == "1 receipt")
        await #expect(throws: LocalRejection.self) { try await app.addReceipt(try Self.write(MediaSamples.mp4(), name: "v.mp4"), to: expense) }

        try await live.start()
        await app.syncNow()
        try await eventually("the receipt uploaded", timeout: .seconds(120)) { try app.database.upload(item.id)?.status == .completed }
        // The feed brings the expense back with its receipt, for the phone's list.
        try await eventually("the expense on the phone carries its receipt") {
            try app.database.expenses(trip: trip).first { $0.id == expense }?.receipts.map(\.sha256) == [Self.hex(receipt)]
        }
        let stored = try await server.store.expenses.list(trip: trip, carrier.scope).first { $0.id == expense }
        let photo = try #require(stored?.receipts.first)
        let path = Endpoint.expenseReceipt.path(expense.rawValue, photo.id.rawValue)
        for token in [carrier.driver.accessToken, carrier.dispatcher.accessToken] {
            let opened = try await RawHTTP.request(port: live.port, "GET", path, headers: ["Authorization": "Bearer \(token)"])
            #expect(opened.status == 200 && Self.hex(opened.body) == Self.hex(receipt))
        }
        let stranger = ["Authorization": "Bearer \(carrier.drivers[1].accessToken)"]
        #expect(try await RawHTTP.request(port: live.port, "GET", path, headers: stranger).status == 404)
        #expect(try await RawHTTP.request(port: live.port, "POST", Endpoint.addExpenseReceipt.path(expense.rawValue), headers: stranger,
                                          body: MediaSamples.jpeg()).status == 404)
        let key = try await server.store.receipts.receipt(photo.id, of: expense, carrier.scope).key
        #expect(try await server.services.media.open(key) != nil)

        // Deleted, the expense's receipt goes from storage at the next sweep.
        try app.deleteExpense(expense)
        await app.syncNow()
        try await eventually("the deletion reached the server") { try app.database.unsyncedCount() == 0 }
        _ = try await server.services.uploads.pruneExpired()
        #expect(try await server.services.media.open(key) == nil)
        await app.shutdown()
        await live.stop()
    }

    @Test("the Earnings tab shows this week's settlement and the weeks dispatch settled; with no signal, the copy kept; a settled week's statement opens")
    func settlementsOnEarnings() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let (tenant, driver) = (carrier.tenant.id, carrier.driverID(0))
        // Dispatch gave a $50 advance today and approves this week: the driver's fuel less the advance.
        _ = try await server.store.settlements.addItem(driver: driver, CreatePayItemRequest(kind: .advance, description: "Road advance",
                                                                                           amountCents: 5_000), tenant: tenant)
        let model = EarningsViewModel(app: app)
        #expect(model.settlements.current == nil, "never fetched")
        await model.refreshSettlements()
        let open = try #require(model.settlements.current)
        #expect(open.status == "So far (open)" && open.settlementID == nil)
        #expect(open.lines.map(\.what).contains("Advance") && open.lines.first { $0.what == "Advance" }?.takesOff == true)
        await #expect(throws: LocalRejection.self) { try await model.statementFile(open) }

        let approved = try await server.store.settlements.approve(driver: driver, ApproveSettlementRequest(week: LocalDate(server.clock.now), email: false),
                                                                  tenant: tenant)
        _ = try await server.store.settlements.markPaid(try #require(approved.id), MarkSettlementPaidRequest(reference: "ACH 5521"), tenant: tenant)
        await model.refreshSettlements()
        let paid = try #require(model.settlements.current)
        #expect(paid.status.hasPrefix("Paid ") && paid.status.hasSuffix("ACH 5521") && paid.net == MoneyFormat.dollars(approved.netCents))
        let file = try await model.statementFile(paid)
        #expect(try Data(contentsOf: file).starts(with: Data("%PDF".utf8)))

        // No signal: what was kept, and a word on why it is not fresh.
        await live.stop()
        let offline = EarningsViewModel(app: app)
        #expect(offline.settlements.current?.net == paid.net)
        await offline.refreshSettlements()
        #expect(offline.settlements.current?.net == paid.net && offline.settlementsProblem != nil)
    }
}
