import DriverKit
import Foundation
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// The view models the inspection, fleet and upload screens stand on.
@Suite("DriverKit screen models")
@MainActor
struct ScreenModelTests {
    @Test("the inspection screen: required slots with what to frame, files on their way, damages, odometer, and why it cannot complete yet")
    func inspectionScreen() async throws {
        let scene = try await DriverScene.make()
        let (carrier, live, app) = (scene.carrier, scene.live, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        await live.stop()                                               // in the yard, no signal

        let screen = try InspectionViewModel(app: app, order: order.id, kind: .pickup)
        var state = try #require(screen.state)
        #expect(state.title == "Pickup inspection · \(order.number)")
        #expect(state.photos.map(\.title) == ["Front", "Rear", "Left side", "Right side", "Odometer", "VIN plate"])
        #expect(state.photos.allSatisfy { $0.required && $0.status == .missing && $0.statusText == "Required" })
        #expect(state.photos[5].framing.contains("17 characters"))
        #expect(state.blockedReason?.hasPrefix("Take the photos still missing: Front, Rear") == true)
        screen.complete()
        #expect(screen.lastError == state.blockedReason)                // refused on the device, said why

        for slot in MediaSlot.requiredPhotos {
            await screen.attach(try InspectionTests.write(MediaSamples.jpeg(), name: "\(slot).jpg"), to: slot)
        }
        screen.setOdometer("48,210")
        screen.setOdometer("forty")
        #expect(screen.lastError == "The odometer is whole miles, 0 to 9,999,999.")
        screen.setNotes(String(repeating: "n", count: FieldLimits.inspectionNotes.max + 1))
        #expect(screen.lastError != nil, "notes past the limit are refused on the device")
        screen.setNotes("Keys left with the gate guard")
        #expect(screen.lastError == nil)
        try await eventually("the six photos on the screen") { screen.state?.photos.allSatisfy { $0.status != .missing } == true }
        let damageSlot = try #require(screen.state?.nextDamageSlot)
        screen.addDamage(Damage(location: "rear_bumper", type: .dent, severity: .moderate, note: "fist-sized", photoSlot: damageSlot))
        await screen.attach(try InspectionTests.write(MediaSamples.jpeg(), name: "dent.jpg"), to: damageSlot)
        try await eventually("the damage on the screen") { screen.state?.photos.count == 7 && screen.state?.inspection.damages.count == 1 }
        state = try #require(screen.state)
        #expect(state.photos.count == 7 && state.photos.last?.title == "Damage 1")
        #expect(state.photos.allSatisfy { $0.statusText == "Waiting to upload" })
        #expect(state.inspection.odometer == 48_210 && state.inspection.damages.count == 1)
        #expect(state.inspection.notes == "Keys left with the gate guard")
        #expect(state.nextDamageSlot == MediaSlot("damage_2") && state.optionalAngles.first == MediaSlot("front_left"))
        #expect(state.blockedReason == "Get the customer's signature, or mark the customer not available.")
        screen.setCustomerUnavailable(true)
        try await eventually("completable") { screen.state?.canComplete == true }
        screen.complete()
        #expect(screen.lastError == nil)
        #expect(try app.database.order(order.id)?.status == .pickedUp)  // at once, on the device

        try await live.start()
        await app.syncNow()
        // Seven photos through the upload queue, beside the whole suite on two cores.
        try await eventually("every file on the server", timeout: .seconds(120)) {
            screen.state?.photos.allSatisfy { $0.status == .done } == true && screen.state?.isCompleted == true
        }
        #expect(screen.state?.blockedReason == "This inspection is completed.")
        await live.stop()
    }

    @Test("the truck screen: papers in words, an odometer reading and a fill-up typed as people type them, a photo checked on the device")
    func unitsScreen() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, app) = (scene.server, scene.carrier, scene.app)
        let truck = try await server.store.fleet.create(EquipmentFields(kind: .truck, unitNumber: "T-12"), tenant: carrier.tenant.id)
        _ = try await server.store.fleet.assign(truck.id, to: carrier.driverID(0), tenant: carrier.tenant.id)
        let today = LocalDate(Date(), in: .current)
        _ = try await server.store.fleet.addPaper(truck.id, AddEquipmentDocumentRequest(kind: .registration, expiresOn: today.adding(days: 12)),
                                                        tenant: carrier.tenant.id)
        await app.syncNow()
        let units = UnitsViewModel(app: app)
        try await eventually("the truck") { units.truck?.id == truck.id }
        #expect(units.trailer == nil && !units.isEmpty)
        let papers = units.papers(of: try #require(units.truck), today: today)
        #expect(papers.map(\.note) == ["Expires in 12 days"] && papers[0].urgent)

        units.recordOdometer("413,480", unit: truck.id)
        #expect(units.confirmation == "Recorded 413480 mi." && units.lastError == nil)
        units.recordOdometer("lots", unit: truck.id)
        #expect(units.lastError == "The odometer is whole miles, 0 to 9,999,999.")
        units.recordFuel(amount: "$412.80", gallons: "118.25", odometer: "413,480")
        #expect(units.lastError == nil && units.confirmation?.hasPrefix("Logged the fill-up on trip") == true)
        let fuelTrip = try #require(units.fuelTrip)
        let fill = try #require(try app.database.expenses(trip: fuelTrip.id).first { $0.fuel != nil })
        #expect(fill.amountCents == 41_280 && fill.fuel?.quantityMilli == 118_250 && fill.fuel?.odometerMiles == 413_480)
        units.recordFuel(amount: "412.80", gallons: "a lot", odometer: "")
        #expect(units.lastError == "Gallons look like 118.25.")

        await units.addPhoto(try InspectionTests.write(MediaSamples.pdf(), name: "registration.jpg"), to: truck.id)
        #expect(units.lastError?.contains("is not a photo") == true)
        await units.addPhoto(try InspectionTests.write(MediaSamples.jpeg(), name: "dent.jpg"), to: truck.id)
        #expect(units.lastError == nil)
        let uploads = UploadsViewModel(app: app)
        await app.syncNow()
        try await eventually("the photo on the server", timeout: .seconds(30)) {
            uploads.items.isEmpty && units.truck?.photos.count == 1
        }
        #expect(uploads.summary == nil)
        await scene.live.stop()
    }

