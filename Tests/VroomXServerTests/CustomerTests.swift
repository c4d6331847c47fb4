import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Customers through the API: one name per carrier, orders that name them
/// (never another carrier's), the feed, search, the CSV imports that make
/// them, and yesterday's order JSON still accepted and answered.
@Suite("Customers")
struct CustomerTests {
    @Test("a carrier's customers: unique names, edits with versions, search, orders naming them and the feed; another carrier sees none",
          arguments: TestBackend.available)
    func customersAndOrders(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let (dispatch, other, driver) = (alpha.dispatcher.accessToken, beta.dispatcher.accessToken, alpha.driver.accessToken)
        try await server.run { api in
            let cursor = try await api.call(.sync, query: "since=0", token: dispatch).decode(SyncPage.self).cursor
            let created = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(
                name: "  Midwest  Auto Brokers ", kind: .broker, billingContact: "Dana Reyes", email: " Billing@MidwestAuto.example ",
                phone: "312-555-0100", paymentTerms: "Net 15"), token: dispatch)
            #expect(created.status == 201, "\(created.text)")
            let midwest = try created.decode(Customer.self)
            #expect(midwest.name == "Midwest Auto Brokers" && midwest.email == "billing@midwestauto.example" && midwest.version == 1)
            // One name per carrier, ignoring case and spacing; another carrier may use it.
            let twin = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(name: "midwest auto  BROKERS"), token: dispatch)
            #expect(twin.status == 409 && twin.errorCode == "already_exists" && twin.error?.field == "name", "\(twin.text)")
            #expect(try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(name: "Midwest Auto Brokers"), token: other).status == 201)
            for (request, field) in [(CreateCustomerRequest(name: ""), "name"), (CreateCustomerRequest(name: "X", email: "not-mail"), "email"),
                                     (CreateCustomerRequest(name: String(repeating: "n", count: 201)), "name"),
                                     (CreateCustomerRequest(name: "Y", notes: String(repeating: "n", count: 2001)), "notes"),
                                     (CreateCustomerRequest(name: "Z", phone: "312\n555"), "phone"),
                                     (CreateCustomerRequest(name: "Z", email: "x>,<evil@attacker.example"), "email"),
                                     (CreateCustomerRequest(name: "Z", email: "a;b@attacker.example"), "email"),
                                     (CreateCustomerRequest(name: "Z", email: "\"quoted\"@example.com"), "email"),
                                     (CreateCustomerRequest(name: "Z", phone: "\u{202E}5550100"), "phone"),
                                     (CreateCustomerRequest(name: "Z", billingContact: "Dana\u{2028}Reyes"), "billing_contact")] {
                let refused = try await api.call(.dispatchCreateCustomer, json: request, token: dispatch)
                #expect(refused.status == 422 && refused.error?.field == field, "\(field): \(refused.text)")
            }
            let lakeside = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(name: "Lakeside Toyota", kind: .dealer),
                                              token: dispatch).decode(Customer.self)

            // Search by name, contact, email or phone; a wildcard is a letter like any other.
            func names(_ query: String, _ token: String = dispatch) async throws -> [String] {
                try await api.call(.dispatchCustomers, query: query, token: token).decode(Items<Customer>.self).items.map(\.name)
            }
            #expect(try await names("") == ["Lakeside Toyota", "Midwest Auto Brokers"])
            #expect(try await names("q=dana") == ["Midwest Auto Brokers"])
            #expect(try await names("q=Midwest+Auto") == ["Midwest Auto Brokers"], "a form's + is a space")
            #expect(try await names("q=%2B1") == [], "and %2B a plus sign")
            #expect(try await names("q=555-0100") == ["Midwest Auto Brokers"])
            #expect(try await names("q=(312)%20555%200100") == ["Midwest Auto Brokers"], "a number typed any way")
            #expect(try await names("q=3125550100") == ["Midwest Auto Brokers"])
            #expect(try await names("q=TOYOTA") == ["Lakeside Toyota"])
            _ = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(name: "Caf\u{E9} Motors"), token: other)
            #expect(try await names("q=cafe%CC%81", other) == ["Café Motors"], "a decomposed é finds the composed one")
            #expect(try await names("q=%25") == [])
            #expect(try await names("q=lakeside", other) == [])
            #expect(try await api.call(.dispatchCustomers, query: "q=" + String(repeating: "a", count: 101), token: dispatch).status == 400)
            #expect(try await api.call(.dispatchCustomer, midwest.id.rawValue, token: other).status == 404)
            #expect(try await api.call(.dispatchCustomers, token: driver).status == 403)

            // Edits: the fields given; a stale version is a conflict.
            let edited = try await api.call(.dispatchUpdateCustomer, midwest.id.rawValue, json: UpdateCustomerRequest(
                phone: "312-555-0199", baseVersion: 1), token: dispatch)
            #expect(try edited.status == 200 && edited.decode(Customer.self).version == 2, "\(edited.text)")
            let stale = try await api.call(.dispatchUpdateCustomer, midwest.id.rawValue, json: UpdateCustomerRequest(notes: "x", baseVersion: 1),
                                           token: dispatch)
            #expect(stale.status == 409 && stale.errorCode == "conflict", "\(stale.text)")
            #expect(try await api.call(.dispatchUpdateCustomer, midwest.id.rawValue, json: UpdateCustomerRequest(name: "lakeside toyota"),
                                       token: dispatch).status == 409)

            // An order names the customer and takes their terms when it gives none; another carrier's customer is no customer.
            let trip = alpha.trips[0][0]
            let order = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "C-1", tripID: trip.id, vehicle: Vehicle(year: 2021, make: "Toyota", model: "Camry"),
                pickup: Stop(address: "1 Auction Way, Matteson, IL"), delivery: Stop(address: "500 Lake St, Milwaukee, WI"),
                revenueCents: 45_000, customerID: midwest.id, externalLoadID: " LB-88213 "), token: dispatch)
            #expect(order.status == 201, "\(order.text)")
            let placed = try order.decode(Order.self)
            #expect(placed.customerID == midwest.id && placed.paymentTerms == "Net 15" && placed.externalLoadID == "LB-88213")
            let betaCustomer = try await api.call(.dispatchCustomers, token: other).decode(Items<Customer>.self).items[0]
            let foreign = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "C-2", vehicle: Vehicle(), pickup: Stop(address: "A"), delivery: Stop(address: "B"), revenueCents: 1,
                customerID: betaCustomer.id), token: dispatch)
            #expect(foreign.status == 422 && foreign.error?.field == "customer_id", "\(foreign.text)")
            #expect(try await api.call(.dispatchUpdateOrder, placed.id.rawValue, json: UpdateOrderRequest(customerID: .some(betaCustomer.id)),
                                       token: dispatch).error?.field == "customer_id")
            // Orders by customer; the driver sees the id and the load's reference.
            let theirs = try await api.call(.dispatchOrders, query: "customer_id=\(midwest.id)", token: dispatch).decode(Items<Order>.self).items
            #expect(theirs.map(\.number) == ["C-1"])
            #expect(try await api.call(.dispatchOrders, query: "customer_id=\(lakeside.id)", token: dispatch).decode(Items<Order>.self).items.isEmpty)
            let seen = try await api.call(.order, placed.id.rawValue, token: driver).decode(Order.self)
            #expect(seen.customerID == midwest.id && seen.externalLoadID == "LB-88213")
            // Another customer, then none; an empty reference removes it.
            let moved = try await api.call(.dispatchUpdateOrder, placed.id.rawValue, json: UpdateOrderRequest(customerID: .some(lakeside.id)),
                                           token: dispatch).decode(Order.self)
            #expect(moved.customerID == lakeside.id && moved.externalLoadID == "LB-88213")
            let cleared = try await api.call(.dispatchUpdateOrder, placed.id.rawValue, json: UpdateOrderRequest(customerID: .some(nil), externalLoadID: ""),
                                             token: dispatch)
            let none = try cleared.decode(Order.self)
            #expect(none.customerID == nil && none.externalLoadID == nil, "\(cleared.text)")
            #expect(!cleared.text.contains("customer_id") && !cleared.text.contains("external_load_id"), "absent, as before customers: \(cleared.text)")

            // Dispatch's feed carries customers; a driver's never does, in changes or a snapshot.
            let feed = try await api.call(.sync, query: "since=\(cursor)", token: dispatch).decode(SyncPage.self).changes
            let customerIDs = Set(feed.filter { $0.entity == .customer }.map(\.id))
            #expect(customerIDs == [midwest.id.rawValue, lakeside.id.rawValue])
            if case .customer(let fed)? = feed.last(where: { $0.entity == .customer && $0.id == midwest.id.rawValue })?.row {
                #expect(fed.phone == "312-555-0199")
            } else {
                Issue.record("no customer row in the feed")
            }
            let snapshot = try await api.call(.sync, query: "since=0&limit=1000", token: dispatch).decode(SyncPage.self).changes
            #expect(snapshot.filter { $0.entity == .customer }.count == 2)
            for query in ["since=0&limit=1000", "since=\(cursor)"] {
                let theirs = try await api.call(.sync, query: query, token: driver).decode(SyncPage.self).changes
                #expect(!theirs.contains { $0.entity == .customer }, "\(query)")
            }
        }
    }

    @Test("yesterday's clients: an order created and edited with the JSON of before customers, and answered in a shape they read",
          arguments: TestBackend.available)
    func yesterdaysOrderJSON(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        try await server.run { api in
            let create = """
                {"number":"OLD-1","vehicle":{"year":2019,"make":"Honda","model":"Civic","vin":"","color":"Blue"},
                 "pickup":{"name":"","address":"1 Harbor Rd","contact_name":"","contact_phone":""},
                 "delivery":{"name":"","address":"9 Main St","contact_name":"","contact_phone":""},
                 "revenue_cents":90000,"payment_terms":"COD"}
                """
            let created = try await api.call(.dispatchCreateOrder, body: create, token: carrier.dispatcher.accessToken,
                                             headers: ["Content-Type": "application/json"])
            #expect(created.status == 201, "\(created.text)")
            let id = try created.decode(Order.self).id
            let edited = try await api.call(.dispatchUpdateOrder, id.rawValue, body: #"{"revenue_cents":95000,"base_version":1}"#,
                                            token: carrier.dispatcher.accessToken, headers: ["Content-Type": "application/json"])
            #expect(edited.status == 200, "\(edited.text)")
            // Every key yesterday's Order had is answered, and nothing it would misread.
            let object = try JSONSerialization.jsonObject(with: Data(edited.text.utf8)) as? [String: Any] ?? [:]
            for key in ["id", "number", "vehicle", "pickup", "delivery", "status", "revenue_cents", "payment_terms", "version", "created_at",
                        "updated_at"] {
                #expect(object[key] != nil, "\(key) missing")
            }
            #expect(object["revenue_cents"] as? Int == 95_000 && object["payment_terms"] as? String == "COD")
            #expect(object["customer_id"] == nil && object["external_load_id"] == nil)
        }
    }

    @Test("customers by CSV: created or updated by name, all lines or none with every bad line named; an order file makes the customers it names",
          arguments: TestBackend.available)
    func imports(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let csv = ["Content-Type": "text/csv"]
        try await server.run { api in
            let good = """
                name,kind,billing_contact,email,phone,address,payment_terms,notes
                Midwest Auto Brokers,broker,Dana Reyes,billing@midwestauto.example,312-555-0100,"200 W Adams St, Chicago, IL",Net 15,
                Lakeside Toyota,Dealer,,,,,,
                """
            let imported = try await api.call(.dispatchImportCustomers, bytes: Array(good.utf8), token: dispatch, headers: csv)
            #expect(try imported.status == 200 && imported.decode(ImportResult.self) == ImportResult(created: 2, updated: 0), "\(imported.text)")
            let bad = """
                name,kind,email
                midwest auto brokers,broker,new@midwestauto.example
                Copart Dallas,junkyard,
                ,broker,
                Manheim,auction,not-an-email
                Manheim Chicago,auction,
                MANHEIM CHICAGO,auction,
                """
            let refused = try await api.call(.dispatchImportCustomers, bytes: Array(bad.utf8), token: dispatch, headers: csv)
            #expect(refused.status == 422 && refused.errorCode == "import_failed", "\(refused.text)")
            #expect(refused.error?.problems?.map(\.line) == [3, 4, 5, 7], "\(refused.text)")
            #expect(refused.error?.problems?.map(\.field) == ["kind", "name", "email", "name"])
            let stored = try await api.call(.dispatchCustomers, token: dispatch).decode(Items<Customer>.self).items
            #expect(stored.map(\.name) == ["Lakeside Toyota", "Midwest Auto Brokers"], "nothing of the bad file was written")
            #expect(stored[1].email == "billing@midwestauto.example")
            // A name the carrier has updates that customer with the columns given.
            let update = "name,email\nMIDWEST AUTO BROKERS,ar@midwestauto.example\nLakeside Toyota,\n"
            #expect(try await api.call(.dispatchImportCustomers, bytes: Array(update.utf8), token: dispatch, headers: csv)
                .decode(ImportResult.self) == ImportResult(created: 0, updated: 1))
            let midwest = try await api.call(.dispatchCustomers, query: "q=midwest", token: dispatch).decode(Items<Customer>.self).items[0]
            #expect(midwest.email == "ar@midwestauto.example" && midwest.billingContact == "Dana Reyes" && midwest.version == 2)

            // An order file names customers: the carrier's, or new ones made with the orders; spreadsheet dates are read.
            let orders = """
                number,external_load_id,customer,customer_kind,customer_email,pickup_address,delivery_address,revenue,pickup_from,pickup_to
                IMP-1,LB-1,midwest auto brokers,,,1 Harbor Rd,9 Main St,450.00,11/29/2026,11/30/26
                IMP-2,,Copart Dallas,Auction,titles@copart.example,1 Harbor Rd,9 Main St,300,2026-11-29,
                IMP-3,,copart dallas,,,1 Harbor Rd,9 Main St,300,,
                """
            let ordered = try await api.call(.dispatchImportOrders, bytes: Array(orders.utf8), token: dispatch, headers: csv)
            #expect(ordered.status == 200, "\(ordered.text)")
            let customers = try await api.call(.dispatchCustomers, token: dispatch).decode(Items<Customer>.self).items
            #expect(customers.map(\.name) == ["Copart Dallas", "Lakeside Toyota", "Midwest Auto Brokers"])
            let copart = try #require(customers.first { $0.name == "Copart Dallas" })
            #expect(copart.email == "titles@copart.example" && copart.kind == .auction)
            let all = try await api.call(.dispatchOrders, query: "limit=500", token: dispatch).decode(Items<Order>.self).items
            let byNumber = Dictionary(all.map { ($0.number, $0) }) { first, _ in first }
            #expect(byNumber["IMP-1"]?.customerID == midwest.id && byNumber["IMP-1"]?.externalLoadID == "LB-1")
            #expect(byNumber["IMP-1"]?.paymentTerms == "Net 15")
            #expect(byNumber["IMP-1"]?.pickup.windowStart == LocalDate(year: 2026, month: 11, day: 29))
            #expect(byNumber["IMP-1"]?.pickup.windowEnd == LocalDate(year: 2026, month: 11, day: 30))
            #expect(byNumber["IMP-2"]?.customerID == copart.id && byNumber["IMP-3"]?.customerID == copart.id)

            // A bad order line makes no customer either.
            let wrong = """
                number,customer,customer_email,pickup_address,delivery_address,revenue,pickup_from
                IMP-4,Manheim Chicago,,1 Harbor Rd,9 Main St,300,13/40/2026
                IMP-5,Adesa,bad-email,1 Harbor Rd,9 Main St,300,
                """
            let rejected = try await api.call(.dispatchImportOrders, bytes: Array(wrong.utf8), token: dispatch, headers: csv)
            #expect(rejected.status == 422 && rejected.error?.problems?.map(\.field) == ["pickup_from", "customer_email"], "\(rejected.text)")
            #expect(try await api.call(.dispatchCustomers, token: dispatch).decode(Items<Customer>.self).items.count == 3)
        }
    }
}
