import Crypto
import Foundation
import Testing
import VroomXModels
import VroomXSecurity
@testable import VroomXServer
import VroomXTestSupport

/// Every endpoint × every kind of caller. Carrier A's first driver owns the
/// resources probed; nobody else may read or change them, no answer to a
/// caller outside carrier A ever contains one of A's ids or emails, and a
/// sibling driver never sees the owner's work.
@Suite("Tenant isolation matrix")
struct TenantIsolationTests {
    enum Caller: String, CaseIterable, CustomStringConvertible {
        case sibling = "another driver of the same carrier"
        case foreignDriver = "a driver of another carrier"
        case foreignDispatcher = "a dispatcher of another carrier"
        case noToken = "no token"
        case forgedToken = "a token signed with another key"
        case dispatcher = "the carrier's own dispatcher"
        case owner = "the driver"
        case expiredToken = "an expired token"
        var description: String { rawValue }
    }

    /// One request per endpoint, aimed at carrier A's first driver's data.
    struct Probe: Sendable {
        let endpoint: Endpoint
        let parameters: [String]
        let body: (any Encodable & Sendable)?
        /// Whether the request names one of A's rows (in the path or body).
        let namesCarrierAData: Bool
        var query: String? = nil
        var bytes: [UInt8]? = nil
        var headers: [String: String] = [:]
    }

    /// The owner's open pickup inspection, with every required photo, and
    /// an upload in progress for one more.
    struct InspectionFixture {
        let inspection: ID<Inspection>
        let upload: String
        let uploadBytes: [UInt8]
    }