    @Test("a fill-up the server refuses for its odometer leaves the truck's reading as the server has it; the next true reading goes")
    func refusedFillOdometer() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, app) = (scene.server, scene.carrier, scene.app)
        let truck = try await server.store.fleet.create(EquipmentFields(kind: .truck, unitNumber: "T-12"), tenant: carrier.tenant.id)
        _ = try await server.store.fleet.assign(truck.id, to: carrier.driverID(0), tenant: carrier.tenant.id)
        let driver = Scope.driver(tenant: carrier.tenant.id, driver: carrier.driverID(0))
        _ = try await server.store.fleet.recordOdometer(RecordOdometerRequest(equipmentID: truck.id, miles: 413_000,
                                                                        recordedAt: Date().addingTimeInterval(-3 * 86_400)), driver)
        await app.syncNow()
        let units = UnitsViewModel(app: app)
        try await eventually("the truck") { units.truck?.odometerMiles == 413_000 }

        // A digit too many: the phone applies the server's rule and refuses it at once, in the server's words.
        units.recordFuel(amount: "50", gallons: "10", odometer: "4,130,800")
        #expect(units.lastError == "Unit T-12 read 413,000 mi 72 h before; 4,130,800 mi is more than it can have driven. Check the reading.")

        // A reading the phone has not seen yet (two days ago, on the shop's paperwork): the fill-up today is lower
        // than it, so the phone takes it and the server refuses it.
        _ = try await server.store.fleet.recordOdometer(RecordOdometerRequest(equipmentID: truck.id, miles: 413_480,
                                                                        recordedAt: Date().addingTimeInterval(-2 * 86_400)), driver)
        units.recordFuel(amount: "50", gallons: "10", odometer: "413,300")
        #expect(units.lastError == nil)
        try await eventually("the phone's guess (\(units.lastError ?? "no error"), \(String(describing: units.truck?.odometerMiles)), \(String(describing: units.truck?.odometerAt)))") { units.truck?.odometerMiles == 413_300 }
        await app.syncNow()
        #expect(try app.database.outbox().contains { $0.failure == .rejected })
        try await eventually("the server's reading") { units.truck?.odometerMiles == 413_480 }
        let fuelTrip = try #require(units.fuelTrip)
        #expect(try app.database.expenses(trip: fuelTrip.id).allSatisfy { $0.fuel == nil })

        units.recordOdometer("413,600", unit: truck.id)
        #expect(units.lastError == nil)
        await app.syncNow()
        #expect(try await server.store.fleet.unit(truck.id, carrier.scope).odometerMiles == 413_600)
        await scene.live.stop()
    }

    @Test("money, fuel and miles are read the same way in the app and the terminal")
    func input() {
        #expect(DriverInput.cents("84.20") == 8_420 && DriverInput.cents("$1,084.2") == 108_420 && DriverInput.cents("84") == 8_400)
        #expect(DriverInput.cents("84.205") == nil && DriverInput.cents("-5") == nil && DriverInput.cents("1e3") == nil
                && DriverInput.cents("99999999999999999999") == nil)
        #expect(DriverInput.milli("120.5") == 120_500 && DriverInput.milli("0.125") == 125 && DriverInput.milli("1.2345") == nil)
        #expect(DriverInput.miles("412,350") == 412_350 && DriverInput.miles("10000000") == nil && DriverInput.miles("") == nil)
    }
}

