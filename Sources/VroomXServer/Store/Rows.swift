import Foundation
import VroomXModels

// Mapping between table rows and the shared models. Each type lists the
// columns it reads, so a SELECT never depends on `*` and column order.

extension Tenant {
    static let columns: SQL = "id, name, created_at"

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), name: try row.string("name"), createdAt: try row.date("created_at"))
    }
}

extension User {
    static let columns: SQL = "id, tenant_id, email, role, pin_hash, created_at"

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), tenantID: try row.id("tenant_id"), email: try row.string("email"),
                  role: try row.enumeration("role"), hasPIN: try row.optionalString("pin_hash") != nil,
                  createdAt: try row.date("created_at"))
    }
}

extension Driver {
    /// Drivers are read joined with their user for the email.
    static let columns: SQL = """
        d.id, d.user_id, d.name, d.phone, u.email, d.pay_type, d.pay_rate, d.version, d.created_at, d.updated_at, d.deactivated_at
        """
    static let from: SQL = "drivers d JOIN users u ON u.id = d.user_id AND u.tenant_id = d.tenant_id"
    /// By name, as dispatch looks drivers up.
    static let order = ListOrder(.ascending("d.name", .text), .ascending("d.id", .text))

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), userID: try row.id("user_id"), name: try row.string("name"),
                  phone: try row.string("phone"), email: try row.string("email"), payType: try row.enumeration("pay_type"),
                  payRate: try row.int("pay_rate"), version: try row.int("version"),
                  createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
                  deactivatedAt: try row.optionalDate("deactivated_at"))
    }
}

extension Trip {
    static let columns: SQL = """
        id, number, driver_id, status, start_date, end_date, origin, destination, revenue_cents, driver_pay_cents, \
        miles, version, created_at, updated_at, revenue_set_by_hand
        """
    /// Newest work first; trips without a start date after dated ones.
    static let order = ListOrder(.descending("start_date", .text, nullable: true), .descending("created_at", .integer), .ascending("id", .text))

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), number: try row.string("number"), driverID: try row.optionalID("driver_id"),
                  status: try row.enumeration("status"), startDate: try row.optionalLocalDate("start_date"),
                  endDate: try row.optionalLocalDate("end_date"), origin: try row.string("origin"),
                  destination: try row.string("destination"), revenueCents: try row.int("revenue_cents"),
                  driverPayCents: try row.int("driver_pay_cents"), miles: try row.int("miles"),
                  version: try row.int("version"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
                  revenueSetByHand: try row.bool("revenue_set_by_hand"))
    }
}

extension Order {
    static let columns: SQL = """
        id, number, trip_id, driver_id, vehicle_year, vehicle_make, vehicle_model, vehicle_vin, vehicle_color, \
        pickup_name, pickup_address, pickup_contact_name, pickup_contact_phone, pickup_window_start, pickup_window_end, \
        delivery_name, delivery_address, delivery_contact_name, delivery_contact_phone, delivery_window_start, \
        delivery_window_end, status, actual_pickup_at, actual_delivery_at, pickup_eta, delivery_eta, revenue_cents, \
        payment_terms, version, created_at, updated_at, pickup_latitude, pickup_longitude, pickup_radius_m, \
        delivery_latitude, delivery_longitude, delivery_radius_m, arrived_at_pickup, arrived_at_delivery, customer_id, external_load_id, vehicles, \
        departed_at_pickup, departed_at_delivery, problems
        """
    static let order = ListOrder(.descending("created_at", .integer), .ascending("id", .text))

    /// A stop's column names, joined once rather than for every row read.
    fileprivate struct StopColumns: Sendable {
        let name, address, contactName, contactPhone, windowStart, windowEnd, latitude, longitude, radius: String

        init(_ prefix: String) {
            name = prefix + "_name"
            address = prefix + "_address"
            contactName = prefix + "_contact_name"
            contactPhone = prefix + "_contact_phone"
            windowStart = prefix + "_window_start"
            windowEnd = prefix + "_window_end"
            latitude = prefix + "_latitude"
            longitude = prefix + "_longitude"
            radius = prefix + "_radius_m"
        }

        static let pickup = StopColumns("pickup")
        static let delivery = StopColumns("delivery")
    }

