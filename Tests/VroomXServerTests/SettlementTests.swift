import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Paying drivers through the real API: a week of percent pay, a fuel
/// receipt the driver paid and an advance comes to the figure worked out by
/// hand; two dispatchers approving at once make one settlement; the
/// statement reads right in `pdftotext` and reaches the driver once; a
/// correction after payment goes on the next week, never into the paid one;
/// a week that comes out negative carries over; other carriers see nothing.
@Suite("Driver settlements")
struct SettlementTests {
    @Test("a week of 25 % pay, a reimbursed fuel receipt, an advance and insurance settles to the hand-worked figure; corrections and a negative balance go to later weeks",
          arguments: TestBackend.available)
    func weekSettled(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 0)
        let driver = alpha.driverID(0)
        let week = SettlementRules.week(of: LocalDate(server.clock.now))
        try await server.run { api in
            var (dispatch, driverToken) = (alpha.dispatcher.accessToken, alpha.driver.accessToken)
            /// Tokens outlive no week: sign in again after the clock moves.
            func signInAgain() async throws {
                dispatch = try await server.services.signIn(email: "dispatch@alpha.example").accessToken
                driverToken = try await server.services.signIn(email: "driver0@alpha.example").accessToken
            }
            // A trip that ended on the week's Monday: 25 % of $4,150.30 is $1,037.575, which rounds half a cent up to $1,037.58.
            let trip = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(
                number: "T-500", driverID: driver, startDate: week.start.adding(days: -2), endDate: week.start,
                origin: "Houston, TX", destination: "Atlanta, GA", revenueCents: 415_030, miles: 790), token: dispatch).decode(Trip.self)
            #expect(trip.driverPayCents == 103_758)
            for status in [TripStatus.inProgress, .completed] {
                #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(status: status), token: dispatch).status == 200)
            }
            // The driver paid $412.37 of fuel and photographed the receipt.
            let fuel = try await api.call(.createExpense, json: CreateExpenseRequest(tripID: trip.id, category: .fuel, amountCents: 41_237,
                                                                                     date: week.start, notes: "Pilot #412"), token: driverToken)
            #expect(fuel.status == 201, "\(fuel.text)")
            let expense = try fuel.decode(Expense.self)
            #expect(try await api.call(.addExpenseReceipt, expense.id.rawValue, bytes: MediaSamples.jpeg(size: 8_000), token: driverToken).status == 201)
            // Dispatch gave a $300 advance on the road; insurance is $85.50 a week.
            let advance = try await api.call(.dispatchAddPayItem, driver.rawValue, json: CreatePayItemRequest(
                kind: .advance, description: "Cash advance, Baton Rouge", amountCents: 30_000, date: week.start), token: dispatch)
            #expect(advance.status == 201, "\(advance.text)")
            let insurance = try await api.call(.dispatchAddDeduction, driver.rawValue, json: CreateRecurringDeductionRequest(
                description: "Occupational accident insurance", amountCents: 8_550), token: dispatch)
            #expect(insurance.status == 201, "\(insurance.text)")

            // By hand: trip pay 1,037.58 + fuel 412.37 − advance 300.00 − insurance 85.50 = 1,064.45.
            let byHand = 103_758 + 41_237 - 30_000 - 8_550
            #expect(byHand == 106_445)
            let open = try await api.call(.dispatchDriverPay, driver.rawValue, token: dispatch).decode(DriverPaySetup.self).settlement
            #expect(open.status == .open && open.id == nil)
            #expect(open.lines.map(\.kind) == [.tripPay, .reimbursement, .advance, .deduction], "\(open.lines)")
            #expect(open.lines.map(\.amountCents) == [103_758, 41_237, -30_000, -8_550])
            #expect(open.earningsCents == 103_758 && open.reimbursementsCents == 41_237 && open.deductionsCents == 38_550 && open.netCents == byHand)
            #expect(open.lines[1].description.contains("Pilot #412") && open.lines[1].description.contains("receipt"), "\(open.lines[1])")
            // The driver sees the same week in Earnings.
            let earnings = try await api.call(.earnings, token: driverToken).decode(Earnings.self)
            #expect(earnings.current.netCents == byHand && earnings.current.status == .open && earnings.settlements.isEmpty)

