import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Time at the stops and problems there, through the API: the truck
/// leaving the fence marks its departure, time on site beyond the carrier's
/// free time is detention (the order, the bill of lading, the invoice), and
/// a driver's report of a problem reaches dispatch once and feeds the
/// dry-run fee and detention.
@Suite("Stop times and problems")
struct StopTimesTests {
    typealias Fixes = LocationTests

    /// Free time 15 min, detention $60.00/h, dry run $200.00.
    static func setTerms(_ api: TestAPI, token: String) async throws {
        let saved = try await api.call(.dispatchUpdateCarrierProfile, json: UpdateCarrierProfileRequest(
            detentionFreeMinutes: 15, detentionCentsPerHour: 60_00, dryRunFeeCents: 200_00), token: token)
        #expect(saved.status == 200, "\(saved.text)")
    }

    @Test("leaving the fence after arriving is a departure (a GPS jump is not); 32 min on site with 15 free bills 15 min of detention on the order, the BOL and the draft invoice",
          arguments: TestBackend.available)
    func departureAndDetention(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let driver = carrier.driver.accessToken, dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            try await Self.setTerms(api, token: dispatch)
            let customer = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(name: "Joliet Auto Auction"), token: dispatch)
                .decode(Customer.self)
            let fenced = try await Fixes.fencedOrder(api, carrier, server)
            #expect(try await api.call(.dispatchUpdateOrder, fenced.id.rawValue, json: UpdateOrderRequest(customerID: customer.id),
                                       token: dispatch).status == 200)
            let start = Fixes.wholeSeconds(server.clock.now).addingTimeInterval(-2300)
            // In: arrives at +30 s (120 m, inside the 150 m fence).
            let arriving = try await Fixes.record(api, Fixes.fixes([300, 120, 40, 45, 50, 42, 38], from: start), token: driver)
            #expect(arriving.arrivals.map(\.arrivedAt) == [start.addingTimeInterval(30)])
            // Parked, with one fix that jumps 2 km away for a moment: not a departure.
            _ = try await Fixes.record(api, Fixes.fixes([40, 45, 2000, 40, 42, 40], from: start.addingTimeInterval(600), every: 240), token: driver)
            var order = try await api.call(.dispatchOrder, fenced.id.rawValue, token: dispatch).decode(Order.self)
            #expect(order.departedPickupAt == nil && order.arrivedAtPickup == start.addingTimeInterval(30))
            // Out at +2000 s and away for good.
            _ = try await Fixes.record(api, Fixes.fixes([400, 800, 1500, 2500, 3000], from: start.addingTimeInterval(2000)), token: driver)
            order = try await api.call(.dispatchOrder, fenced.id.rawValue, token: dispatch).decode(Order.self)
            #expect(order.departedPickupAt == start.addingTimeInterval(2000))
            #expect(order.visit(.pickup).onSite == 1970)  // 32 min 50 s
            let terms = StopChargeTerms(freeMinutes: 15, detentionCentsPerHour: 60_00, dryRunCents: 200_00)
            #expect(order.detentionMinutes(at: .pickup, terms: terms) == 15)  // 17 min beyond, in whole quarter hours
            // The driver's phone has it too.
            #expect(try await api.call(.order, fenced.id.rawValue, token: driver).decode(Order.self).departedPickupAt == order.departedPickupAt)
            // "Waiting" reported 3 km down the road (by the truck's position then) does not start the clock.
            let far = try await api.call(.reportStopProblem, json: ReportStopProblemRequest(orderID: fenced.id, stop: .pickup, kind: .waiting,
                                                                                            reportedAt: start.addingTimeInterval(2120)), token: driver)
            #expect(far.status == 201, "\(far.text)")
            let reported = try #require(try far.decode(Order.self).problems.first)
            #expect(!reported.truckWasNear && (reported.truckDistanceMeters ?? 0) > 2_000, "\(reported)")
            #expect(try far.decode(Order.self).visit(.pickup).onSite == 1970)

            // The bill of lading says when the truck came and went, and the detention.
            let pdf = try await api.call(.dispatchBillOfLading, fenced.id.rawValue, token: dispatch)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("bol-\(UUID()).pdf")
            defer { try? FileManager.default.removeItem(at: file) }
            try pdf.body.write(to: file)
            let text = try await ChildProcess.run("/usr/bin/pdftotext", ["-layout", file.path, "-"])
            let words = text.text.split(whereSeparator: { $0 == " " }).joined(separator: " ")
            #expect(words.contains("32 min on site") && words.contains("Detention 15 min (15 min free)"), "\(words)")

            // Delivered: the draft invoice bills the vehicle and the detention at pickup, $15.00.
            for status in [OrderStatus.pickedUp, .delivered] {
                #expect(try await api.call(.dispatchUpdateOrder, fenced.id.rawValue, json: UpdateOrderRequest(status: status), token: dispatch).status == 200)
            }
            let draft = try #require(try await InvoiceTests.drafts(api, token: dispatch).first { $0.orders.map(\.id) == [fenced.id] })
            let detention = try #require(draft.lines.first { $0.kind == .detention })
            #expect(detention.amountCents == 15_00 && detention.orderID == fenced.id, "\(draft.lines)")
            #expect(detention.description == "Detention at pickup, order \(fenced.number): 15 min beyond 15 min free at $60.00/h")
            // A price corrected on the delivered order follows on the draft; its detention stays.
            var vehicle = try #require(try await api.call(.dispatchOrder, fenced.id.rawValue, token: dispatch).decode(Order.self).vehicles.first)
            vehicle.priceCents = 123_400
            #expect(try await api.call(.dispatchUpdateOrder, fenced.id.rawValue, json: UpdateOrderRequest(vehicles: [vehicle]), token: dispatch).status == 200)
            let followed = try #require(try await InvoiceTests.drafts(api, token: dispatch).first { $0.orders.map(\.id) == [fenced.id] })
            #expect(followed.lines.map(\.amountCents) == [123_400, 15_00], "\(followed.lines)")
            // Billed with another order on one invoice: its detention comes along from the draft it leaves.
            let other = try await InvoiceTests.delivered("SD-2", prices: [50_000], customer: customer.id, trip: carrier.trips[0][0].id, api: api,
                                                         token: dispatch)
            let together = try await api.call(.dispatchCreateInvoice, json: CreateInvoiceRequest(orderIDs: [fenced.id, other.id]), token: dispatch)
            #expect(together.status == 201, "\(together.text)")
            #expect(try together.decode(Invoice.self).totalCents == 123_400 + 50_000 + 15_00)
        }
    }

    @Test("a driver's problem at a stop is recorded once (API and mutation), refused where it cannot be, told to dispatch in the conversation; a dry run and waiting bill the fee and detention",
          arguments: TestBackend.available)
    func problemsAtAStop(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let driver = alpha.driver.accessToken, dispatch = alpha.dispatcher.accessToken
        try await server.run { api in
            try await Self.setTerms(api, token: dispatch)
            let customer = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(name: "Joliet Auto Auction"), token: dispatch)
                .decode(Customer.self)
            let order = alpha.orders[alpha.trips[0][0].id]![0]
            #expect(try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(customerID: customer.id),
                                       token: dispatch).status == 200)
            // Three hours after dispatch booked it (tokens last an hour: both sign in again).
            server.clock.advance(by: 3 * 3600)
            let dispatch = try await api.signIn(alpha.dispatcher.user.email, server: server).accessToken
            let driver = try await api.signIn(alpha.driver.user.email, server: server).accessToken
            // A report that says the driver waited before the order existed counts from when it did.
            let waitingSince = server.clock.now.addingTimeInterval(-3 * 3600)
            let waiting = ReportStopProblemRequest(orderID: order.id, stop: .pickup, kind: .waiting, note: "Gate says 2 more hours",
                                                   reportedAt: waitingSince)
            let first = try await api.call(.reportStopProblem, json: waiting, token: driver)
            #expect(first.status == 201, "\(first.text)")
            #expect(try first.decode(Order.self).problems.map(\.kind) == [.waiting])
            // Sent again (no answer reached the phone): once.
            #expect(try await api.call(.reportStopProblem, json: waiting, token: driver).decode(Order.self).problems.count == 1)
            var reused = waiting
            reused.kind = .keysMissing
            #expect(try await api.call(.reportStopProblem, json: reused, token: driver).errorCode == "idempotency_key_reused")
            // Where it cannot be: the delivery before the pickup, another driver's order, another carrier, dispatch.
            let early = ReportStopProblemRequest(orderID: order.id, stop: .delivery, kind: .waiting)
            #expect(try await api.call(.reportStopProblem, json: early, token: driver).errorCode == "invalid_transition")
            let mine = ReportStopProblemRequest(orderID: order.id, stop: .pickup, kind: .keysMissing)
            let sibling = try await api.signIn(alpha.drivers[1].user.email, server: server).accessToken
            let outsider = try await api.signIn(beta.driver.user.email, server: server).accessToken
            #expect(try await api.call(.reportStopProblem, json: mine, token: sibling).status == 404)
            #expect(try await api.call(.reportStopProblem, json: mine, token: outsider).status == 404)
            // A problem id is the report's wherever it is used: on another order, or by another carrier's driver, it is refused.
            var elsewhere = waiting
            elsewhere.orderID = alpha.orders[alpha.trips[0][0].id]![1].id
            #expect(try await api.call(.reportStopProblem, json: elsewhere, token: driver).errorCode == "idempotency_key_reused")
            #expect(try await api.call(.reportStopProblem, json: mine, token: dispatch).status == 403)
            let long = ReportStopProblemRequest(orderID: order.id, stop: .pickup, kind: .damage, note: String(repeating: "x", count: 1001))
            #expect(try await api.call(.reportStopProblem, json: long, token: driver).status == 422)

            // A dry run through the offline queue, sent twice: applied once.
            let dryRun = Mutation(.reportStopProblem(ReportStopProblemRequest(orderID: order.id, stop: .pickup, kind: .dryRun,
                                                                                note: "No vehicle at the lot")))
            for _ in 0..<2 {
                let batch = try await api.call(.mutations, json: MutationBatch([dryRun]), token: driver).decode(MutationBatchResult.self)
                #expect(batch.results.map(\.outcome) == [.applied], "\(batch.results)")
            }
            let seen = try await api.call(.dispatchOrder, order.id.rawValue, token: dispatch).decode(Order.self)
            #expect(seen.problems.map(\.kind) == [.waiting, .dryRun])
            #expect(abs(seen.problems[0].reportedAt.timeIntervalSince(order.createdAt)) < 0.001, "clamped to the order's creation")

            // Dispatch reads each as a line of the driver's conversation.
            let lines = try await api.call(.dispatchConversation, alpha.driverID(0).rawValue, token: dispatch).decode(Items<ConversationLine>.self).items
            #expect(lines.filter { $0.body.hasPrefix("Problem reported:") }.map(\.body)
                    == ["Problem reported: Waiting at the stop at pickup: Gate says 2 more hours",
                        "Problem reported: Dry run (nothing to load) at pickup: No vehicle at the lot"], "\(lines.map(\.body))")

            // Picked up 2 h 40 min after the driver said they were waiting: 2 h 25 min beyond the free 15, billed 2 h 15 min... in quarters.
            let pickedUp = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(status: .pickedUp), token: dispatch)
            #expect(pickedUp.status == 200, "\(pickedUp.text)")
            let visit = try pickedUp.decode(Order.self).visit(.pickup)
            #expect(visit.endsAtStatusMark && visit.arrivedAt != nil)
            #expect(try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(status: .delivered), token: dispatch).status == 200)
            // A new invoice asking for the stop charges bills both, once each, beside what dispatch typed.
            for draft in try await InvoiceTests.drafts(api, token: dispatch) {
                #expect(try await api.call(.dispatchVoidInvoice, draft.id.rawValue, json: VoidInvoiceRequest(reason: "again"), token: dispatch).status == 200)
            }
            let made = try await api.call(.dispatchCreateInvoice, json: CreateInvoiceRequest(orderIDs: [order.id], charges: [
                InvoiceCharge(kind: .fuelSurcharge, description: "Fuel", amountCents: 25_00)], stopCharges: true), token: dispatch)
            #expect(made.status == 201, "\(made.text)")
            let invoice = try made.decode(Invoice.self)
            let detention = try #require(invoice.lines.first { $0.kind == .detention })
            #expect(detention.amountCents == 165 * 60_00 / 60, "2 h 45 min at $60.00/h: \(invoice.lines)")
            #expect(invoice.lines.filter { $0.kind == .dryRun }.map(\.amountCents) == [200_00])
            #expect(invoice.lines.filter { $0.kind == .fuelSurcharge }.count == 1)

            // Nothing to load, and dispatch cancels the order: its draft bills the dry run, not the vehicle.
            let second = alpha.orders[alpha.trips[0][0].id]![1]
            #expect(try await api.call(.dispatchUpdateOrder, second.id.rawValue, json: UpdateOrderRequest(customerID: customer.id),
                                       token: dispatch).status == 200)
            #expect(try await api.call(.reportStopProblem, json: ReportStopProblemRequest(orderID: second.id, stop: .pickup, kind: .dryRun),
                                       token: driver).status == 201)
            let cancelled = try await api.call(.dispatchUpdateOrder, second.id.rawValue, json: UpdateOrderRequest(status: .cancelled), token: dispatch)
            #expect(cancelled.status == 200, "\(cancelled.text)")
            let fee = try #require(try await InvoiceTests.drafts(api, token: dispatch).first { $0.orders.map(\.id) == [second.id] })
            #expect(fee.lines.map(\.kind) == [.dryRun] && fee.totalCents == 200_00, "\(fee.lines)")
        }
    }

    /// Sends a photo with tus in one piece; the answer to its creation (and, when made, to its bytes).
    static func upload(_ photo: [UInt8], metadata: [String: String], token: String, api: TestAPI) async throws -> (created: Int, finished: Int?) {
        let created = try await api.call(.createUpload, token: token, headers: [
            "Tus-Resumable": Tus.version, "Upload-Length": String(photo.count), "Upload-Metadata": Tus.encodeMetadata(metadata)])
        guard created.status == 201, let location = created.headers[.location], let upload = location.split(separator: "/").last else {
            return (created.status, nil)
        }
        let patched = try await api.call(.appendUpload, String(upload), bytes: photo, token: token, headers: [
            "Tus-Resumable": Tus.version, "Upload-Offset": "0", "Content-Type": Tus.patchContentType])
        return (created.status, patched.status)
    }

    @Test("a problem's and a message's photos: the driver sends them with tus, dispatch opens them in the console, nobody else can add or see one",
          arguments: TestBackend.available)
    func photos(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let driver = alpha.driver.accessToken
        try await server.run { api in
            let order = alpha.orders[alpha.trips[0][0].id]![0]
            let report = ReportStopProblemRequest(orderID: order.id, stop: .pickup, kind: .damage, note: "Scratch on the rear bumper")
            #expect(try await api.call(.reportStopProblem, json: report, token: driver).status == 201)
            let message = SendDriverMessageRequest(body: "Here is the gate", orderID: order.id)
            #expect(try await api.call(.sendMessage, json: message, token: driver).status == 201)
            let (o, p, m) = (order.id.rawValue, report.id.rawValue, message.id.rawValue)
            let photo = MediaSamples.jpeg(size: 8_000)

            // Another driver of the carrier, another carrier's driver, dispatch, and a problem named on another order: refused.
            for token in [alpha.drivers[1].accessToken, beta.driver.accessToken] {
                #expect(try await Self.upload(photo, metadata: ["problem_id": p, "order_id": o], token: token, api: api).created == 404)
                #expect(try await Self.upload(photo, metadata: ["message_id": m], token: token, api: api).created == 404)
            }
            let otherOrder = alpha.orders[alpha.trips[0][0].id]![1].id.rawValue
            #expect(try await Self.upload(photo, metadata: ["problem_id": p, "order_id": otherOrder], token: driver, api: api).created == 404)
            #expect(try await Self.upload(photo, metadata: ["problem_id": p], token: driver, api: api).created == 400)
            #expect(try await Self.upload(photo, metadata: ["message_id": m, "expense_id": p], token: driver, api: api).created == 400)

            // The driver's: kept, on the order's problem and on the message (the feed carries both to the phone).
            #expect(try await Self.upload(photo, metadata: ["problem_id": p, "order_id": o], token: driver, api: api) == (201, 204))
            #expect(try await Self.upload(MediaSamples.png(size: 6_000), metadata: ["message_id": m], token: driver, api: api) == (201, 204))
            let seen = try await api.call(.order, o, token: driver).decode(Order.self)
            let kept = try #require(seen.problems.first { $0.id == report.id }?.photos.first)
            #expect(kept.contentType == "image/jpeg" && kept.sizeBytes == 8_000)
            let lines = try await api.call(.dispatchConversation, alpha.driverID(0).rawValue, token: alpha.dispatcher.accessToken)
                .decode(Items<ConversationLine>.self).items
            let sent = try #require(lines.first { $0.id == m }?.photos.first)
            #expect(sent.contentType == "image/png")
            // A fifth photo of one problem is refused.
            for _ in 0..<3 { _ = try await Self.upload(photo, metadata: ["problem_id": p, "order_id": o], token: driver, api: api) }
            #expect(try await Self.upload(photo, metadata: ["problem_id": p, "order_id": o], token: driver, api: api).created == 422)

            // Dispatch opens them from the console; another carrier's dispatcher cannot.
            let console = ["Cookie": try await server.services.consoleSignIn(email: alpha.dispatcher.user.email)]
            let bytes = try await api.raw(.get, "/orders/\(o)/problems/\(p)/photos/\(kept.id)", headers: console)
            #expect(bytes.status == 200 && Array(bytes.body) == photo, "\(bytes.status)")
            #expect(try await api.raw(.get, "/messages/\(alpha.driverID(0))/photos/\(m)/\(sent.id)", headers: console).status == 200)
            let outsider = ["Cookie": try await server.services.consoleSignIn(email: beta.dispatcher.user.email)]
            #expect(try await api.raw(.get, "/orders/\(o)/problems/\(p)/photos/\(kept.id)", headers: outsider).status == 404)
            #expect(try await api.raw(.get, "/messages/\(alpha.driverID(0))/photos/\(m)/\(sent.id)", headers: outsider).status == 404)
        }
    }

    @Test("detention counts whole quarter hours beyond the free time and rounds money once; a departure needs two minutes outside")
    func rules() {
        #expect(StopTimes.detentionMinutes(onSite: 2 * 3600 + 44 * 60, freeMinutes: 120) == 30)
        #expect(StopTimes.detentionMinutes(onSite: 119 * 60, freeMinutes: 120) == 0)
        #expect(StopTimes.detentionMinutes(onSite: .infinity, freeMinutes: 120) == 0)
        #expect(StopTimes.detentionMinutes(onSite: .nan, freeMinutes: 0) == 0)
        #expect(StopTimes.detentionMinutes(onSite: 1e300, freeMinutes: 0) > 0)
        #expect(StopTimes.detentionCents(minutes: 45, centsPerHour: 50_00) == 37_50)
        #expect(StopTimes.detentionCents(minutes: 7, centsPerHour: 10_00) == 1_17)  // 116.67 ¢
        #expect(StopTimes.detentionCents(minutes: Int.max, centsPerHour: Int.max) == MoneyFormat.largestCents)
        #expect(MoneyRules.share(of: 10_02, basisPoints: 2500) == 2_51 && MoneyRules.share(of: 10_01, basisPoints: 2500) == 2_50)
        #expect(StopTimes.duration(2 * 3600 + 30 * 60) == "2 h 30 min" && StopTimes.duration(.nan) == "–")
        let fence = Geofence(center: Fixes.yard, radiusMeters: 150)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(fence.departure(after: start, in: Fixes.fixes([40, 400, 40, 40], from: start)) == nil)
        #expect(fence.departure(after: start, in: Fixes.fixes([40, 400, 900, 1500, 2000, 2500], from: start)) == start.addingTimeInterval(30))
    }
}