    init(row: SQLRow) throws {
        let vehicles = try WireDocument.list(of: Vehicle.self, from: try row.string("vehicles"))
        self.init(
            id: try row.id("id"), number: try row.string("number"), tripID: try row.optionalID("trip_id"),
            driverID: try row.optionalID("driver_id"),
            vehicle: Vehicle(year: try row.optionalInt("vehicle_year"), make: try row.string("vehicle_make"),
                             model: try row.string("vehicle_model"), vin: try row.string("vehicle_vin"),
                             color: try row.string("vehicle_color")),
            pickup: try Stop(row: row, .pickup), delivery: try Stop(row: row, .delivery), status: try row.enumeration("status"),
            actualPickupDate: try row.optionalDate("actual_pickup_at"),
            actualDeliveryDate: try row.optionalDate("actual_delivery_at"),
            pickupETA: try row.optionalDate("pickup_eta"), deliveryETA: try row.optionalDate("delivery_eta"),
            revenueCents: try row.int("revenue_cents"), paymentTerms: try row.string("payment_terms"),
            version: try row.int("version"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
            arrivedAtPickup: try row.optionalDate("arrived_at_pickup"), arrivedAtDelivery: try row.optionalDate("arrived_at_delivery"),
            customerID: try row.optionalID("customer_id"), externalLoadID: try row.optionalString("external_load_id"),
            vehicles: vehicles, departedPickupAt: try row.optionalDate("departed_at_pickup"),
            departedDeliveryAt: try row.optionalDate("departed_at_delivery"),
            problems: try WireDocument.list(of: StopProblem.self, from: try row.string("problems")))
    }
}

extension Stop {
    fileprivate init(row: SQLRow, _ columns: Order.StopColumns) throws {
        var location: GeoPoint?
        if let latitude = try row.optionalDouble(columns.latitude), let longitude = try row.optionalDouble(columns.longitude) {
            location = GeoPoint(latitude: latitude, longitude: longitude)
        }
        self.init(name: try row.string(columns.name), address: try row.string(columns.address),
                  contactName: try row.string(columns.contactName), contactPhone: try row.string(columns.contactPhone),
                  windowStart: try row.optionalLocalDate(columns.windowStart), windowEnd: try row.optionalLocalDate(columns.windowEnd),
                  location: location, geofenceRadiusMeters: try row.optionalInt(columns.radius))
    }
}

extension OrderAhead {
    static let columns: SQL = """
        id, number, trip_id, driver_id, status, pickup_eta, delivery_eta, created_at, arrived_at_pickup, arrived_at_delivery, \
        pickup_name, pickup_address, pickup_contact_name, pickup_contact_phone, pickup_window_start, pickup_window_end, \
        pickup_latitude, pickup_longitude, pickup_radius_m, \
        delivery_name, delivery_address, delivery_contact_name, delivery_contact_phone, delivery_window_start, \
        delivery_window_end, delivery_latitude, delivery_longitude, delivery_radius_m
        """

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), number: try row.string("number"), tripID: try row.optionalID("trip_id"),
                  driverID: try row.optionalID("driver_id"), status: try row.enumeration("status"),
                  pickup: try Stop(row: row, .pickup), delivery: try Stop(row: row, .delivery),
                  pickupETA: try row.optionalDate("pickup_eta"), deliveryETA: try row.optionalDate("delivery_eta"),
                  arrivedAtPickup: try row.optionalDate("arrived_at_pickup"), arrivedAtDelivery: try row.optionalDate("arrived_at_delivery"),
                  createdAt: try row.date("created_at"))
    }
}

extension Customer {
    static let columns: SQL = """
        id, name, kind, billing_contact, email, phone, address, payment_terms, notes, version, created_at, updated_at
        """
    static let order = ListOrder(.ascending("name_key", .text), .ascending("id", .text))

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), name: try row.string("name"), kind: try row.enumeration("kind"),
                  billingContact: try row.string("billing_contact"), email: try row.string("email"), phone: try row.string("phone"),
                  address: try row.string("address"), paymentTerms: try row.string("payment_terms"), notes: try row.string("notes"),
                  version: try row.int("version"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"))
    }
}

extension Expense {
    static let columns: SQL = """
        id, trip_id, driver_id, category, amount_cents, expense_date, notes, created_at,
        fuel_equipment_id, fuel_quantity_milli, fuel_unit, fuel_odometer_miles, after_reassignment, receipts
        """
    static let order = ListOrder(.descending("expense_date", .text), .descending("created_at", .integer), .ascending("id", .text))

    init(row: SQLRow) throws {
        var fuel: FuelPurchase?
        if let unit = try row.optionalID("fuel_equipment_id", as: Equipment.self) {
            fuel = FuelPurchase(equipmentID: unit, quantityMilli: try row.int("fuel_quantity_milli"), unit: try row.enumeration("fuel_unit"),
                                odometerMiles: try row.optionalInt("fuel_odometer_miles"))
        }
        self.init(id: try row.id("id"), tripID: try row.id("trip_id"), driverID: try row.optionalID("driver_id"),
                  category: try row.enumeration("category"), amountCents: try row.int("amount_cents"),
                  date: try row.localDate("expense_date"), notes: try row.string("notes"), fuel: fuel,
                  afterReassignment: try row.int("after_reassignment") != 0, receipts: try ReceiptRepository.photos(in: row, column: "receipts"),
                  createdAt: try row.date("created_at"))
    }
}

