import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The carrier's trucks and trailers through the API: who sees which unit,
/// odometer readings that only go up, the fuel log, papers that run out,
/// CSV imports and bulk changes.
@Suite("Fleet")
struct FleetTests {
    @Test("dispatch adds units and gives them to drivers; a driver sees only their own, in the feed too; a wrong VIN check digit needs confirming",
          arguments: TestBackend.available)
    func unitsAndAssignment(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let (first, second) = (carrier.drivers[0].accessToken, carrier.drivers[1].accessToken)
        try await server.run { api in
            // 1XPBDP9X9KD123456 is valid; with a 1 in position 9 its check digit is wrong.
            let typo = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "T-12", vin: "1XPBDP9X1KD123456"),
                                          token: dispatch)
            #expect(typo.status == 422 && typo.errorCode == "vin_check_digit" && typo.error?.field == "vin", "\(typo.text)")
            #expect(typo.error?.message.contains("should be 9") == true)
            let confirmed = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(
                kind: .truck, unitNumber: "T-OLD", vin: "1XPBDP9X1KD123456", acceptVINWarning: true), token: dispatch)
            #expect(confirmed.status == 201, "\(confirmed.text)")
            // Confirmed once, the saved VIN is not questioned when the unit is edited with it.
            let old = try confirmed.decode(Equipment.self)
            let remade = try await api.call(.dispatchUpdateEquipment, old.id.rawValue, json: EquipmentFields(
                make: "Freightliner", vin: "1XPBDP9X1KD123456"), token: dispatch)
            #expect(remade.status == 200, "\(remade.text)")

            let truck = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(
                kind: .truck, unitNumber: "T-12", make: "Peterbilt", model: "389", year: 2019, vin: "1xpbdp9x9kd123456",
                plate: "tx 4kh 221", plateState: "tx", specs: EquipmentSpecs(gvwrPounds: 80_000, fuelType: .diesel)), token: dispatch)
            #expect(truck.status == 201, "\(truck.text)")
            let unit = try truck.decode(Equipment.self)
            #expect(unit.vin == "1XPBDP9X9KD123456" && unit.plate == "TX 4KH 221" && unit.plateState == "TX" && unit.status == .active)
            for lookalike in [" t-12 ", "Ｔ-12", "T\u{2011}12".replacingOccurrences(of: "\u{2011}", with: "-")] {
                let duplicate = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .trailer, unitNumber: lookalike), token: dispatch)
                #expect(duplicate.status == 409 && duplicate.error?.field == "unit_number", "\(lookalike): \(duplicate.text)")
            }
            let composed = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "Caf\u{E9}-1"), token: dispatch)
            #expect(composed.status == 201)
            #expect(try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "Cafe\u{301}-1"), token: dispatch).status == 409)
            for hidden in ["NL-1\nNL-2", "A\u{202E}1-T", String(repeating: "👨‍👩‍👧", count: 12)] {
                let refused = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: hidden), token: dispatch)
                #expect(refused.status == 422 && refused.error?.field == "unit_number", "\(refused.text)")
            }
            for (fields, field) in [
                (EquipmentFields(kind: .truck, unitNumber: "X1", year: LocalDate(Date()).year + 2), "year"),
                (EquipmentFields(kind: .truck, unitNumber: "X2", plateState: "Texas"), "plate_state"),
                (EquipmentFields(kind: .truck, unitNumber: "X3", specs: EquipmentSpecs(capacityCars: 9)), "specs.trailer_type"),
                (EquipmentFields(kind: .trailer, unitNumber: "X4", specs: EquipmentSpecs(trailerType: .open, capacityCars: 99)), "specs.capacity_cars"),
                (EquipmentFields(kind: .truck, unitNumber: "X5", vin: "SHORT"), "vin"),
                (EquipmentFields(kind: .truck, unitNumber: ""), "unit_number"),
                (EquipmentFields(unitNumber: "X6"), "kind"),
            ] {
                let refused = try await api.call(.dispatchCreateEquipment, json: fields, token: dispatch)
                #expect(refused.status == 422 && refused.error?.field == field, "\(field): \(refused.text)")
            }

            // Nobody's until assigned.
            #expect(try await api.call(.equipment, token: first).decode(Items<Equipment>.self).items.isEmpty)
            #expect(try await api.call(.equipmentUnit, unit.id.rawValue, token: first).status == 404)
            let cursor = try await api.call(.sync, query: "since=0", token: second).decode(SyncPage.self).cursor
            _ = try await api.call(.dispatchAssignEquipment, unit.id.rawValue, json: AssignEquipmentRequest(driverID: carrier.driverID(1)), token: dispatch)
            #expect(try await api.call(.equipment, token: second).decode(Items<Equipment>.self).items.map(\.id) == [unit.id])
            #expect(try await api.call(.equipment, token: first).decode(Items<Equipment>.self).items.isEmpty)
            // A second truck for the same driver takes the first back.
            let spare = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "T-14"), token: dispatch)
                .decode(Equipment.self)
            _ = try await api.call(.dispatchAssignEquipment, spare.id.rawValue, json: AssignEquipmentRequest(driverID: carrier.driverID(1)), token: dispatch)
            #expect(try await api.call(.equipment, token: second).decode(Items<Equipment>.self).items.map(\.unitNumber) == ["T-14"])
            _ = try await api.call(.dispatchAssignEquipment, unit.id.rawValue, json: AssignEquipmentRequest(driverID: carrier.driverID(0)), token: dispatch)
            // The second driver's feed: T-12 arrived, then left; T-14 is theirs.
            let feed = try await api.call(.sync, query: "since=\(cursor)", token: second).decode(SyncPage.self).changes
            let last = Dictionary(feed.filter { $0.entity == .equipment }.map { ($0.id, $0.op) }) { _, later in later }
            #expect(last == [unit.id.rawValue: .delete, spare.id.rawValue: .upsert], "\(feed.map { "\($0.entity) \($0.id) \($0.op)" })")
            #expect(try await api.call(.equipmentUnit, unit.id.rawValue, token: second).status == 404)
            #expect(try await api.call(.equipmentUnit, unit.id.rawValue, token: first).decode(Equipment.self).driverID == carrier.driverID(0))
            // A fresh snapshot of the first driver carries their truck.
            let snapshot = try await api.call(.sync, query: "since=0", token: first).decode(SyncPage.self).changes
            #expect(snapshot.filter { $0.entity == .equipment }.map(\.id) == [unit.id.rawValue])

            // Retiring a unit takes it off its driver; a retired unit cannot be given to anyone.
            let retired = try await api.call(.dispatchUpdateEquipment, unit.id.rawValue, json: EquipmentFields(status: .retired), token: dispatch)
                .decode(Equipment.self)
            #expect(retired.status == .retired && retired.driverID == nil)
            let refused = try await api.call(.dispatchAssignEquipment, unit.id.rawValue, json: AssignEquipmentRequest(driverID: carrier.driverID(0)),
                                             token: dispatch)
            #expect(refused.status == 409, "\(refused.text)")
            // Filters.
            let trucks = try await api.call(.dispatchEquipment, query: "kind=truck&status=active", token: dispatch).decode(Items<Equipment>.self)
            #expect(trucks.items.map(\.unitNumber) == ["Caf\u{E9}-1", "T-14", "T-OLD"])
            #expect(try await api.call(.dispatchEquipment, query: "status=parked", token: dispatch).status == 400)
        }
    }

    @Test("odometer readings only go up, in the order they were taken; a dispatcher's edit and a driver's reading both survive",
          arguments: TestBackend.available)
    func odometer(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let driver = carrier.driver.accessToken
        let now = server.clock.now
        try await server.run { api in
            let unit = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "T-12"), token: dispatch)
                .decode(Equipment.self)
            _ = try await api.call(.dispatchAssignEquipment, unit.id.rawValue, json: AssignEquipmentRequest(driverID: carrier.driverID(0)), token: dispatch)
            func read(_ miles: Int, hoursAgo: Double, id: ID<OdometerReading>? = nil, token: String? = nil) async throws -> APIResponse {
                try await api.call(.recordOdometer, json: RecordOdometerRequest(id: id, equipmentID: unit.id, miles: miles,
                                                                                recordedAt: now.addingTimeInterval(-hoursAgo * 3600)),
                                   token: token ?? driver)
            }
            let first = ID<OdometerReading>()
            #expect(try await read(100_000, hoursAgo: 48, id: first).status == 201)
            #expect(try await read(100_000, hoursAgo: 48, id: first).status == 201, "the same reading again is the same reading")
            #expect(try await read(100_900, hoursAgo: 2).status == 201)
            let lower = try await read(100_850, hoursAgo: 1)
            #expect(lower.status == 422 && lower.errorCode == "odometer_decreased" && lower.error?.field == "miles", "\(lower.text)")
            #expect(lower.error?.message.contains("100,900 mi") == true)
            // A reading taken in between (a phone that synced late) fits; one above a later reading does not.
            #expect(try await read(100_400, hoursAgo: 24).status == 201)
            let above = try await read(101_000, hoursAgo: 12)
            #expect(above.status == 422 && above.errorCode == "odometer_decreased", "\(above.text)")
            // The unit shows the latest reading, not the last one to arrive.
            let shown = try await api.call(.equipmentUnit, unit.id.rawValue, token: driver).decode(Equipment.self)
            #expect(shown.odometerMiles == 100_900)
            // A digit too many is not a reading: more than the truck can have driven since the last one.
            let typo = try await read(1_009_000, hoursAgo: 1)
            #expect(typo.status == 422 && typo.error?.field == "miles" && typo.error?.message.contains("more than it can have driven") == true, "\(typo.text)")
            #expect(try await read(-1, hoursAgo: 0).status == 422)
            #expect(try await read(10_000_000, hoursAgo: 0).status == 422)
            #expect(try await read(100_950, hoursAgo: -1).status == 422, "an hour in the future")
            // Another driver cannot read this truck's odometer; dispatch can.
            #expect(try await read(100_950, hoursAgo: 0, token: carrier.drivers[1].accessToken).status == 404)
            let readings = try await api.call(.dispatchOdometerReadings, unit.id.rawValue, token: dispatch).decode(Items<OdometerReading>.self)
            #expect(readings.items.map(\.miles) == [100_900, 100_400, 100_000])

            // Dispatch edits the unit from what it saw (version v) while the driver records a reading: both stand.
            let seen = try await api.call(.dispatchEquipmentUnit, unit.id.rawValue, token: dispatch).decode(Equipment.self)
            #expect(try await read(101_200, hoursAgo: 0).status == 201)
            let edited = try await api.call(.dispatchUpdateEquipment, unit.id.rawValue,
                                            json: EquipmentFields(plate: "TX 1", baseVersion: seen.version), token: dispatch)
            #expect(edited.status == 200, "\(edited.text)")
            let both = try edited.decode(Equipment.self)
            #expect(both.plate == "TX 1" && both.odometerMiles == 101_200)
            // Two dispatchers editing from the same version: the second is a conflict.
            let stale = try await api.call(.dispatchUpdateEquipment, unit.id.rawValue,
                                           json: EquipmentFields(plate: "TX 2", baseVersion: seen.version), token: dispatch)
            #expect(stale.status == 409 && stale.errorCode == "conflict", "\(stale.text)")
            #expect(try await api.call(.dispatchUpdateEquipment, unit.id.rawValue, json: EquipmentFields(notes: "x", baseVersion: 0),
                                       token: dispatch).status == 422)

            // Offline, as a mutation: the answer carries the unit with the new reading.
            let mutation = Mutation(.recordOdometer(RecordOdometerRequest(id: ID(), equipmentID: unit.id, miles: 101_500, recordedAt: now)))
            let result = try await api.call(.mutations, json: MutationBatch([mutation]), token: driver).decode(MutationBatchResult.self).results[0]
            guard case .equipment(let row)? = result.row else { Issue.record("no unit in \(result)"); return }
            #expect(result.outcome == .applied && row.odometerMiles == 101_500 && row.version > both.version)

            // A driver who leaves hands their truck back.
            _ = try await api.call(.dispatchAssignTrip, carrier.trips[0][0].id.rawValue, json: AssignTripRequest(driverID: carrier.driverID(1)), token: dispatch)
            #expect(try await api.call(.dispatchDeactivateDriver, carrier.driverID(0).rawValue, token: dispatch).status == 200)
            #expect(try await api.call(.dispatchEquipmentUnit, unit.id.rawValue, token: dispatch).decode(Equipment.self).driverID == nil)
        }
    }

    @Test("fuel bought for a truck gives miles per gallon and cost per mile over a period", arguments: TestBackend.available)
    func fuelLog(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let driver = carrier.driver.accessToken
        let trip = carrier.trips[0][0]
        let today = LocalDate(server.clock.now)
        try await server.run { api in
            let truck = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "T-12"), token: dispatch)
                .decode(Equipment.self)
            let trailer = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .trailer, unitNumber: "TR-7"), token: dispatch)
                .decode(Equipment.self)
            let other = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "T-99"), token: dispatch)
                .decode(Equipment.self)
            for unit in [truck, trailer] {
                _ = try await api.call(.dispatchAssignEquipment, unit.id.rawValue, json: AssignEquipmentRequest(driverID: carrier.driverID(0)),
                                       token: dispatch)
            }
            func fill(_ cents: Int, _ milli: Int, odometer: Int?, daysAgo: Int, unit: ID<Equipment>? = nil, unitOfMeasure: FuelUnit = .gallon,
                      category: ExpenseCategory = .fuel) async throws -> APIResponse {
                try await api.call(.createExpense, json: CreateExpenseRequest(
                    tripID: trip.id, category: category, amountCents: cents, date: today.adding(days: -daysAgo),
                    fuel: FuelPurchase(equipmentID: unit ?? truck.id, quantityMilli: milli, unit: unitOfMeasure, odometerMiles: odometer)),
                    token: driver)
            }
            // Full tanks at 100,000, 100,650 and 101,300 miles: 1,300 miles on the 200 gallons bought after the first.
            #expect(try await fill(45_000, 110_000, odometer: 100_000, daysAgo: 10).status == 201)
            #expect(try await fill(40_000, 100_000, odometer: 100_650, daysAgo: 6).status == 201)
            let third = try await fill(41_000, 378_541, odometer: 101_300, daysAgo: 2, unitOfMeasure: .litre)  // 100 gallons, in litres
            #expect(third.status == 201, "\(third.text)")
            #expect(try third.decode(Expense.self).fuel?.unit == .litre)
            #expect(try await fill(5_000, 10_000, odometer: nil, daysAgo: 40).status == 201, "outside the period")

            let report = try await api.call(.dispatchFuelReport, truck.id.rawValue,
                                            query: "from=\(today.adding(days: -30))&to=\(today)", token: dispatch).decode(FuelReport.self)
            #expect(report.fills == 3 && report.costCents == 126_000 && report.miles == 1_300)
            #expect(report.milesPerGallon == 6.5, "\(report)")
            #expect(report.costPerMileCents == 62.3, "81,000 cents over 1,300 miles: \(report)")
            #expect(abs(report.gallons - 310) < 0.01)
            // The default period is the last 30 days.
            #expect(try await api.call(.dispatchFuelReport, truck.id.rawValue, token: dispatch).decode(FuelReport.self).fills == 3)
            #expect(try await api.call(.dispatchFuelReport, truck.id.rawValue, query: "from=2026-13-01", token: dispatch).status == 400)
            #expect(try await api.call(.dispatchFuelReport, trailer.id.rawValue, token: dispatch).status == 422)
            #expect(try await api.call(.dispatchFuelReport, truck.id.rawValue, query: "to=1900-01-01", token: dispatch).decode(FuelReport.self).from
                    == LocalDate(year: 1900, month: 1, day: 1))
            #expect(try await api.call(.dispatchFuelReport, truck.id.rawValue, query: "from=2020-01-01&to=2026-01-01", token: dispatch).status == 400)

            // Refused: fuel on a toll, a trailer, a truck that is not the driver's, impossible quantities.
            for (response, field) in [
                (try await fill(1_000, 1_000, odometer: nil, daysAgo: 0, category: .tolls), "fuel"),
                (try await fill(1_000, 1_000, odometer: nil, daysAgo: 0, unit: trailer.id), "fuel.equipment_id"),
                (try await fill(1_000, 1_000, odometer: nil, daysAgo: 0, unit: other.id), "fuel.equipment_id"),
                (try await fill(1_000, 0, odometer: nil, daysAgo: 0), "fuel.quantity_milli"),
                (try await fill(1_000, Int.max, odometer: nil, daysAgo: 0), "fuel.quantity_milli"),
                (try await fill(1_000, 1_000, odometer: Int.max, daysAgo: 0), "fuel.odometer_miles"),
            ] {
                #expect(response.status == 422 && response.error?.field == field, "\(field): \(response.text)")
            }
            // A unit of measure the API does not know, named in the client's terms.
            let barrel = try await api.call(.createExpense, body: """
                {"trip_id": "\(trip.id.rawValue)", "category": "fuel", "amount_cents": 1000, "date": "\(today)",
                 "fuel": {"equipment_id": "\(truck.id.rawValue)", "quantity_milli": 1000, "unit": "barrel"}}
                """, token: driver)
            #expect(barrel.status == 422 && barrel.error?.field == "fuel.unit", "\(barrel.text)")
            #expect(barrel.error?.message == "fuel.unit is not one of the values it takes (see /openapi.json).", "\(barrel.text)")
        }
    }

    @Test("a fuel fill's odometer is a reading: a digit dropped is refused naming the last reading, and the report never starts at a typo",
          arguments: TestBackend.available)
    func fillOdometerIsAReading(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let trip = carrier.trips[0][0]
        let today = LocalDate(server.clock.now)
        try await server.run { api in
            let truck = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "T-12"), token: dispatch)
                .decode(Equipment.self)
            _ = try await api.call(.dispatchAssignEquipment, truck.id.rawValue, json: AssignEquipmentRequest(driverID: carrier.driverID(0)),
                                   token: dispatch)
            let read = try await api.call(.recordOdometer, json: RecordOdometerRequest(equipmentID: truck.id, miles: 414_190,
                                                                                         recordedAt: server.clock.now.addingTimeInterval(-3 * 86_400)),
                                          token: dispatch)
            #expect(read.status == 201, "\(read.text)")
            func fill(_ odometer: Int, daysAgo: Int) async throws -> APIResponse {
                try await api.call(.createExpense, json: CreateExpenseRequest(
                    tripID: trip.id, category: .fuel, amountCents: 40_000, date: today.adding(days: -daysAgo),
                    fuel: FuelPurchase(equipmentID: truck.id, quantityMilli: 100_000, unit: .gallon, odometerMiles: odometer)),
                    token: carrier.driver.accessToken)
            }
            let dropped = try await fill(41_419, daysAgo: 0)
            #expect(dropped.status == 422 && dropped.errorCode == "odometer_decreased" && dropped.error?.field == "fuel.odometer_miles",
                    "\(dropped.text)")
            #expect(dropped.error?.message.contains("414,190") == true, "names the last reading: \(dropped.text)")
            let added = try await fill(4_141_900, daysAgo: 0)
            #expect(added.status == 422 && added.error?.field == "fuel.odometer_miles", "a digit too many: \(added.text)")
            #expect(try await fill(414_900, daysAgo: 0).status == 201)
            let unit = try await api.call(.dispatchEquipmentUnit, truck.id.rawValue, token: dispatch).decode(Equipment.self)
            #expect(unit.odometerMiles == 414_900, "the truck's odometer follows the fill")
            #expect(try await fill(415_700, daysAgo: 0).status == 201)
            // A typo stored before fills were readings, dated first in the period: never the start of the distance.
            try await server.services.database.write { db in
                try await db.execute("""
                    INSERT INTO trip_expenses (id, tenant_id, trip_id, driver_id, category, amount_cents, expense_date, notes, created_at, doc,
                                               fuel_equipment_id, fuel_quantity_milli, fuel_unit, fuel_odometer_miles)
                    VALUES (\(ID<Expense>()), \(carrier.tenant.id), \(trip.id), \(carrier.driverID(0)), 'fuel', 40000, \(today.adding(days: -5)), '', 0, '{}',
                            \(truck.id), 100000, 'gal', 41419)
                    """)
            }
            let report = try await api.call(.dispatchFuelReport, truck.id.rawValue, token: dispatch).decode(FuelReport.self)
            #expect(report.fills == 3 && report.miles == 800, "\(report)")
            #expect(report.milesPerGallon == 8, "\(report)")
            // A year typed wrong (2030 for 2026) would store a reading in the future that every true one is lower than.
            // The latest day an expense may carry is today where the day starts first (UTC+14).
            let latest = LocalDate(server.clock.now.addingTimeInterval(14 * 3600))
            let aheadDays = latest == today ? 0 : 1
            let ahead = try await fill(415_800, daysAgo: -aheadDays - 1)
            #expect(ahead.status == 422 && ahead.error?.field == "date", "\(ahead.text)")
            let latestFill = try await fill(415_800, daysAgo: -aheadDays)
            #expect(latestFill.status == 201, "today east of the dateline: \(latestFill.text)")
            #expect(try await api.call(.recordOdometer, json: RecordOdometerRequest(equipmentID: truck.id, miles: 415_900), token: dispatch)
                .status == 201, "a true reading after it goes")
        }
    }

    @Test("a paper running out within 30 days is listed and told to dispatch once", arguments: TestBackend.available)
    func expiringDocuments(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let today = LocalDate(server.clock.now)
        try await server.run { api in
            let unit = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "T-12"), token: dispatch)
                .decode(Equipment.self)
            _ = try await api.call(.dispatchAssignEquipment, unit.id.rawValue, json: AssignEquipmentRequest(driverID: carrier.driverID(0)), token: dispatch)
            for (kind, days) in [(EquipmentDocumentKind.registration, 10), (.insurance, 200), (.annualInspection, -3)] {
                let added = try await api.call(.dispatchAddEquipmentDocument, unit.id.rawValue,
                                               json: AddEquipmentDocumentRequest(kind: kind, number: "N-\(days)", expiresOn: today.adding(days: days)),
                                               token: dispatch)
                #expect(added.status == 201, "\(added.text)")
            }
            let expiring = try await api.call(.dispatchExpiringDocuments, token: dispatch).decode(Items<ExpiringDocument>.self).items
            #expect(expiring.map(\.document.kind) == [.annualInspection, .registration])
            #expect(try await api.call(.dispatchExpiringDocuments, query: "days=365", token: dispatch)
                .decode(Items<ExpiringDocument>.self).items.count == 3)
            // The driver's truck shows its papers.
            let seen = try await api.call(.equipmentUnit, unit.id.rawValue, token: carrier.driver.accessToken).decode(Equipment.self)
            #expect(seen.documents.count == 3)

            let cursor = try await api.call(.sync, query: "since=0", token: dispatch).decode(SyncPage.self).cursor
            #expect(try await server.store.fleet.noticeExpiringPapers() == 2)
            #expect(try await server.store.fleet.noticeExpiringPapers() == 0, "once per document")
            let feed = try await api.call(.sync, query: "since=\(cursor)", token: dispatch).decode(SyncPage.self).changes
            guard case .equipment(let noticed)? = feed.last?.row else { Issue.record("no unit in the feed: \(feed)"); return }
            #expect(noticed.documents.filter { $0.expiryNoticeAt != nil }.map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.annualInspection, .registration])

            let paper = try #require(noticed.documents.first { $0.kind == .insurance })
            let removed = try await api.call(.dispatchDeleteEquipmentDocument, unit.id.rawValue, paper.id.rawValue, token: dispatch)
            #expect(try removed.decode(Equipment.self).documents.count == 2)
            #expect(try await api.call(.dispatchDeleteEquipmentDocument, unit.id.rawValue, paper.id.rawValue, token: dispatch).status == 404)
        }
    }

    @Test("the server's upkeep tells dispatch about a paper running out by itself", arguments: TestBackend.available)
    func upkeepNoticesPapers(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let unit = try await server.store.fleet.create(EquipmentFields(kind: .truck, unitNumber: "T-12"), tenant: carrier.tenant.id)
        _ = try await server.store.fleet.addPaper(
            unit.id, AddEquipmentDocumentRequest(kind: .registration, number: "R-1", expiresOn: LocalDate(server.clock.now).adding(days: 5)),
            tenant: carrier.tenant.id)
        // Upkeep runs as the server starts, then hourly.
        try await server.run(upkeep: true) { api in
            for _ in 0..<1_000 {
                let seen = try await api.call(.dispatchEquipmentUnit, unit.id.rawValue, token: dispatch).decode(Equipment.self)
                if seen.documents.first?.expiryNoticeAt != nil { return }
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("the paper was never noticed")
        }
    }

    @Test("photos of a unit: dispatch and the unit's driver add them (one request or resumable), only they see them, the bytes decide, a unit holds 30",
          arguments: TestBackend.available)
    func unitPhotos(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let other = try await CarrierFixture.make(server, name: "Bravo", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let (driver, sibling) = (carrier.drivers[0].accessToken, carrier.drivers[1].accessToken)
        try await server.run { api in
            let unit = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "T-12"), token: dispatch)
                .decode(Equipment.self)
            _ = try await api.call(.dispatchAssignEquipment, unit.id.rawValue, json: AssignEquipmentRequest(driverID: carrier.driverID(0)),
                                   token: dispatch)
            let u = unit.id.rawValue
            let cursor = try await api.call(.sync, query: "since=0", token: driver).decode(SyncPage.self).cursor

            // Dispatch adds one in one request.
            let shop = MediaSamples.jpeg(size: 70_000)
            let added = try await api.call(.addUnitPhoto, u, bytes: shop, token: dispatch)
            #expect(added.status == 201, "\(added.text)")
            let withOne = try added.decode(Equipment.self)
            let first = try #require(withOne.photos.first)
            #expect(withOne.photos.count == 1 && first.contentType == "image/jpeg" && first.sizeBytes == 70_000
                    && first.sha256 == UploadTests.hex(shop) && first.uploadedBy == carrier.dispatcher.user.id)

            // The driver's phone sends one resumably, in two pieces, a minute later.
            server.clock.advance(by: 60)
            let dent = MediaSamples.png(size: 50_000)
            let created = try await api.call(.createUpload, token: driver, headers: [
                "Tus-Resumable": Tus.version, "Upload-Length": String(dent.count),
                "Upload-Metadata": Tus.encodeMetadata(["equipment_id": u, "filename": "dent.png"]),
            ])
            #expect(created.status == 201, "\(created.text)")
            let upload = String(try #require(created.headers[.location]).split(separator: "/").last!)
            for (offset, piece) in [(0, Array(dent[..<20_000])), (20_000, Array(dent[20_000...]))] {
                let patched = try await api.call(.appendUpload, upload, bytes: piece, token: driver, headers: [
                    "Tus-Resumable": Tus.version, "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType])
                #expect(patched.status == 204, "\(patched.text)")
            }
            let seen = try await api.call(.equipmentUnit, u, token: driver).decode(Equipment.self)
            #expect(seen.photos.map(\.contentType) == ["image/jpeg", "image/png"])
            let second = seen.photos[1]
            #expect(second.uploadedBy == carrier.drivers[0].user.id)
            // The driver's feed carries the unit with its photos.
            let feed = try await api.call(.sync, query: "since=\(cursor)", token: driver).decode(SyncPage.self).changes
            guard case .equipment(let fed)? = feed.last?.row else { Issue.record("no unit in the feed: \(feed)"); return }
            #expect(fed.photos.count == 2)

            // The bytes, whole and by range, to whoever sees the unit.
            let whole = try await api.call(.unitPhoto, u, first.id.rawValue, token: driver)
            #expect(whole.status == 200 && Array(whole.body) == shop && whole.headers[.contentType] == "image/jpeg")
            #expect(whole.headers[.init("X-Content-Type-Options")!] == "nosniff")
            #expect(whole.headers[.init("Content-Security-Policy")!]?.hasPrefix("sandbox") == true)
            let part = try await api.call(.unitPhoto, u, second.id.rawValue, token: dispatch, headers: ["Range": "bytes=10-19"])
            #expect(part.status == 206 && Array(part.body) == Array(dent[10..<20]))
            for token in [sibling, other.dispatcher.accessToken, other.driver.accessToken] {
                #expect(try await api.call(.unitPhoto, u, first.id.rawValue, token: token).status == 404)
                #expect(try await api.call(.addUnitPhoto, u, bytes: MediaSamples.jpeg(), token: token).status == 404)
                #expect(try await api.call(.deleteUnitPhoto, u, first.id.rawValue, token: token).status == 404)
            }
            #expect(try await api.call(.createUpload, token: sibling, headers: [
                "Tus-Resumable": Tus.version, "Upload-Length": "2048", "Upload-Metadata": Tus.encodeMetadata(["equipment_id": u])]).status == 404)

            // The bytes decide what a file is; a photo has a size cap; nothing is kept of a refused one.
            let pdf = try await api.call(.addUnitPhoto, u, bytes: MediaSamples.pdf(), token: dispatch)
            #expect(pdf.status == 415 && pdf.errorCode == "unsupported_media_type", "\(pdf.text)")
            #expect(pdf.error?.message.hasPrefix("A unit photo takes") == true, "\(pdf.text)")
            let huge = try await api.call(.createUpload, token: driver, headers: [
                "Tus-Resumable": Tus.version, "Upload-Length": String(26 << 20), "Upload-Metadata": Tus.encodeMetadata(["equipment_id": u])])
            #expect(huge.status == 413 && huge.errorCode == "payload_too_large")
            let both = try await api.call(.createUpload, token: driver, headers: [
                "Tus-Resumable": Tus.version, "Upload-Length": "2048",
                "Upload-Metadata": Tus.encodeMetadata(["equipment_id": u, "inspection_id": UUID().uuidString])])
            #expect(both.status == 400 && both.error?.field == "Upload-Metadata")
            #expect(try await api.call(.equipmentUnit, u, token: driver).decode(Equipment.self).photos.count == 2)

            // A driver removes only photos they took; dispatch removes any; the bytes go with the photo.
            #expect(try await api.call(.deleteUnitPhoto, u, first.id.rawValue, token: driver).status == 404)
            let key = try await server.store.fleet.photo(unit.id, photo: second.id, carrier.scope).key
            let removed = try await api.call(.deleteUnitPhoto, u, second.id.rawValue, token: driver)
            #expect(try removed.decode(Equipment.self).photos.map(\.id) == [first.id], "\(removed.text)")
            #expect(try await server.services.media.open(key) == nil)
            #expect(try await api.call(.unitPhoto, u, second.id.rawValue, token: driver).status == 404)
            #expect(try await api.call(.deleteUnitPhoto, u, first.id.rawValue, token: dispatch).decode(Equipment.self).photos.isEmpty)

            // Sent with an Idempotency-Key the deletion runs inside the request's transaction: the bytes are not removed
            // before its commit (a failed commit would leave a photo without them), but by the trash's sweeper after it.
            let kept = try #require(try await api.call(.addUnitPhoto, u, bytes: MediaSamples.jpeg(size: 600), token: dispatch)
                .decode(Equipment.self).photos.first)
            let keptKey = try await server.store.fleet.photo(unit.id, photo: kept.id, carrier.scope).key
            let keyed = try await api.call(.deleteUnitPhoto, u, kept.id.rawValue, token: dispatch, headers: ["Idempotency-Key": UUID().uuidString])
            #expect(keyed.status == 200, "\(keyed.text)")
            #expect(try await server.services.media.open(keptKey) != nil)
            #expect(try await server.store.read { try await ReceiptRepository.trashed(limit: 10, $0) }.contains(keptKey))
            _ = try await server.services.pruneExpiredUploads()
            #expect(try await server.services.media.open(keptKey) == nil)
            #expect(try await server.store.read { try await ReceiptRepository.trashed(limit: 10, $0) }.isEmpty)

            // A unit holds at most 30 photos.
            for _ in 0..<EquipmentPhoto.maxPerUnit {
                #expect(try await api.call(.addUnitPhoto, u, bytes: MediaSamples.jpeg(size: 600), token: dispatch).status == 201)
            }
            let full = try await api.call(.addUnitPhoto, u, bytes: MediaSamples.jpeg(size: 600), token: dispatch)
            #expect(full.status == 422 && full.error?.field == "photos", "\(full.text)")
        }
    }

    @Test("text limits count what the database counts: a note with browser line breaks fits, one of many-part emoji is refused by field",
          arguments: TestBackend.available)
    func textLimits(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            let unit = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "T-12"), token: dispatch)
                .decode(Equipment.self)
            // 1,999 characters as a browser's text box sends them (\r\n line breaks: 2,018 code points).
            let lines = Array(repeating: String(repeating: "a", count: 99), count: 20)
            let saved = try await api.call(.dispatchUpdateEquipment, unit.id.rawValue,
                                           json: EquipmentFields(notes: lines.joined(separator: "\r\n")), token: dispatch)
            #expect(saved.status == 200, "\(saved.text)")
            #expect(try saved.decode(Equipment.self).notes == lines.joined(separator: "\n"))
            // 286 family emoji: 286 characters, 2,002 code points.
            let family = String(repeating: "👨‍👩‍👧‍👦", count: 286)
            let refused = try await api.call(.dispatchUpdateEquipment, unit.id.rawValue, json: EquipmentFields(notes: family), token: dispatch)
            #expect(refused.status == 422 && refused.error?.field == "notes", "\(refused.text)")
        }
    }

    @Test("CSV imports of units and orders: all lines or none, every bad line named; bulk status all or none",
          arguments: TestBackend.available)
    func importsAndBulk(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let other = try await CarrierFixture.make(server, name: "Bravo", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let csv = ["Content-Type": "text/csv"]
        try await server.run { api in
            let good = """
                unit_number,kind,make,model,year,vin,plate,plate_state,trailer_type,capacity_cars,fuel_type,notes
                T-12,truck,Peterbilt,389,2019,1XPBDP9X9KD123456,TX 4KH 221,TX,,,diesel,
                TR-7,trailer,Cottrell,CX-09LS,2021,,TX 9TR 107,tx,open,9,,"Ramp, hydraulic"
                """
            let imported = try await api.call(.dispatchImportEquipment, bytes: Array(good.utf8), token: dispatch, headers: csv)
            #expect(try imported.decode(ImportResult.self) == ImportResult(created: 2, updated: 0), "\(imported.text)")

            // Bad lines: each named; nothing of the file is written (not even its good lines).
            let bad = """
                unit_number,kind,year,vin,capacity_cars,status
                T-12,,2020,,,in_shop
                T-30,truck,1850,,,
                TR-8,boat,,,,
                TR-9,trailer,,1XPBDP9X1KD123456,,
                TR-10,trailer,,,99,
                TR-11,trailer,,,,parked
                T-30,truck,,,,
                T-40,truck,,,,
                """
            let refused = try await api.call(.dispatchImportEquipment, bytes: Array(bad.utf8), token: dispatch, headers: csv)
            #expect(refused.status == 422 && refused.errorCode == "import_failed", "\(refused.text)")
            let problems = refused.error?.problems ?? []
            #expect(problems.map(\.line) == [3, 4, 5, 6, 7, 8], "\(problems)")
            #expect(problems.map(\.field) == ["year", "kind", "vin", "capacity_cars", "status", "unit_number"], "\(problems)")
            let units = try await api.call(.dispatchEquipment, token: dispatch).decode(Items<Equipment>.self).items
            #expect(units.map(\.unitNumber) == ["T-12", "TR-7"] && units[0].status == .active && units[0].year == 2019)

            // The same unit numbers again update them.
            let update = "unit_number,status,notes\nt-12,in_shop,Brakes\n"
            #expect(try await api.call(.dispatchImportEquipment, bytes: Array(update.utf8), token: dispatch, headers: csv)
                .decode(ImportResult.self) == ImportResult(created: 0, updated: 1))
            let t12 = try await api.call(.dispatchEquipmentUnit, units[0].id.rawValue, token: dispatch).decode(Equipment.self)
            #expect(t12.status == .inShop && t12.notes == "Brakes" && t12.make == "Peterbilt")

            for (body, headers, status) in [
                ("", csv, 422), ("unit_number\n", csv, 422), ("unit_number,kind\nT-1,truck\n", ["Content-Type": "application/json"], 415),
            ] {
                let answer = try await api.call(.dispatchImportEquipment, bytes: Array(body.utf8), token: dispatch, headers: headers)
                #expect(answer.status == status, "\(body): \(answer.text)")
            }
            let huge = "unit_number,kind\n" + (0..<2_001).map { "U-\($0),truck" }.joined(separator: "\n")
            let tooMany = try await api.call(.dispatchImportEquipment, bytes: Array(huge.utf8), token: dispatch, headers: csv)
            #expect(tooMany.status == 422 && tooMany.error?.problems?.first?.field == "file", "\(tooMany.text.prefix(300))")
            let oversized = try await api.call(.dispatchImportEquipment, bytes: [UInt8](repeating: 65, count: 5 << 20), token: dispatch, headers: csv)
            #expect(oversized.status == 413)

            // A quote left open would swallow the rest of the file: refused, naming where it opened.
            let open = "unit_number,kind,notes\nQ-1,truck,fine\nQ-2,truck,\"unterminated\nQ-3,truck,x\n"
            let unclosed = try await api.call(.dispatchImportEquipment, bytes: Array(open.utf8), token: dispatch, headers: csv)
            #expect(unclosed.status == 422 && unclosed.error?.problems?.first?.line == 3, "\(unclosed.text)")
            let twice = try await api.call(.dispatchImportEquipment, bytes: Array("unit_number,kind,kind\nQ-1,truck,trailer\n".utf8),
                                           token: dispatch, headers: csv)
            #expect(twice.status == 422 && twice.error?.problems?.first?.field == "kind", "\(twice.text)")
            let wide = "unit_number" + String(repeating: ",", count: 70_000) + "\nQ-1\n"
            let tooWide = try await api.call(.dispatchImportEquipment, bytes: Array(wide.utf8), token: dispatch, headers: csv)
            #expect(tooWide.status == 422 && tooWide.error?.problems?.count == 1, "\(tooWide.text.prefix(300))")
            // A spreadsheet's byte-order mark and trailing blank lines are fine.
            let bom = "\u{FEFF}unit_number,kind\r\nQ-1,truck\r\n\r\n\r\n"
            #expect(try await api.call(.dispatchImportEquipment, bytes: Array(bom.utf8), token: dispatch, headers: csv)
                .decode(ImportResult.self) == ImportResult(created: 1, updated: 0))

            // Orders by CSV through the API, with the console's rules.
            let orders = "number,pickup_address,delivery_address,revenue,vin\nCSV-1,1 Main St,2 Elm St,450,\nCSV-2,,2 Elm St,abc,\n"
            let refusedOrders = try await api.call(.dispatchImportOrders, bytes: Array(orders.utf8), token: dispatch, headers: csv)
            #expect(refusedOrders.status == 422 && refusedOrders.error?.problems?.map(\.line) == [3], "\(refusedOrders.text)")
            // A North American VIN with a wrong check digit (…F30… should be …F39…) is a line to confirm, not silently taken.
            let typo = "number,pickup_address,delivery_address,revenue,vin\nCSV-1,1 Main St,2 Elm St,450,1HGCV1F30KA012345\n"
            let warned = try await api.call(.dispatchImportOrders, bytes: Array(typo.utf8), token: dispatch, headers: csv)
            #expect(warned.status == 422 && warned.error?.problems?.first?.field == "vin"
                    && warned.error?.problems?.first?.message.contains("should be 9") == true, "\(warned.text)")
            let fine = "number,pickup_address,delivery_address,revenue,vin,vin_confirmed\nCSV-1,1 Main St,2 Elm St,450,1HGCV1F30KA012345,yes\n"
            #expect(try await api.call(.dispatchImportOrders, bytes: Array(fine.utf8), token: dispatch, headers: csv)
                .decode(ImportResult.self).created == 1)
            // The same rule for an order made or edited through the API; a VIN from outside North America has no check digit.
            let request = CreateOrderRequest(number: "VIN-1", vehicle: Vehicle(make: "Honda", vin: "1HGCV1F30KA012345"),
                                             pickup: Stop(address: "A"), delivery: Stop(address: "B"), revenueCents: 100)
            let refusedOrder = try await api.call(.dispatchCreateOrder, json: request, token: dispatch)
            #expect(refusedOrder.status == 422 && refusedOrder.errorCode == "vin_check_digit" && refusedOrder.error?.field == "vehicle.vin")
            var confirmed = request
            confirmed.acceptVINWarning = true
            let made = try await api.call(.dispatchCreateOrder, json: confirmed, token: dispatch)
            #expect(made.status == 201, "\(made.text)")
            let order = try made.decode(Order.self)
            // Confirmed once, the saved VIN is not questioned again when something else about the vehicle changes.
            let recoloured = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                vehicle: Vehicle(make: "Honda", vin: "1hgcv1f30ka012345", color: "Red")), token: dispatch)
            #expect(recoloured.status == 200, "\(recoloured.text)")
            let edit = try await api.call(.dispatchUpdateOrder, order.id.rawValue,
                                          json: UpdateOrderRequest(vehicle: Vehicle(make: "Ford", vin: "1FTFW1E50NFA00001")), token: dispatch)
            #expect(edit.errorCode == "vin_check_digit", "\(edit.text)")
            let korean = try await api.call(.dispatchUpdateOrder, order.id.rawValue,
                                            json: UpdateOrderRequest(vehicle: Vehicle(make: "Kia", vin: "KNDC4DLC0N5000001")), token: dispatch)
            #expect(korean.status == 200, "\(korean.text)")

            // Bulk status: all, or none when one id is not this carrier's.
            let foreign = try await api.call(.dispatchCreateEquipment, json: EquipmentFields(kind: .truck, unitNumber: "B-1"),
                                             token: other.dispatcher.accessToken).decode(Equipment.self)
            let mixed = try await api.call(.dispatchEquipmentStatus, json: EquipmentStatusChange(ids: units.map(\.id) + [foreign.id], status: .outOfService),
                                           token: dispatch)
            #expect(mixed.status == 422 && mixed.error?.field == "ids[2]", "\(mixed.text)")
            #expect(try await api.call(.dispatchEquipment, query: "status=out_of_service", token: dispatch).decode(Items<Equipment>.self).items.isEmpty)
            let moved = try await api.call(.dispatchEquipmentStatus, json: EquipmentStatusChange(ids: units.map(\.id), status: .outOfService),
                                           token: dispatch).decode(Items<Equipment>.self)
            #expect(moved.items.map(\.status) == [.outOfService, .outOfService])
            #expect(try await api.call(.dispatchEquipmentStatus, json: EquipmentStatusChange(ids: [], status: .active), token: dispatch).status == 422)
            #expect(try await api.call(.dispatchEquipmentUnit, foreign.id.rawValue, token: dispatch).status == 404)
        }
    }

    @Test("GET /v1/vin/{vin} says what a VIN says")
    func vinEndpoint() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        try await server.run { api in
            let decoded = try await api.call(.decodeVIN, "1hgcm82633a004352", token: carrier.driver.accessToken).decode(VINDecoding.self)
            #expect(decoded.isWellFormed && decoded.checkDigitValid && decoded.make == "Honda" && decoded.modelYear == 2003)
            let typo = try await api.call(.decodeVIN, "1HGCM82643A004352", token: carrier.dispatcher.accessToken).decode(VINDecoding.self)
            #expect(!typo.checkDigitValid && typo.expectedCheckDigit == "3" && typo.needsConfirmation)
            let junk = try await api.call(.decodeVIN, "1HGCM82633A00435O", token: carrier.driver.accessToken)
            #expect(junk.status == 422 && junk.error?.field == "vin" && junk.error?.message.contains("I, O or Q") == true, "\(junk.text)")
            #expect(try await api.call(.decodeVIN, "🚗", token: carrier.driver.accessToken).status == 422)
            #expect(try await api.call(.decodeVIN, String(repeating: "A", count: 65), token: carrier.driver.accessToken).status == 400)
            #expect(try await api.call(.decodeVIN, "1HGCM82633A004352").status == 401)
            // Written with spaces, or escaped, in the address: read as the VIN typed.
            let spaced = try await api.call(.decodeVIN, "1HGCM 82633A004352", token: carrier.driver.accessToken)
            #expect(spaced.status == 200 && (try? spaced.decode(VINDecoding.self))?.vin == "1HGCM82633A004352", "\(spaced.text)")
            let escaped = try await api.raw(.get, "/v1/vin/%31HGCM82633A004352", headers: ["Authorization": "Bearer \(carrier.driver.accessToken)"])
            #expect(escaped.status == 200, "\(escaped.text)")
            // The wire says whether to ask for confirmation, as documented.
            let raw = try await api.call(.decodeVIN, "1HGCM82643A004352", token: carrier.driver.accessToken).text
            #expect(raw.contains("\"needs_confirmation\":true") && raw.contains("\"well_formed\":true"), "\(raw)")
        }
    }
}