    @Test("no caller crosses a carrier or reaches another driver's work", arguments: TestBackend.available)
    func matrix(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha")
        let b = try await CarrierFixture.make(server, name: "Bravo")
        let store = server.store
        let ownerTrip = a.trips[0][0]
        let ownerOrder = a.orders[ownerTrip.id]![0]
        let ownerExpense = a.expenses[ownerTrip.id]![0]
        let ownerNotification = try await store.notifications.list(.driver(tenant: a.tenant.id, driver: a.driverID(0)))[0]
        // An urgent message for the owner to answer "Got it".
        let ownerUrgent = try await store.notifications.send(SendMessageRequest(driverID: a.driverID(0), type: .urgent, title: "Call", body: "Now"),
                                                             tenant: a.tenant.id)
        let ownerDeviceToken = "owner-device-token-0001"
        _ = try await store.people.registerDeviceToken(.init(token: ownerDeviceToken, platform: .ios), user: a.driver.user.id, tenant: a.tenant.id)

        // What the owner's phone holds: only carrier A's dispatch may read it.
        try await store.deviceBacklogs.report(DeviceBacklog(deviceID: "owner-phone", waitingChanges: 2, waitingFiles: 1, fileBytes: 900, oldestAt: nil,
                                                    items: [.init(status: .refused, what: "the $12.00 tolls expense", reason: "refused")]),
                                      .driver(tenant: a.tenant.id, driver: a.driverID(0)))
        try await server.run { api in
            let inspection = try await Self.openInspection(api, a, order: ownerOrder)
            // A driver without work, whom carrier A's dispatcher can deactivate and reactivate.
            let idle = try await store.people.createDriver(tenant: a.tenant.id, CreateDriverRequest(
                email: "idle-driver@alpha.example", name: "Idle", payType: .perTrip, payRate: 100))
            // The owner's truck, with one paper.
            let truck = try await store.fleet.create(EquipmentFields(kind: .truck, unitNumber: "T-OWNER"), tenant: a.tenant.id)
            _ = try await store.fleet.assign(truck.id, to: a.driverID(0), tenant: a.tenant.id)
            let papered = try await store.fleet.addPaper(truck.id, AddEquipmentDocumentRequest(kind: .registration, expiresOn: LocalDate(Date())),
                                                               tenant: a.tenant.id)
            // Two photos the driver took of it: one to read, one to remove.
            var photos: [ID<EquipmentPhoto>] = []
            for _ in 0..<2 {
                let unit = try await api.call(.addUnitPhoto, truck.id.rawValue, bytes: MediaSamples.jpeg(), token: a.driver.accessToken)
                    .decode(Equipment.self)
                photos += unit.photos.map(\.id).filter { !photos.contains($0) }
            }
            let fleet = FleetProbeData(unit: truck.id, document: papered.documents[0].id, owner: a.driverID(0), photo: photos[0],
                                       doomedPhoto: photos[1])
            // A customer of carrier A's, dispatch's alone.
            let customer = try await store.customers.create(CreateCustomerRequest(name: "Alpha's Broker", email: "ar@alphas-broker.example"),
                                                            tenant: a.tenant.id)
            let paper = try await Self.paperFixture(api, store, a, customer: customer.id)
            let probes = makeProbes(a: a, trip: ownerTrip, order: ownerOrder, expense: ownerExpense,
                                    notification: ownerNotification, deviceToken: ownerDeviceToken, inspection: inspection,
                                    idleDriver: idle.id) + fleetProbes(fleet, trip: ownerTrip) + customerProbes(customer.id, order: ownerOrder.id)
                + invoiceProbes(try await Self.invoiceFixture(store, a, customer: customer.id, trip: a.trips[1][0].id))
                + paperProbes(paper) + settlementProbes(try await Self.settlementFixture(store, a))
                + conversationProbes(owner: a.driverID(0), trip: ownerTrip.id, order: ownerOrder.id, urgent: ownerUrgent.id)
            // The matrix covers every endpoint that needs a token.
            let covered = Set(probes.map(\.endpoint))
            for endpoint in Endpoint.all where endpoint.access != .anyone {
                #expect(covered.contains(endpoint), "no isolation probe for \(endpoint)")
            }

            // Strings that must never reach anyone outside carrier A, and those a sibling must not see.
            let carrierAStrings = try await allIdentifiers(of: a, store: store).union([fleet.unit.rawValue, fleet.document.rawValue,
                                                                                                 fleet.photo.rawValue, fleet.doomedPhoto.rawValue,
                                                                                                 customer.id.rawValue, customer.email])
                .union([paper.expense, paper.order, paper.invoice, paper.payment].map(\.self) + [paper.receipt.rawValue, paper.photo.rawValue])
            let ownerPrivate = Set([ownerDeviceToken, fleet.unit.rawValue] + a.trips[0].map(\.id.rawValue)
                + a.trips[0].flatMap { a.orders[$0.id]!.map(\.id.rawValue) + a.expenses[$0.id]!.map(\.id.rawValue) }
                + (try await store.notifications.list(.driver(tenant: a.tenant.id, driver: a.driverID(0)))).map(\.id.rawValue))

            for caller in Caller.allCases {
                if caller == .expiredToken { server.clock.advance(by: 3601) }
                let token = forToken(caller, a: a, b: b)
                for (index, probe) in probes.enumerated() {
                    let answer = try await api.call(probe.endpoint, parameters: probe.parameters, query: probe.query,
                                                    json: personalize(probe.body, caller: caller, index: index), bytes: probe.bytes,
                                                    token: token, headers: probe.headers)
                    let expected = expectedStatuses(caller, probe)
                    #expect(expected.contains(answer.status),
                            "\(probe.endpoint) by \(caller): got \(answer.status) \(answer.text), expected \(expected)")
                    if answer.status >= 400, probe.endpoint.method != .head {  // a HEAD answer has no body
                        #expect(answer.error != nil, "\(probe.endpoint) by \(caller): error not in the shared shape: \(answer.text)")
                    }
                    if probe.endpoint == .mutations, caller == .sibling || caller == .foreignDriver {
                        let results = try answer.decode(MutationBatchResult.self).results
                        #expect(results.allSatisfy { $0.outcome == .rejected && $0.code == .notFound }, "\(results)")
                    }
                    switch caller {
                    case .foreignDriver, .foreignDispatcher, .noToken, .forgedToken, .expiredToken:
                        for secret in carrierAStrings where answer.text.contains(secret) {
                            Issue.record("\(probe.endpoint) by \(caller) leaked carrier A's \(secret)")
                        }
                    case .sibling:
                        for secret in ownerPrivate where answer.text.contains(secret) {
                            Issue.record("\(probe.endpoint) by \(caller) leaked the owner's \(secret)")
                        }
                    case .owner, .dispatcher:
                        break
                    }
                }
                if caller == .forgedToken {
                    // Nothing the outsiders tried changed the owner's data.
                    #expect(try await store.orders.order(ownerOrder.id, a.scope) == ownerOrder)
                    #expect(try await store.trips.trip(ownerTrip.id, a.scope) == ownerTrip)
                    #expect(try await store.expenses.list(trip: ownerTrip.id, a.scope).contains(ownerExpense))
                    #expect(try await store.people.deviceTokens(user: a.driver.user.id, tenant: a.tenant.id).map(\.token) == [ownerDeviceToken])
                    let untouched = try await store.inspections.inspection(inspection.inspection, a.scope)
                    #expect(untouched.completedAt == nil && untouched.notes.isEmpty && untouched.media.count == MediaSlot.requiredPhotos.count)
                    let notification = try await store.notifications.list(.driver(tenant: a.tenant.id, driver: a.driverID(0)))
                        .first { $0.id == ownerNotification.id }
                    #expect(notification?.readAt == nil)
                }
            }
            // The owner's own calls did take effect.
            #expect(try await store.orders.order(ownerOrder.id, a.scope).status == .pickedUp)
            let completed = try await store.inspections.inspection(inspection.inspection, a.scope)
            #expect(completed.completedAt != nil && completed.notes == "Owner's note")
        }
    }

    @Test("after a trip changes hands, the new driver sees only the orders that moved with it", arguments: TestBackend.available)
    func reassignedTripKeepsDeliveredOrdersPrivate(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let store = server.store
        let trip = a.trips[0][0]
        let (delivered, open) = (a.orders[trip.id]![0], a.orders[trip.id]![1])
        // The first driver carried one vehicle to the end (recorded by dispatch); then the trip goes to the second driver.
        _ = try await store.orders.update(delivered.id, UpdateOrderRequest(status: .pickedUp), tenant: a.tenant.id)
        _ = try await store.orders.update(delivered.id, UpdateOrderRequest(status: .delivered), tenant: a.tenant.id)
        _ = try await store.trips.assign(trip.id, to: a.driverID(1), tenant: a.tenant.id)
        let newDriver = a.drivers[1].accessToken
        try await server.run { api in
            let listed = try await api.call(.tripOrders, trip.id.rawValue, token: newDriver)
            #expect(listed.status == 200)
            #expect(try listed.decode(Items<Order>.self).items.map(\.id) == [open.id])
            #expect(!listed.text.contains(delivered.id.rawValue) && !listed.text.contains(delivered.pickup.address))
            #expect(try await api.call(.order, delivered.id.rawValue, token: newDriver).status == 404)
            // Dispatch still sees both.
            let all = try await api.call(.dispatchOrders, query: "trip_id=\(trip.id)", token: a.dispatcher.accessToken)
            #expect(Set(try all.decode(Items<Order>.self).items.map(\.id)) == [delivered.id, open.id])
        }
    }

    /// Made through the API by the owner, as the app would.
    static func openInspection(_ api: TestAPI, _ a: CarrierFixture, order: Order) async throws -> InspectionFixture {
        let token = a.drivers[0].accessToken
        let id = try await api.readyInspection(of: order.id, .pickup, token: token)
        let bytes = MediaSamples.jpeg(size: 300)
        let created = try await api.call(.createUpload, token: token, headers: [
            "Tus-Resumable": Tus.version, "Upload-Length": String(bytes.count),
            "Upload-Metadata": MediaSamples.metadata(id, MediaSlot("damage_1")),
        ])
        guard created.status == 201, let location = created.headers[.location] else {
            throw TestSetupError("create upload: \(created.status) \(created.text)")
        }
        return InspectionFixture(inspection: id, upload: String(location.split(separator: "/").last!), uploadBytes: bytes)
    }

    func makeProbes(a: CarrierFixture, trip: Trip, order: Order, expense: Expense, notification: DriverNotification,
                    deviceToken: String, inspection: InspectionFixture, idleDriver: ID<Driver>) -> [Probe] {
        let t = trip.id.rawValue, o = order.id.rawValue, i = inspection.inspection.rawValue, u = inspection.upload
        let tus = ["Tus-Resumable": Tus.version]
        return [
            Probe(endpoint: .me, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .setPIN, parameters: [], body: PINRequest(pin: "2468"), namesCarrierAData: false),
            Probe(endpoint: .verifyPIN, parameters: [], body: PINRequest(pin: "2468"), namesCarrierAData: false),
            Probe(endpoint: .registerDeviceToken, parameters: [], body: RegisterDeviceTokenRequest(token: "token-%", platform: .ios),
                  namesCarrierAData: false),
            Probe(endpoint: .removeDeviceToken, parameters: [deviceToken], body: nil, namesCarrierAData: true),
            Probe(endpoint: .trips, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .trip, parameters: [t], body: nil, namesCarrierAData: true),
            // The owner's second trip, under way since its paper fixture's pickup: starting it again is the owner's no-op.
            Probe(endpoint: .startTrip, parameters: [a.trips[0][1].id.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .tripOrders, parameters: [t], body: nil, namesCarrierAData: true),
            Probe(endpoint: .tripExpenses, parameters: [t], body: nil, namesCarrierAData: true),
            Probe(endpoint: .orders, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .order, parameters: [o], body: nil, namesCarrierAData: true),
            Probe(endpoint: .createExpense, parameters: [],
                  body: CreateExpenseRequest(tripID: trip.id, category: .tolls, amountCents: 500, date: LocalDate(Date())),
                  namesCarrierAData: true),
            Probe(endpoint: .notifications, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .sync, parameters: [], body: nil, namesCarrierAData: false, query: "since=0"),
            Probe(endpoint: .sync, parameters: [], body: nil, namesCarrierAData: false, query: "since=1"),
            Probe(endpoint: .realtime, parameters: [], body: nil, namesCarrierAData: false, query: "since=1"),
            // Dispatch endpoints (the carrier's own dispatcher runs these before the owner's writes below).
            Probe(endpoint: .dispatchDrivers, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .dispatchCreateDriver, parameters: [],
                  body: CreateDriverRequest(email: "new-%@example.com", name: "New", payType: .perMile, payRate: 50),
                  namesCarrierAData: false),
            Probe(endpoint: .dispatchUpdateDriver, parameters: [idleDriver.rawValue], body: UpdateDriverRequest(phone: "+1 555 0100"),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchDeactivateDriver, parameters: [idleDriver.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchReactivateDriver, parameters: [idleDriver.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchTrips, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .dispatchCreateTrip, parameters: [],
                  body: CreateTripRequest(number: "NEW-%", origin: "A", destination: "B", revenueCents: 100, miles: 10),
                  namesCarrierAData: false),
            Probe(endpoint: .dispatchTrip, parameters: [t], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchUpdateTrip, parameters: [t], body: UpdateTripRequest(origin: "Changed origin"), namesCarrierAData: true),
            Probe(endpoint: .dispatchAssignTrip, parameters: [t], body: AssignTripRequest(driverID: a.driverID(0)), namesCarrierAData: true),
            Probe(endpoint: .dispatchTripExpenses, parameters: [t], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchOrders, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .dispatchCreateOrder, parameters: [],
                  body: CreateOrderRequest(number: "ORD-%", tripID: trip.id, vehicle: Vehicle(make: "Kia"),
                                           pickup: Stop(address: "P"), delivery: Stop(address: "D"), revenueCents: 100),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchOrder, parameters: [o], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchUpdateOrder, parameters: [o], body: UpdateOrderRequest(revenueCents: 999), namesCarrierAData: true),
            Probe(endpoint: .dispatchAssignOrder, parameters: [o], body: AssignOrderRequest(tripID: trip.id), namesCarrierAData: true),
            Probe(endpoint: .dispatchSendMessage, parameters: [],
                  body: SendMessageRequest(driverID: a.driverID(0), type: .dispatchMessage, title: "Hi", body: "there"),
                  namesCarrierAData: true),
            // Positions: anyone's own go in; dispatch reads a trip's track and an order's progress.
            Probe(endpoint: .recordLocations, parameters: [], body: RecordLocationsRequest(fixes: [
                GeoPosition(latitude: 41.5, longitude: -88.1, accuracyMeters: 10, recordedAt: Date().addingTimeInterval(-30))]),
                  namesCarrierAData: false),
            Probe(endpoint: .dispatchPositions, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .dispatchTripTrack, parameters: [trip.id.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchOrderProgress, parameters: [o], body: nil, namesCarrierAData: true),
            // Inspections and uploads: reads first, the owner's writes after them.
            Probe(endpoint: .inspection, parameters: [i], body: nil, namesCarrierAData: true),
            Probe(endpoint: .orderInspections, parameters: [o], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchOrderInspections, parameters: [o], body: nil, namesCarrierAData: true),
            Probe(endpoint: .inspectionMedia, parameters: [i, "front"], body: nil, namesCarrierAData: true),
            Probe(endpoint: .uploadOffset, parameters: [u], body: nil, namesCarrierAData: true, headers: tus),
            Probe(endpoint: .saveInspection, parameters: [i],
                  body: SaveInspectionRequest(orderID: order.id, kind: .pickup, notes: "Owner's note"), namesCarrierAData: true),
            Probe(endpoint: .putInspectionMedia, parameters: [i, "damage_2"], body: nil, namesCarrierAData: true,
                  bytes: MediaSamples.jpeg()),
            Probe(endpoint: .createUpload, parameters: [], body: nil, namesCarrierAData: true, headers: tus.merging([
                "Upload-Length": "1000", "Upload-Metadata": MediaSamples.metadata(inspection.inspection, MediaSlot("damage_3")),
            ]) { $1 }),
            Probe(endpoint: .appendUpload, parameters: [u], body: nil, namesCarrierAData: true, bytes: inspection.uploadBytes,
                  headers: tus.merging(["Upload-Offset": "0", "Content-Type": Tus.patchContentType]) { $1 }),
            Probe(endpoint: .terminateUpload, parameters: [u], body: nil, namesCarrierAData: true, headers: tus),
            Probe(endpoint: .completeInspection, parameters: [i], body: nil, namesCarrierAData: true),
            // The owner's writes come last.
            Probe(endpoint: .updateOrderStatus, parameters: [o], body: UpdateOrderStatusRequest(status: .pickedUp), namesCarrierAData: true),
            Probe(endpoint: .updateOrderETA, parameters: [o], body: UpdateETARequest(deliveryETA: Date().addingTimeInterval(86_400)),
                  namesCarrierAData: true),
            Probe(endpoint: .deleteExpense, parameters: [expense.id.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .mutations, parameters: [],
                  body: MutationBatch([Mutation(.updateOrderETA(.init(orderID: order.id, deliveryETA: Date().addingTimeInterval(7200)))),
                                       Mutation(.deleteExpense(.init(expenseID: expense.id)))]),
                  namesCarrierAData: true),
            Probe(endpoint: .markNotificationRead, parameters: [notification.id.rawValue], body: nil, namesCarrierAData: true),
            // Each caller reports their own phone; dispatch reads its own carrier's reports only.
            Probe(endpoint: .reportDeviceBacklog, parameters: [],
                  body: DeviceBacklog(deviceID: "phone-1", waitingChanges: 1, waitingFiles: 0, fileBytes: 0, oldestAt: nil,
                                      items: [.init(status: .waiting, what: "your pickup ETA for O-1")]),
                  namesCarrierAData: false),
            Probe(endpoint: .dispatchDeviceBacklogs, parameters: [], body: nil, namesCarrierAData: false),
        ]
    }

    struct FleetProbeData {
        let unit: ID<Equipment>
        let document: ID<EquipmentDocument>
        let owner: ID<Driver>
        let photo: ID<EquipmentPhoto>
        let doomedPhoto: ID<EquipmentPhoto>
    }

    /// The fleet endpoints, aimed at the owner's truck (dispatch's reads and
    /// edits first, deleting its paper last).
    func fleetProbes(_ fleet: FleetProbeData, trip: Trip) -> [Probe] {
        let unit = fleet.unit.rawValue
        let csv = ["Content-Type": "text/csv"]
        return [
            Probe(endpoint: .decodeVIN, parameters: ["1HGCM82633A004352"], body: nil, namesCarrierAData: false),
            Probe(endpoint: .equipment, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .equipmentUnit, parameters: [unit], body: nil, namesCarrierAData: true),
            Probe(endpoint: .recordOdometer, parameters: [], body: RecordOdometerRequest(equipmentID: fleet.unit, miles: 120_000),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchEquipment, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .dispatchCreateEquipment, parameters: [], body: EquipmentFields(kind: .trailer, unitNumber: "NEW-%"),
                  namesCarrierAData: false),
            Probe(endpoint: .dispatchEquipmentUnit, parameters: [unit], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchUpdateEquipment, parameters: [unit], body: EquipmentFields(notes: "Checked by dispatch"),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchAssignEquipment, parameters: [unit], body: AssignEquipmentRequest(driverID: fleet.owner),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchEquipmentStatus, parameters: [], body: EquipmentStatusChange(ids: [fleet.unit], status: .active),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchImportEquipment, parameters: [], body: nil, namesCarrierAData: false,
                  bytes: Array("unit_number,kind,notes\nIMPORTED-1,truck,From a file\n".utf8), headers: csv),
            Probe(endpoint: .dispatchImportOrders, parameters: [], body: nil, namesCarrierAData: false,
                  bytes: Array("number,pickup_address,delivery_address,revenue\nCSV-1,1 Main St,2 Elm St,450\n".utf8), headers: csv),
            Probe(endpoint: .dispatchAddEquipmentDocument, parameters: [unit], body: AddEquipmentDocumentRequest(kind: .insurance),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchExpiringDocuments, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .dispatchOdometerReadings, parameters: [unit], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchFuelReport, parameters: [unit], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchDeleteEquipmentDocument, parameters: [unit, fleet.document.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .unitPhoto, parameters: [unit, fleet.photo.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .addUnitPhoto, parameters: [unit], body: nil, namesCarrierAData: true, bytes: MediaSamples.jpeg()),
            Probe(endpoint: .deleteUnitPhoto, parameters: [unit, fleet.doomedPhoto.rawValue], body: nil, namesCarrierAData: true),
        ]
    }

    func customerProbes(_ customer: ID<Customer>, order: ID<Order>) -> [Probe] {
        [
            Probe(endpoint: .dispatchCustomers, parameters: [], body: nil, namesCarrierAData: false, query: "q=broker"),
            Probe(endpoint: .dispatchCreateCustomer, parameters: [], body: CreateCustomerRequest(name: "Probe Customer"), namesCarrierAData: false),
            Probe(endpoint: .dispatchCustomer, parameters: [customer.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchUpdateCustomer, parameters: [customer.rawValue], body: UpdateCustomerRequest(notes: "Pays in 10 days"),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchCreateTrackingLink, parameters: [order.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchTrackingLink, parameters: [order.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchRevokeTrackingLink, parameters: [order.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchBillOfLading, parameters: [order.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchCarrierProfile, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .dispatchUpdateCarrierProfile, parameters: [], body: UpdateCarrierProfileRequest(mcNumber: "MC-123456"),
                  namesCarrierAData: false),
            Probe(endpoint: .dispatchImportCustomers, parameters: [], body: nil, namesCarrierAData: false,
                  bytes: Array("name,kind\nImported Customer,dealer\n".utf8), headers: ["Content-Type": "text/csv"]),
        ]
    }

    /// Carrier A's invoices: an order freed by a void (to invoice), a draft to edit and send, one to void, and a sent
    /// invoice with a payment.
    struct InvoiceProbeData {
        let free: ID<Order>
        let draft: ID<Invoice>
        let doomed: ID<Invoice>
        let sent: ID<Invoice>
        let payment: ID<InvoicePayment>
    }

    static func invoiceFixture(_ store: Store, _ a: CarrierFixture, customer: ID<Customer>, trip: ID<Trip>) async throws -> InvoiceProbeData {
        var orders: [ID<Order>] = []
        for index in 0..<4 {
            let order = try await store.orders.create(CreateOrderRequest(number: "BILL-\(index)", tripID: trip, vehicle: Vehicle(make: "Kia"),
                                                                         pickup: Stop(address: "P"), delivery: Stop(address: "D"),
                                                                         revenueCents: 50_000, customerID: customer), tenant: a.tenant.id)
            for status in [OrderStatus.pickedUp, .delivered] {
                _ = try await store.orders.updateStatus(order.id, to: status, occurredAt: nil, a.scope)
            }
            orders.append(order.id)
        }
        let drafts = try await store.invoices.page(status: .draft, customer: customer, offset: 0, limit: 10, tenant: a.tenant.id)
        func draft(_ order: ID<Order>) throws -> ID<Invoice> { try #require(drafts.first { $0.orders.first?.id == order }).id }
        _ = try await store.invoices.void(try draft(orders[0]), reason: "Freed for the probe", tenant: a.tenant.id)
        _ = try await store.invoices.send(try draft(orders[3]), email: false, tenant: a.tenant.id)
        let payment = ID<InvoicePayment>()
        _ = try await store.invoices.recordPayment(try draft(orders[3]), RecordPaymentRequest(id: payment, amountCents: 1_000, method: .check),
                                                   tenant: a.tenant.id)
        return InvoiceProbeData(free: orders[0], draft: try draft(orders[1]), doomed: try draft(orders[2]), sent: try draft(orders[3]),
                                payment: payment)
    }

    func invoiceProbes(_ data: InvoiceProbeData) -> [Probe] {
        let (sent, draft) = (data.sent.rawValue, data.draft.rawValue)
        return [
            Probe(endpoint: .dispatchInvoices, parameters: [], body: nil, namesCarrierAData: false, query: "status=sent"),
            Probe(endpoint: .dispatchCreateInvoice, parameters: [], body: CreateInvoiceRequest(orderIDs: [data.free]), namesCarrierAData: true),
            Probe(endpoint: .dispatchInvoice, parameters: [sent], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchUpdateInvoice, parameters: [draft], body: UpdateInvoiceRequest(notes: "Checked"), namesCarrierAData: true),
            Probe(endpoint: .dispatchSendInvoice, parameters: [draft], body: SendInvoiceRequest(email: false), namesCarrierAData: true),
            Probe(endpoint: .dispatchVoidInvoice, parameters: [data.doomed.rawValue], body: VoidInvoiceRequest(reason: "Probe"), namesCarrierAData: true),
            Probe(endpoint: .dispatchInvoicePDF, parameters: [sent], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchRecordPayment, parameters: [sent], body: RecordPaymentRequest(amountCents: 100, method: .cash),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchRemovePayment, parameters: [sent, data.payment.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchReceivables, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .dispatchInvoicesExport, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .dispatchPaymentsExport, parameters: [], body: nil, namesCarrierAData: false),
        ]
    }

    /// The owner's paper behind money: an expense with two receipt photos (one to read, one to remove), and
    /// cash they collected on a delivered order, with its photo.
    struct PaperProbeData {
        let expense: String
        let receipt: ID<ReceiptPhoto>
        let doomedReceipt: ID<ReceiptPhoto>
        let order: String
        let invoice: String
        let payment: String
        let photo: ID<ReceiptPhoto>
    }

    static func paperFixture(_ api: TestAPI, _ store: Store, _ a: CarrierFixture, customer: ID<Customer>) async throws -> PaperProbeData {
        let owner = Scope.driver(tenant: a.tenant.id, driver: a.driverID(0))
        let trip = a.trips[0][1].id
        let expense = try await store.expenses.create(CreateExpenseRequest(id: ID(), tripID: trip, category: .tolls, amountCents: 1_250,
                                                                           date: LocalDate(Date())), owner)
        var receipts: [ID<ReceiptPhoto>] = []
        for size in [500, 600] {
            receipts = try await api.call(.addExpenseReceipt, expense.id.rawValue, bytes: MediaSamples.jpeg(size: size), token: a.driver.accessToken)
                .decode(Expense.self).receipts.map(\.id)
        }
        let order = try await store.orders.create(CreateOrderRequest(number: "COD-1", tripID: trip, vehicle: Vehicle(make: "Kia"),
                                                                     pickup: Stop(address: "P"), delivery: Stop(address: "D"),
                                                                     revenueCents: 40_000, customerID: customer), tenant: a.tenant.id)
        for status in [OrderStatus.pickedUp, .delivered] {
            _ = try await store.orders.updateStatus(order.id, to: status, occurredAt: nil, a.scope)
        }
        let payment = try await store.invoices.collect(CollectPaymentRequest(orderID: order.id, amountCents: 30_000, method: .cash), owner)
        let photographed = try await api.call(.addCollectionPhoto, payment.id.rawValue, bytes: MediaSamples.jpeg(size: 700),
                                              token: a.driver.accessToken).decode(InvoicePayment.self)
        return PaperProbeData(expense: expense.id.rawValue, receipt: receipts[0], doomedReceipt: receipts[1], order: order.id.rawValue,
                              invoice: payment.invoiceID.rawValue, payment: payment.id.rawValue, photo: try #require(photographed.photos.first).id)
    }

    func paperProbes(_ data: PaperProbeData) -> [Probe] {
        [
            Probe(endpoint: .expenseReceipt, parameters: [data.expense, data.receipt.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .addExpenseReceipt, parameters: [data.expense], body: nil, namesCarrierAData: true, bytes: MediaSamples.jpeg()),
            Probe(endpoint: .deleteExpenseReceipt, parameters: [data.expense, data.doomedReceipt.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .collectPayment, parameters: [],
                  body: CollectPaymentRequest(orderID: ID(data.order)!, amountCents: 500, method: .check, reference: "PROBE-1"),
                  namesCarrierAData: true),
            Probe(endpoint: .addCollectionPhoto, parameters: [data.payment], body: nil, namesCarrierAData: true, bytes: MediaSamples.jpeg()),
            Probe(endpoint: .dispatchPaymentPhoto, parameters: [data.invoice, data.payment, data.photo.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchDepositPayment, parameters: [data.invoice, data.payment], body: DepositPaymentRequest(), namesCarrierAData: true),
        ]
    }

    /// The owner's pay: last week approved (its statement, to mark paid), this week approved (to reopen), an entry
    /// and a recurring deduction to remove; the sibling's week, to approve.
    struct SettlementProbeData {
        let owner: String
        let sibling: String
        let settlement: String
        let doomed: String
        let item: String
        let deduction: String
    }

    static func settlementFixture(_ store: Store, _ a: CarrierFixture) async throws -> SettlementProbeData {
        let (owner, tenant) = (a.driverID(0), a.tenant.id)
        let today = LocalDate(store.now)
        let lastWeek = SettlementRules.week(of: today).start.adding(days: -1)
        _ = try await store.settlements.addItem(driver: owner, CreatePayItemRequest(kind: .bonus, description: "Probe bonus", amountCents: 1_000,
                                                                                    date: lastWeek), tenant: tenant)
        let settlement = try await store.settlements.approve(driver: owner, ApproveSettlementRequest(week: lastWeek, email: false), tenant: tenant)
        // The latest week, which may be reopened.
        let doomed = try await store.settlements.approve(driver: owner, ApproveSettlementRequest(week: today, email: false), tenant: tenant)
        let item = try await store.settlements.addItem(driver: owner, CreatePayItemRequest(kind: .bonus, description: "Probe", amountCents: 500),
                                                       tenant: tenant)
        let deduction = try await store.settlements.addDeduction(driver: owner, CreateRecurringDeductionRequest(description: "Escrow",
                                                                                                                amountCents: 2_500), tenant: tenant)
        return SettlementProbeData(owner: owner.rawValue, sibling: a.driverID(1).rawValue, settlement: try #require(settlement.id).rawValue,
                                   doomed: try #require(doomed.id).rawValue, item: item.id.rawValue, deduction: deduction.id.rawValue)
    }

    func settlementProbes(_ data: SettlementProbeData) -> [Probe] {
        let today = LocalDate(Date())
        return [
            Probe(endpoint: .earnings, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .settlementStatement, parameters: [data.settlement], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchSettlements, parameters: [], body: nil, namesCarrierAData: false, query: "week=\(today)"),
            Probe(endpoint: .dispatchSettlement, parameters: [data.settlement], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchDriverPay, parameters: [data.owner], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchApproveSettlement, parameters: [data.sibling], body: ApproveSettlementRequest(week: today, email: false),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchEmailStatement, parameters: [data.settlement], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchSettlementStatement, parameters: [data.settlement], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchMarkSettlementPaid, parameters: [data.settlement], body: MarkSettlementPaidRequest(reference: "Probe"),
                  namesCarrierAData: true),
            Probe(endpoint: .dispatchReopenSettlement, parameters: [data.doomed], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchAddPayItem, parameters: [data.owner], body: CreatePayItemRequest(kind: .bonus, description: "Probe bonus",
                                                                                                       amountCents: 100), namesCarrierAData: true),
            Probe(endpoint: .dispatchRemovePayItem, parameters: [data.owner, data.item], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchAddDeduction, parameters: [data.owner], body: CreateRecurringDeductionRequest(description: "Probe deduction",
                                                                                                                amountCents: 100), namesCarrierAData: true),
            Probe(endpoint: .dispatchEndDeduction, parameters: [data.owner, data.deduction], body: nil, namesCarrierAData: true),
        ]
    }

    func expectedStatuses(_ caller: Caller, _ probe: Probe) -> Set<Int> {
        // Without an upgrade, the realtime endpoint answers an allowed caller 426.
        let ok: Set<Int> = probe.endpoint == .realtime ? [426] : [200, 201, 204]
        switch caller {
        case .noToken, .forgedToken, .expiredToken:
            return [401]
        case .owner:
            // The carrier's dispatcher (asked just before) removed the photo already.
            if probe.endpoint == .deleteUnitPhoto || probe.endpoint == .deleteExpenseReceipt { return [404] }
            return probe.endpoint.access == .dispatcher ? [403] : ok
        case .dispatcher:
            return probe.endpoint.access == .driver ? [403] : (probe.endpoint == .removeDeviceToken ? [404] : ok)
        case .sibling, .foreignDriver:
            if probe.endpoint.access == .dispatcher { return [403] }
            // A batch answers 200 with each mutation rejected (checked below: nothing changed, nothing leaked).
            if probe.endpoint == .mutations { return [200] }
            return probe.namesCarrierAData ? [404] : ok
        case .foreignDispatcher:
            if probe.endpoint.access == .driver { return [403] }
            return probe.namesCarrierAData ? [404, 422] : ok
        }
    }

    func forToken(_ caller: Caller, a: CarrierFixture, b: CarrierFixture) -> String? {
        switch caller {
        case .owner, .expiredToken: return a.drivers[0].accessToken
        case .sibling: return a.drivers[1].accessToken
        case .dispatcher: return a.dispatcher.accessToken
        case .foreignDriver: return b.drivers[0].accessToken
        case .foreignDispatcher: return b.dispatcher.accessToken
        case .noToken: return nil
        case .forgedToken: return Self.resign(a.drivers[0].accessToken, key: Array("an attacker's key, 32+ bytes long!!".utf8))
        }
    }

    /// The same claims, signed with a key the server does not have.
    static func resign(_ token: String, key: [UInt8]) -> String {
        let parts = token.split(separator: ".")
        let signingInput = parts[0] + "." + parts[1]
        let mac = HMAC<SHA256>.authenticationCode(for: Array(signingInput.utf8), using: SymmetricKey(data: key))
        return signingInput + "." + SecureToken.base64URL(Array(mac))
    }

    /// Makes names and tokens in create bodies unique per caller.
    /// The owner writes to dispatch and answers an urgent message; dispatch reads the inbox and the conversation.
    func conversationProbes(owner: ID<Driver>, trip: ID<Trip>, order: ID<Order>, urgent: ID<DriverNotification>) -> [Probe] {
        [
            // By the time the owner calls, their order is picked up (its delivery is where a problem can be).
            Probe(endpoint: .reportStopProblem, parameters: [], body: ReportStopProblemRequest(orderID: order, stop: .delivery, kind: .waiting),
                  namesCarrierAData: true),
            Probe(endpoint: .sendMessage, parameters: [], body: SendDriverMessageRequest(body: "Gate is locked", tripID: trip), namesCarrierAData: true),
            Probe(endpoint: .acknowledgeNotification, parameters: [urgent.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchConversations, parameters: [], body: nil, namesCarrierAData: false),
            Probe(endpoint: .dispatchConversation, parameters: [owner.rawValue], body: nil, namesCarrierAData: true),
            Probe(endpoint: .dispatchReadConversation, parameters: [owner.rawValue], body: nil, namesCarrierAData: true),
        ]
    }

    func personalize(_ body: (any Encodable & Sendable)?, caller: Caller, index: Int) -> (any Encodable & Sendable)? {
        let tag = "\(caller.hashValue & 0xFFFF)x\(index)"
        switch body {
        case var request as SendDriverMessageRequest:
            request.id = ID()  // each caller's own message
            return request
        case var request as ReportStopProblemRequest:
            request.id = ID()  // each caller's own report
            return request
        case var request as RegisterDeviceTokenRequest:
            request.token = request.token.replacingOccurrences(of: "%", with: tag)
            return request
        case var request as CreateDriverRequest:
            request.email = request.email.replacingOccurrences(of: "%", with: tag)
            return request
        case var request as CreateTripRequest:
            request.number = request.number.replacingOccurrences(of: "%", with: tag)
            return request
        case var request as CreateOrderRequest:
            request.number = request.number.replacingOccurrences(of: "%", with: tag)
            return request
        case var request as EquipmentFields:
            request.unitNumber = request.unitNumber?.replacingOccurrences(of: "%", with: tag)
            return request
        default:
            return body
        }
    }

    func allIdentifiers(of carrier: CarrierFixture, store: Store) async throws -> Set<String> {
        var strings: Set<String> = [carrier.tenant.id.rawValue, carrier.dispatcher.user.id.rawValue, carrier.dispatcher.user.email]
        for session in carrier.drivers {
            strings.formUnion([session.user.id.rawValue, session.user.email, session.driver!.id.rawValue])
        }
        for trip in carrier.trips.flatMap({ $0 }) {
            strings.insert(trip.id.rawValue)
            strings.formUnion(carrier.orders[trip.id]!.map(\.id.rawValue))
            strings.formUnion(carrier.expenses[trip.id]!.map(\.id.rawValue))
        }
        strings.formUnion(try await store.notifications.list(carrier.scope, limit: 500).map(\.id.rawValue))
        return strings
    }
}