extension Equipment {
    static let columns: SQL = """
        id, kind, unit_number, make, model, year, vin, plate, plate_state, status, trailer_type, capacity_cars, gvwr_pounds,
        fuel_type, notes, driver_id, odometer_miles, odometer_at, version, created_at, updated_at
        """
    static let order = ListOrder(.ascending("unit_key", .text), .ascending("id", .text))

    /// The unit without its papers (`documents` are read from their table).
    init(row: SQLRow) throws {
        func optional<Value: RawRepresentable>(_ column: String) throws -> Value? where Value.RawValue == String {
            try row.optionalString(column) == nil ? nil : try row.enumeration(column, as: Value.self)
        }
        self.init(id: try row.id("id"), kind: try row.enumeration("kind"), unitNumber: try row.string("unit_number"),
                  make: try row.string("make"), model: try row.string("model"), year: try row.optionalInt("year"),
                  vin: try row.string("vin"), plate: try row.string("plate"), plateState: try row.string("plate_state"),
                  status: try row.enumeration("status"),
                  specs: EquipmentSpecs(trailerType: try optional("trailer_type"), capacityCars: try row.optionalInt("capacity_cars"),
                                        gvwrPounds: try row.optionalInt("gvwr_pounds"), fuelType: try optional("fuel_type")),
                  notes: try row.string("notes"), driverID: try row.optionalID("driver_id"),
                  odometerMiles: try row.optionalInt("odometer_miles"), odometerAt: try row.optionalDate("odometer_at"),
                  version: try row.int("version"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"))
    }
}

extension EquipmentDocument {
    static let columns: SQL = "id, equipment_id, kind, number, expires_on, notes, expiry_notice_at, created_at"

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), kind: try row.enumeration("kind"), number: try row.string("number"),
                  expiresOn: try row.optionalLocalDate("expires_on"), notes: try row.string("notes"),
                  expiryNoticeAt: try row.optionalDate("expiry_notice_at"), createdAt: try row.date("created_at"))
    }
}

extension EquipmentPhoto {
    static let columns: SQL = "id, equipment_id, content_type, size_bytes, sha256, uploaded_by, uploaded_at"

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), contentType: try row.string("content_type"), sizeBytes: try row.int64("size_bytes"),
                  sha256: try row.string("sha256"), uploadedBy: try row.id("uploaded_by"), uploadedAt: try row.date("uploaded_at"))
    }
}

extension OdometerReading {
    static let columns: SQL = "id, equipment_id, miles, recorded_at, driver_id"
    static let order = ListOrder(.descending("recorded_at", .integer), .ascending("id", .text))

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), equipmentID: try row.id("equipment_id"), miles: try row.int("miles"),
                  recordedAt: try row.date("recorded_at"), driverID: try row.optionalID("driver_id"))
    }
}

extension DriverNotification {
    static let columns: SQL = "id, driver_id, type, title, body, trip_id, order_id, read_at, read_received_at, created_at, acknowledged_at"
    static let order = ListOrder(.descending("created_at", .integer), .ascending("id", .text))

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), driverID: try row.id("driver_id"), type: try row.enumeration("type"),
                  title: try row.string("title"), body: try row.string("body"),
                  data: NotificationData(tripID: try row.optionalID("trip_id"), orderID: try row.optionalID("order_id")),
                  readAt: try row.optionalDate("read_at"), readReceivedAt: try row.optionalDate("read_received_at"),
                  createdAt: try row.date("created_at"), acknowledgedAt: try row.optionalDate("acknowledged_at"))
    }
}

extension DriverMessage {
    static let columns: SQL = "id, driver_id, trip_id, order_id, body, sent_at, created_at, read_by_dispatch_at, photos"

    init(row: SQLRow) throws {
        self.init(id: try row.id("id"), driverID: try row.id("driver_id"), tripID: try row.optionalID("trip_id"),
                  orderID: try row.optionalID("order_id"), body: try row.string("body"), sentAt: try row.date("sent_at"),
                  createdAt: try row.date("created_at"), readByDispatchAt: try row.optionalDate("read_by_dispatch_at"),
                  photos: try ReceiptRepository.photos(in: row))
    }
}