            // Two dispatchers approve at the same moment: one settlement.
            let approve = ApproveSettlementRequest(week: week.start)
            let approver = dispatch
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<2 {
                    group.addTask { try await api.call(.dispatchApproveSettlement, driver.rawValue, json: approve, token: approver).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }.sorted()
            }
            #expect(statuses == [201, 409])
            let approved = try #require(try await api.call(.dispatchSettlements, query: "week=\(week.end)", token: dispatch)
                .decode(Items<Settlement>.self).items.first { $0.driverID == driver })
            #expect(approved.status == .approved && approved.netCents == byHand && approved.lines == open.lines)
            let id = try #require(approved.id)
            // What it took is not taken again, and cannot be removed from under it.
            #expect(try await api.call(.dispatchRemovePayItem, driver.rawValue, try advance.decode(DriverPayItem.self).id.rawValue,
                                       token: dispatch).status == 409)

            // The statement: emailed to the driver once, and it reads right.
            try await waitUntil("the statement is mailed") { server.mailbox.latest(to: "driver0@alpha.example")?.subject.hasPrefix("Settlement") == true }
            let mail = try #require(server.mailbox.latest(to: "driver0@alpha.example"))
            #expect(mail.subject.contains("$1,064.45 net") && mail.attachments.count == 1, "\(mail.subject)")
            let words = try await InvoiceTests.pdfWords(Data(mail.attachments[0].bytes), keep: "settlement.pdf")
            for expected in ["DRIVER SETTLEMENT", "Driver 0 of Alpha", "Trip pay: T-500", "Houston, TX", "Atlanta, GA · 790 mi $1,037.58",
                             "Reimbursement: Fuel", "Advance: Cash advance, Baton Rouge", "-$300.00", "Occupational accident insurance",
                             "Net pay $1,064.45"] {
                #expect(words.contains(expected), "\(expected) is not in:\n\(words)")
            }
            let pdf = try await api.call(.settlementStatement, id.rawValue, token: driverToken)
            #expect(pdf.status == 200 && pdf.text.hasPrefix("%PDF"))

            // Paid by check. Then the fuel turns out to have gone on the company's card (the driver deletes the expense),
            // and dispatch owes $62.42 more for T-500 (pay agreed at $1,100.00).
            let paid = try await api.call(.dispatchMarkSettlementPaid, id.rawValue,
                                          json: MarkSettlementPaidRequest(reference: "CHK 2207"), token: dispatch).decode(Settlement.self)
            #expect(paid.status == .paid && paid.paidReference == "CHK 2207" && paid.paidOn == LocalDate(server.clock.now))
            #expect(try await api.call(.dispatchReopenSettlement, id.rawValue, token: dispatch).status == 409)
            #expect(try await api.call(.deleteExpense, expense.id.rawValue, token: driverToken).status == 204)
            #expect(try await api.call(.dispatchAddPayItem, driver.rawValue, json: CreatePayItemRequest(
                kind: .bonus, description: "T-500 pay agreed at $1,100.00", amountCents: 6_242), token: dispatch).status == 201)
            let unchanged = try await api.call(.dispatchSettlement, id.rawValue, token: dispatch).decode(Settlement.self)
            #expect(unchanged.lines == paid.lines && unchanged.netCents == byHand, "a paid week is never rewritten")
            // Next week: the fuel back, the pay owed, the insurance again: −412.37 + 62.42 − 85.50 = −435.45.
            server.clock.advance(by: 7 * 86_400)
            try await signInAgain()
            let next = try await api.call(.dispatchDriverPay, driver.rawValue, token: dispatch).decode(DriverPaySetup.self).settlement
            #expect(next.lines.map(\.kind) == [.bonus, .correction, .deduction] && next.lines.map(\.amountCents) == [6_242, -41_237, -8_550],
                    "\(next.lines)")
            #expect(next.earningsCents == 6_242 && next.reimbursementsCents == -41_237, "the fuel taken back is a reimbursement's, not pay")
            #expect(next.lines[1].description.contains("Pilot #412"), "says which expense: \(next.lines[1].description)")
            #expect(next.netCents == -43_545)
            let negative = try await api.call(.dispatchApproveSettlement, driver.rawValue,
                                              json: ApproveSettlementRequest(week: LocalDate(server.clock.now), email: false), token: dispatch)
            #expect(negative.status == 201, "\(negative.text)")
            let negativeID = try negative.decode(Settlement.self).id!.rawValue
            // Nothing is paid on a week that came out negative.
            let unpaid = try await api.call(.dispatchMarkSettlementPaid, negativeID, json: MarkSettlementPaidRequest(), token: dispatch)
            #expect(unpaid.status == 409 && unpaid.text.contains("negative"), "\(unpaid.text)")
            // The week after carries the balance; nothing else is owed.
            server.clock.advance(by: 7 * 86_400)
            try await signInAgain()
            let after = try await api.call(.earnings, token: driverToken).decode(Earnings.self)
            #expect(after.current.lines.map(\.kind) == [.carriedBalance, .deduction] && after.current.netCents == -8_550 - 43_545,
                    "\(after.current.lines)")
            #expect(after.settlements.map(\.netCents) == [-43_545, byHand])
            // Once a later week is approved (it carried the balance), the earlier one is not reopened: it would count twice.
            let carried = try await api.call(.dispatchApproveSettlement, driver.rawValue,
                                             json: ApproveSettlementRequest(week: LocalDate(server.clock.now), email: false), token: dispatch)
            #expect(carried.status == 201, "\(carried.text)")
            let reopenEarlier = try await api.call(.dispatchReopenSettlement, negativeID, token: dispatch)
            #expect(reopenEarlier.status == 409 && reopenEarlier.text.contains("later week"), "\(reopenEarlier.text)")
            let reopened = try await api.call(.dispatchReopenSettlement, try carried.decode(Settlement.self).id!.rawValue, token: dispatch)
            #expect(reopened.status == 200, "\(reopened.text)")
            #expect(try reopened.decode(Settlement.self).status == .open)

            // Refusals, each with its field.
            for (request, field) in [(CreatePayItemRequest(kind: .bonus, description: "x", amountCents: 0), "amount_cents"),
                                     (CreatePayItemRequest(kind: .bonus, description: "x", amountCents: Int.max), "amount_cents"),
                                     (CreatePayItemRequest(kind: .bonus, description: String(repeating: "x", count: 201), amountCents: 5), "description"),
                                     (CreatePayItemRequest(kind: .bonus, description: "x", amountCents: 5, date: week.start.adding(days: 999)), "date")] {
                let refused = try await api.call(.dispatchAddPayItem, driver.rawValue, json: request, token: dispatch)
                #expect(refused.status == 422 && refused.text.contains("\"field\":\"\(field)\""), "\(refused.text)")
            }
            let future = try await api.call(.dispatchApproveSettlement, driver.rawValue,
                                            json: ApproveSettlementRequest(week: LocalDate(server.clock.now).adding(days: 14)), token: dispatch)
            #expect(future.status == 422 && future.text.contains("\"field\":\"week\""), "\(future.text)")
            let early = try await api.call(.dispatchMarkSettlementPaid, try negative.decode(Settlement.self).id!.rawValue,
                                           json: MarkSettlementPaidRequest(paidOn: week.start), token: dispatch)
            #expect(early.status == 422 && early.text.contains("\"field\":\"paid_on\""), "\(early.text)")

            // Another carrier sees nothing of it; a driver is no dispatcher.
            let other = try await server.services.signIn(email: "dispatch@beta.example").accessToken
            let betaDriver = try await server.services.signIn(email: "driver0@beta.example").accessToken
            #expect(try await api.call(.dispatchSettlement, id.rawValue, token: other).status == 404)
            #expect(try await api.call(.dispatchSettlementStatement, id.rawValue, token: other).status == 404)
            #expect(try await api.call(.dispatchDriverPay, driver.rawValue, token: other).status == 404)
            #expect(try await api.call(.dispatchApproveSettlement, driver.rawValue, json: approve, token: other).status == 404)
            #expect(try await api.call(.dispatchAddPayItem, driver.rawValue, json: CreatePayItemRequest(kind: .bonus, description: "x", amountCents: 5),
                                       token: other).status == 404)
            #expect(try await api.call(.settlementStatement, id.rawValue, token: betaDriver).status == 404)
            #expect(try await api.call(.dispatchSettlement, id.rawValue, token: driverToken).status == 403)
            #expect(try await api.call(.dispatchSettlements, token: other).decode(Items<Settlement>.self).items.allSatisfy { $0.driverID != driver })
        }
    }

    @Test("pay per vehicle follows the vehicles a trip carries (an order added, cancelled, moved off) until dispatch sets it by hand; the week pays it",
          arguments: TestBackend.available)
    func payPerVehicle(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 0, tripsPerDriver: 0)
        try await server.run { api in
            let dispatch = alpha.dispatcher.accessToken
            let created = try await api.call(.dispatchCreateDriver, json: CreateDriverRequest(
                email: "lee@alpha.example", name: "Lee Park", payType: .perVehicle, payRate: 15_000), token: dispatch)
            #expect(created.status == 201, "\(created.text)")
            let driver = try created.decode(Driver.self)
            let trip = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(number: "T-PV", driverID: driver.id, origin: "Dallas, TX",
                                                                                        destination: "Denver, CO", revenueCents: 600_000, miles: 800),
                                          token: dispatch).decode(Trip.self)
            #expect(trip.driverPayCents == 0, "no vehicles yet")
            func order(_ number: String, vehicles: Int, trip: ID<Trip>?) async throws -> Order {
                let cars = (0..<vehicles).map { Vehicle(year: 2020 + $0, make: "Ford", model: "Escape", priceCents: 40_000) }
                let answer = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                    number: number, tripID: trip, vehicles: cars, pickup: Stop(address: "1 Lot Rd, Dallas, TX"),
                    delivery: Stop(address: "2 Dealer Way, Denver, CO")), token: dispatch)
                #expect(answer.status == 201, "\(answer.text)")
                return try answer.decode(Order.self)
            }
            func pay() async throws -> Int { try await api.call(.dispatchTrip, trip.id.rawValue, token: dispatch).decode(Trip.self).driverPayCents }
            let first = try await order("PV-1", vehicles: 3, trip: trip.id)
            #expect(try await pay() == 45_000, "3 × $150")
            let second = try await order("PV-2", vehicles: 2, trip: nil)
            #expect(try await api.call(.dispatchAssignOrder, second.id.rawValue, json: AssignOrderRequest(tripID: trip.id), token: dispatch).status == 200)
            #expect(try await pay() == 75_000, "5 × $150")
            #expect(try await api.call(.dispatchUpdateOrder, second.id.rawValue, json: UpdateOrderRequest(status: .cancelled), token: dispatch).status == 200)
            #expect(try await pay() == 45_000, "a cancelled order's vehicles are not carried")
            // Set by hand, the pay stays whatever comes onto the trip.
            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(driverPayCents: 50_000), token: dispatch).status == 200)
            let third = try await order("PV-3", vehicles: 1, trip: trip.id)
            #expect(try await pay() == 50_000)
            // Carried to the end: both loads delivered, the trip completed.
            for carried in [first, third] {
                for status in [OrderStatus.pickedUp, .delivered] {
                    #expect(try await api.call(.dispatchUpdateOrder, carried.id.rawValue, json: UpdateOrderRequest(status: status), token: dispatch).status == 200)
                }
            }
            #expect(try await pay() == 50_000, "delivering changes nothing of what the trip carried")
            // Counted by the database as an order at hand counts: 3 + 1, the cancelled 2 left out; a row whose
            // list of vehicles is empty (written before orders listed them) carries its one vehicle.
            let carriedNow = try await server.store.read { try await TripService.vehicleCount(trip.id, tenant: alpha.tenant.id, $0) }
            let atHand = try await server.store.read { try await OrderRepository.onTrip(trip.id, tenant: alpha.tenant.id, $0) }
            #expect(carriedNow == 4 && carriedNow == atHand.reduce(0) { $0 + TripService.carried($1) }, "\(carriedNow)")
            try await server.store.writeRows { try await $0.execute("UPDATE orders SET vehicles = '[]' WHERE id = \(first.id)") }
            #expect(try await server.store.read { try await TripService.vehicleCount(trip.id, tenant: alpha.tenant.id, $0) } == 2)
            for status in [TripStatus.inProgress, .completed] {
                #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(status: status), token: dispatch).status == 200)
            }
            let week = try await api.call(.dispatchDriverPay, driver.id.rawValue, token: dispatch).decode(DriverPaySetup.self).settlement
            #expect(week.lines.map(\.amountCents) == [50_000] && week.netCents == 50_000, "\(week.lines)")
            // A rate past the per-vehicle limit is refused with its field.
            let tooMuch = try await api.call(.dispatchCreateDriver, json: CreateDriverRequest(
                email: "max@alpha.example", name: "Max", payType: .perVehicle, payRate: 10_000_01), token: dispatch)
            #expect(tooMuch.status == 422 && tooMuch.text.contains("\"field\":\"pay_rate\""), "\(tooMuch.text)")
        }
    }

    @Test("approving a week before the driver's first settlement settles that week alone: the start does not move back over what was paid before; totals are exact", arguments: TestBackend.available)
    func earlierWeekApprovedLater(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let (store, tenant, driver) = (server.store, alpha.tenant.id, alpha.driverID(0))
        let owner = Scope.driver(tenant: tenant, driver: driver)
        let trip = alpha.trips[0][0].id
        let today = LocalDate(server.clock.now)
        // Expenses three weeks and two weeks ago (before VroomX settled this driver: paid the old way), and this week's.
        for (weeksAgo, cents) in [(3, 1_100), (2, 2_200)] {
            _ = try await store.expenses.create(CreateExpenseRequest(id: ID(), tripID: trip, category: .tolls, amountCents: cents,
                                                                     date: today.adding(days: -7 * weeksAgo)), owner)
        }
        let first = try await store.settlements.approve(driver: driver, ApproveSettlementRequest(week: today, email: false), tenant: tenant)
        #expect(!first.lines.contains { $0.amountCents == 1_100 || $0.amountCents == 2_200 })
        // Later that day dispatch settles the week of three weeks ago on purpose: that week's expense alone.
        server.clock.advance(by: 3600)
        let early = try await store.settlements.approve(driver: driver, ApproveSettlementRequest(week: today.adding(days: -21), email: false),
                                                        tenant: tenant)
        #expect(early.lines.map(\.amountCents) == [1_100], "\(early.lines)")
        // Next week takes nothing from before the first settlement: the week two weeks ago is still flagged, not swept in.
        let next = try await store.settlements.setup(driver: driver, week: today.adding(days: 7), tenant: tenant)
        #expect(!next.settlement.lines.contains { $0.amountCents == 2_200 }, "\(next.settlement.lines)")
        #expect(next.earlierUnsettledFrom == today.adding(days: -14))
        // Totals are the lines' exact sum, also past what one money field holds (such a week is refused at approval).
        let huge = Array(repeating: SettlementLine(kind: .tripPay, description: "T", amountCents: MoneyFormat.largestCents), count: 3)
        #expect(SettlementRules.totals(of: huge).net == 3 * MoneyFormat.largestCents && !SettlementRules.totalsFit(huge))
    }
}