extension ScreenModelTests {
    @Test("the order screen: ETAs while they can change, and the inspection that moves the order next")
    func orderScreen() async throws {
        let scene = try await DriverScene.make()
        let order = scene.carrier.orders[scene.carrier.trips[0][0].id]![0]
        let screen = OrderDetailViewModel(app: scene.app, order: order.id)
        #expect(screen.order?.number == order.number)
        #expect(screen.nextInspection == .pickup && screen.nextInspectionTitle == "Start pickup inspection")
        #expect(screen.canSetETA(.pickup) && screen.canSetETA(.delivery))
        let eta = Date().addingTimeInterval(7_200)
        screen.setETA(.pickup, eta)
        #expect(screen.lastError == nil)
        try await eventually("the ETA on the device") { screen.order?.pickupETA.map { abs($0.timeIntervalSince(eta)) < 1 } == true }
        let inspection = try #require(try screen.inspection())
        #expect(inspection.state?.inspection.kind == .pickup)
        await scene.live.stop()
    }

    @Test("a dealer load is inspected in one pass: vehicle by vehicle (the first on the truck picks it up), on the device and then on the server")
    func loadInOnePass() async throws {
        let scene = try await DriverScene.make()
        let (carrier, app) = (scene.carrier, scene.app)
        let load = try await scene.server.store.orders.create(CreateOrderRequest(
            number: "LOAD-2", tripID: carrier.trips[0][0].id, vehicles: [
                Vehicle(year: 2020, make: "Honda", model: "Accord", priceCents: 38_000), Vehicle(make: "Kia", model: "Soul", priceCents: 30_000),
            ], pickup: Stop(address: "1 Auction Way, Matteson, IL"), delivery: Stop(address: "5600 W 38th St, Indianapolis, IN")),
            tenant: carrier.tenant.id)
        await app.syncNow()
        let screen = OrderDetailViewModel(app: app, order: load.id)
        try await eventually("the load on the device") { screen.order?.vehicles.count == 2 }
        #expect(screen.nextInspectionTitle == "Start pickup inspection: vehicle 1 of 2")
        await scene.live.stop()                                         // at the auction gate, no signal

        let first = try #require(try screen.inspection())
        #expect(first.state?.vehicleTitle == "Vehicle 1 of 2 · 2020 Honda Accord")
        for slot in MediaSlot.requiredPhotos {
            await first.attach(try InspectionTests.write(MediaSamples.jpeg(), name: "a-\(slot).jpg"), to: slot)
        }
        first.setCustomerUnavailable(true)
        try await eventually("completable") { first.state?.canComplete == true }
        first.complete()
        #expect(first.lastError == nil)
        #expect(try app.database.order(load.id)?.status == .pickedUp, "the first vehicle on the truck picks the load up")
        #expect(screen.nextInspectionTitle == "Start pickup inspection: vehicle 2 of 2")

        let second = try #require(try first.nextVehicle())
        #expect(second.state?.vehicleTitle == "Vehicle 2 of 2 · Kia Soul")
        try await eventually("nobody to sign, carried over") { second.state?.inspection.customerUnavailable == true }
        for slot in MediaSlot.requiredPhotos {
            await second.attach(try InspectionTests.write(MediaSamples.jpeg(), name: "b-\(slot).jpg"), to: slot)
        }
        try await eventually("completable") { second.state?.canComplete == true }
        second.complete()
        #expect(second.lastError == nil)
        #expect(try app.database.order(load.id)?.status == .pickedUp)
        #expect(screen.nextInspection == .delivery, "every vehicle loaded: next comes the delivery")
        #expect(try second.nextVehicle() == nil)

        try await scene.live.start()
        await app.syncNow()
        // On the server: both vehicles' inspections completed, each naming its vehicle, and the load picked up.
        let dispatch = Scope.dispatch(tenant: carrier.tenant.id)
        let ids = try app.database.inspections(order: load.id).map(\.id)
        var remote: [Inspection] = []
        for _ in 0..<150 {
            remote = []
            for id in ids { if let found = try? await scene.server.store.inspections.inspection(id, dispatch) { remote.append(found) } }
            if remote.count == 2, remote.allSatisfy({ $0.completedAt != nil }) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(remote.count == 2 && remote.allSatisfy { $0.completedAt != nil })
        #expect(Set(remote.compactMap(\.vehicleID)) == Set(load.vehicles.compactMap(\.id)))
        #expect(try await scene.server.store.orders.order(load.id, dispatch).status == .pickedUp)
        await scene.live.stop()
    }
}
