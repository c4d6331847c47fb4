import Foundation
import VroomXModels

/// The words the API document adds to a schema the code writes: what a type
/// and its fields mean, and constraints the types cannot say (a pattern, a
/// coordinate's range). Names, kinds, formats, required keys, values of
/// enumerations and the shared field limits come from the code.
struct SchemaNotes {
    var description: String?
    /// Per field: keywords merged into the field's schema (its description, a pattern, …).
    var fields: [String: JSONValue] = [:]

    /// The component name of a type: its Swift name, nested names run together (`DeviceBacklogItem`).
    static func name(of type: Any.Type) -> String {
        if let renamed = renamed[ObjectIdentifier(type)] { return renamed }
        let qualified = String(reflecting: type)
        return qualified.split(separator: ".").dropFirst().joined()
    }

    /// Types whose component is named otherwise than the Swift type.
    static let renamed: [ObjectIdentifier: String] = [
        ObjectIdentifier(APIErrorResponse.self): "Error",
    ]

    static let all: [String: SchemaNotes] = [
        "Driver": SchemaNotes(fields: [
            "pay_rate": ["description": "Basis points for percentage (2500 = 25 %), cents for per_mile and per_trip"],
            "deactivated_at": ["description": "Present when the carrier deactivated the driver: no sign-in and no new work; their history stays"]
        ]),
        "Trip": SchemaNotes(fields: [
            "revenue_cents": ["minimum": 0, "description": "The sum of its orders' prices (cancelled ones left out), or the figure dispatch set by hand"],
            "revenue_set_by_hand": ["description": "Dispatch set revenue_cents: it no longer follows the orders"],
            "driver_pay_cents": ["minimum": 0]
        ]),
        "Vehicle": SchemaNotes(fields: [
            "vin": ["description": "17 characters, or empty"],
            "id": ["description": "Given by the server; send it back to edit this vehicle"],
            "operable": ["description": "false for a vehicle that does not run (winched on); true when absent"],
            "price_cents": ["description": "What moving this vehicle earns"]
        ]),
        "Stop": SchemaNotes(fields: [
            "geofence_radius_meters": ["description": "arrival fence; 150 when absent", "minimum": 25, "maximum": 5000]
        ]),
        "OrderStatus": SchemaNotes(description: "new → assigned → picked_up → delivered; cancelled from new or assigned. Drivers may only pick up and deliver."),
        "Order": SchemaNotes(fields: [
            "revenue_cents": ["minimum": 0],
            "arrived_at_pickup": ["description": "when the truck's fixes first stayed 2 minutes inside the pickup fence"],
            "customer_id": ["description": "The customer the load is for (dispatch's record; drivers see the id only)"],
            "external_load_id": ["description": "The load board's or broker's reference for the load"],
            "vehicles": ["description": "The vehicles it moves (1 to 12), each with its id and price; revenue_cents is the sum of the prices"],
            "vehicle": ["description": "The first of `vehicles`, for clients from before several vehicles per order"]
        ]),
        "Customer": SchemaNotes(description: "A shipper, broker, dealer or auction the carrier hauls for; names are unique within the carrier, ignoring case.",
                                fields: ["email": ["description": "Where invoices and documents go; empty when unknown"]]),
        "Expense": SchemaNotes(fields: [
            "amount_cents": ["minimum": 0],
            "after_reassignment": ["description": "Recorded by a driver the trip no longer belonged to when it reached the server (spent offline before dispatch gave the trip away): kept in that driver's name"]
        ]),
        "DriverNotification": SchemaNotes(fields: [
            "read_at": ["description": "When the driver read it, by the phone's clock corrected to the server's (never before the message was sent nor after it was received)"],
            "read_received_at": ["description": "When the server learnt it was read: later than read_at when the phone was offline"]
        ]),
        "AuthSession": SchemaNotes(fields: [
            "access_token": ["description": "JWT (HS256), valid 1 hour"],
            "token_type": ["const": "Bearer"],
            "refresh_token": ["description": "Opaque; rotates on every refresh"]
        ]),
        "VerifyCodeRequest": SchemaNotes(fields: [
            "email": ["format": "email"],
            "code": ["pattern": "^[0-9]{6}$"],
            "carrier_id": ["description": "The carrier to sign in to, when the email has accounts at several (answered 409 carrier_required with the list; the code stays good until a carrier is chosen)."]
        ]),
        "PINRequest": SchemaNotes(description: "Give pin (4 digits); to set a PIN, pin_hash may be given instead.", fields: [
            "pin": ["pattern": "^[0-9]{4}$"],
            "pin_hash": ["description": "Setting a PIN only: the scrypt hash the app made (scrypt$N$8$1$<base64 salt, 16–64 bytes>$<base64 32-byte key>, N = 32768 on a default server), instead of the PIN; a PIN set offline waits on the device only as this hash. Any other cost is refused (422).", "pattern": "^scrypt\\$32768\\$8\\$1\\$[A-Za-z0-9+/=]+\\$[A-Za-z0-9+/=]+$"]
        ]),
        "RegisterDeviceTokenRequest": SchemaNotes(fields: [
            "token": ["minLength": 8, "maxLength": 256],
            "installation_id": ["description": "A secret the app creates once per installation and keeps. A token registered to another account moves here only when the same installation registers it; the token is removed when this session ends.", "minLength": 16, "maxLength": 128]
        ]),
        "HealthResponse": SchemaNotes(fields: [
            "database": ["enum": ["sqlite", "postgres"]],
            "status": ["enum": ["ok"]],
            "database_reachable": ["description": "Whether the database answered when last needed"]
        ]),
        "UpdateOrderStatusRequest": SchemaNotes(fields: [
            "occurred_at": ["description": "When it happened on the road (default: now). A device clock that is off is corrected to the nearest true time: never after the server received it, never before the order existed (a delivery: before its pickup); more than a day before that is refused (422)."]
        ]),
        "UpdateETARequest": SchemaNotes(description: "Give one or both."),
        "CreateExpenseRequest": SchemaNotes(fields: [
            "id": ["description": "Client-chosen id, optional here and required inside POST /v1/mutations (an offline expense carries its own); sending the same expense again returns it"]
        ]),
        "CreateDriverRequest": SchemaNotes(fields: [
            "email": ["format": "email"],
            "pay_rate": ["description": "Basis points for percentage (0–10000: 2500 = 25 %), cents for per_mile (0–10000) and per_trip (0–100000000)"]
        ]),
        "CreateTripRequest": SchemaNotes(fields: [
            "driver_pay_cents": ["description": "Defaults to the driver's pay terms applied to the trip"],
            "revenue_cents": ["description": "Sets the revenue by hand; without it the trip's revenue follows its orders' prices"]
        ]),
        "UpdateTripRequest": SchemaNotes(description: "Only the fields present change.", fields: [
            "base_version": ["description": "The version an edit form was filled from: a trip changed since is refused with 409 conflict", "minimum": 1],
            "revenue_cents": ["description": "Sets the revenue by hand: it no longer follows the orders"],
            "revenue_follows_orders": ["description": "true: the revenue follows the orders' prices again (not with revenue_cents); false: keeps today's figure"]
        ]),
        "AssignTripRequest": SchemaNotes(description: "A driver id to assign, null to unassign."),
        "CreateOrderRequest": SchemaNotes(fields: [
            "vehicles": ["description": "1 to 12 vehicles; the order earns the sum of their price_cents. Required unless `vehicle` is given", "minItems": 1, "maxItems": 12],
            "vehicle": ["description": "The shape from before several vehicles per order: one vehicle, priced at revenue_cents. Ignored when `vehicles` is given"],
            "revenue_cents": ["description": "The sum of the vehicles' prices (may be left out); with one vehicle given no price, its price"],
            "accept_vin_warning": ["description": "the VIN is right as printed although its check digit says otherwise (without it such a North American VIN is 422 vin_check_digit)"]
        ]),
        "UpdateOrderRequest": SchemaNotes(description: "Only the fields present change; a status change follows the state machine and notifies the driver.", fields: [
            "vehicles": ["description": "The whole list: a vehicle with an id the order has is that vehicle edited, one without an id is added, one left out is removed", "minItems": 1, "maxItems": 12],
            "vehicle": ["description": "The shape from before several vehicles per order: new details for the first vehicle"],
            "base_version": ["description": "The order version the edit was based on: if someone else changed the vehicle, stops, revenue or terms since, the answer is 409 conflict and nothing is written"],
            "accept_vin_warning": ["description": "the VIN is right as printed although its check digit says otherwise (without it such a North American VIN is 422 vin_check_digit)"]
        ]),
        "AssignOrderRequest": SchemaNotes(description: "trip_id puts the order on a trip (it follows the trip's driver); driver_id alone gives it to a driver off any trip; neither unassigns."),
        "Change": SchemaNotes(fields: [
            "seq": ["description": "The carrier's sequence number (on snapshot pages: the snapshot's cursor)"],
            "op": ["description": "upsert: store row; delete: drop the id (deleted, or no longer visible to you)"],
            "mutation": ["description": "The id of the offline change (POST /v1/mutations) that made this entry, when one did: a device that sees one of its own knows the server applied it, even if the batch's answer never arrived"],
            "row": ["description": "The row as the client should store it (Driver, Trip, Order, Expense, DriverNotification or Inspection by entity); absent for deletes"]
        ]),
        "SyncPage": SchemaNotes(fields: [
            "cursor": ["description": "Store it once the changes are applied; send it back as since"],
            "reset": ["description": "First page of a snapshot: clear the local cache before applying"],
            "snapshot_after": ["description": "More snapshot pages follow: send back as snapshot_after with since=cursor"]
        ]),
        "Mutation": SchemaNotes(fields: [
            "id": ["description": "Client-chosen; the idempotency key of this mutation"],
            "base_version": ["description": "Row version the change was made against; a field changed by someone else since then is a conflict"],
            "depends_on": ["description": "Earlier mutations of the batch this one needs; if one is rejected, this one is rejected with dependency_failed"]
        ]),
        "MutationBatch": SchemaNotes(fields: [
            "mutations": ["maxItems": 500]
        ]),
        "MutationResult": SchemaNotes(description: "A mutation the server could not apply for a fault of its own is rejected with code internal_error: nothing was applied, send it again later; the rest of the batch is not held up.", fields: [
            "replayed": ["description": "Already applied before: this is the original result"],
            "code": ["description": "invalid_transition, conflict, not_found, validation_failed, dependency_failed, idempotency_key_reused, …"],
            "row": ["description": "The server's row after the mutation, or its current row after a rejection"],
            "order": ["description": "For an inspection mutation: its order as the server now has it (completing an inspection moves it)"],
            "positions": ["description": "For record_locations: what became of the batch's fixes"]
        ]),
        "Damage": SchemaNotes(fields: [
            "location": ["description": "where on the vehicle, e.g. front_bumper"]
        ]),
        "InspectionMedia": SchemaNotes(fields: [
            "content_type": ["description": "detected from the bytes"],
            "captured": ["description": "When and where the phone took it, as the app sent it in Upload-Metadata (taken_at; latitude, longitude, accuracy_meters); absent for a file chosen from the library or sent whole"]
        ]),
        "MediaCapture": SchemaNotes(fields: [
            "taken_at": ["description": "By the phone's clock corrected to the server's; at most 10 minutes after the server's now"],
            "accuracy_meters": ["description": "How far off the position may be"]
        ]),
        "SaveInspectionRequest": SchemaNotes(fields: [
            "damages": ["maxItems": 30]
        ]),
        "CompleteInspectionRequest": SchemaNotes(fields: [
            "occurred_at": ["description": "When it happened on the road (default: now). A device clock that is off is corrected to the nearest true time: never after the server received it, never before the order existed (a delivery: before its pickup); more than a day before that is refused (422)."]
        ]),
        "EquipmentDocument": SchemaNotes(fields: [
            "expiry_notice_at": ["description": "When dispatch was told it runs out within 30 days (once)"]
        ]),
        "Equipment": SchemaNotes(description: "A truck or trailer. Dispatch sees the fleet; a driver the units assigned to them (one truck and one trailer at most).", fields: [
            "unit_number": ["description": "Unique in the carrier, regardless of case"],
            "year": ["minimum": 1900],
            "vin": ["maxLength": 17],
            "plate_state": ["maxLength": 2],
            "odometer_miles": ["description": "The latest reading (by when it was taken)"],
            "version": ["minimum": 1],
            "photos": ["description": "Oldest first", "maxItems": 30]
        ]),
        "EquipmentFields": SchemaNotes(description: "Creating needs kind and unit_number; an update changes only the fields present.", fields: [
            "year": ["description": "At most next year", "minimum": 1900],
            "vin": ["description": "17 characters without I, O, Q; a wrong check digit on a North American VIN is 422 vin_check_digit unless accept_vin_warning"],
            "plate_state": ["maxLength": 2],
            "base_version": ["description": "The version the edit started from: fields someone else changed since are 409 conflict", "minimum": 1]
        ]),
        "AssignEquipmentRequest": SchemaNotes(description: "A driver drives one truck and one trailer: assigning another unit of the same kind takes the previous one back. null takes the unit back."),
        "EquipmentStatusChange": SchemaNotes(fields: [
            "ids": ["minItems": 1, "maxItems": 500]
        ]),
        "RecordOdometerRequest": SchemaNotes(description: "Readings of a unit increase with time: one lower than an earlier reading, or higher than a later one, is 422 odometer_decreased.", fields: [
            "id": ["description": "Client-chosen, optional here and required inside POST /v1/mutations: the same reading again is recorded once"],
            "recorded_at": ["description": "When it was read; defaults to now; at most 5 minutes ahead"]
        ]),
        "FuelPurchase": SchemaNotes(fields: [
            "equipment_id": ["description": "A truck (a driver: their own)"],
            "quantity_milli": ["description": "Thousandths of the unit: 12.345 gal = 12345"]
        ]),
        "FuelReport": SchemaNotes(description: "Full-tank method: miles between the first and last fill with an odometer, over the fuel bought after the first of them."),
        "VINDecoding": SchemaNotes(fields: [
            "needs_confirmation": ["description": "North American with a wrong check digit: confirm before saving"]
        ]),
        "RecordLocationsRequest": SchemaNotes(fields: [
            "fixes": ["description": "accuracy_meters is required here; fixes less accurate than 100 m are dropped, the same recorded_at twice is stored once", "minItems": 1, "maxItems": 500]
        ]),
        "RecordLocationsResult": SchemaNotes(fields: [
            "dropped": ["description": "Fixes too inaccurate, older than kept, or recorded after the trip they belong to ended"],
            "future": ["description": "Fixes stamped more than 5 minutes ahead of the server's clock (a phone whose clock runs fast): left out, the rest of the batch kept"]
        ]),
        "TripTrack": SchemaNotes(description: "A GeoJSON Feature (RFC 7946) whose LineString runs through the trip's fixes in time order, longitude first", fields: [
            "type": ["enum": ["Feature"]]
        ]),
        "TripTrackGeometry": SchemaNotes(fields: [
            "type": ["enum": ["LineString"]],
            "coordinates": ["items": ["type": "array", "items": ["type": "number"], "minItems": 2, "maxItems": 2]]
        ]),
        "User": SchemaNotes(fields: [
            "email": ["format": "email"]
        ]),
        "SendCodeRequest": SchemaNotes(fields: [
            "email": ["format": "email"]
        ]),
        "SendMessageRequest": SchemaNotes(fields: [
            "type": ["enum": ["dispatch_message", "urgent"], "description": "What dispatch may send (the other types are the server's own)"]
        ]),
        "ReadinessResponse": SchemaNotes(fields: [
            "status": ["enum": ["ready", "not_ready"]]
        ]),
        "ReadinessCheck": SchemaNotes(fields: [
            "name": ["enum": ["database", "media_folder", "data_folder", "free_disk"]]
        ]),
        "APIErrorBody": SchemaNotes(fields: [
            "code": ["description": "Stable machine-readable code, e.g. validation_failed, not_found, invalid_transition"],
            "field": ["description": "JSON path of the field at fault"],
            "retry_after": ["description": "Seconds; also in Retry-After"],
            "problems": ["description": "For a file: every bad line"],
            "carriers": ["description": "For carrier_required: the carriers the email has accounts at, by name"]
        ]),
        "LineProblem": SchemaNotes(fields: [
            "line": ["description": "1-based; line 1 is the header"]
        ]),
        "EquipmentPhoto": SchemaNotes(description: "A photo of a unit; its bytes at GET /v1/equipment/{unit}/photos/{id}.", fields: [
            "size_bytes": ["minimum": 1],
            "sha256": ["pattern": "^[0-9a-f]{64}$"],
            "uploaded_by": ["description": "The user who took it"]
        ]),
        "UpdateDriverRequest": SchemaNotes(description: "The fields given change. A pay rate is checked against the pay type given with it, or the driver's.", fields: [
            "pay_rate": ["description": "Basis points for percentage (0–10000: 2500 = 25 %), cents for per_mile (0–10000) and per_trip (0–100000000)"],
            "base_version": ["minimum": 1]
        ]),
        "DeviceBacklogItem": SchemaNotes(fields: [
            "status": ["description": "waiting: on its way; refused: the server refused it (only the driver can drop it); kept: an inspection the server will not take, kept with its photos"],
            "what": ["description": "What it is, in the driver's words (\"your pickup ETA for O-5005\")", "maxLength": 300],
            "detail": ["description": "Its data (\"pickup Nov 30, 2026 15:00 UTC\", \"$301.17 fuel, 85.5 gal at 413,700 mi\")", "maxLength": 500],
            "reason": ["description": "Why it waits, or why it was refused", "maxLength": 500],
            "made_at": ["description": "When the driver did it"]
        ]),
        "DeviceBacklog": SchemaNotes(description: "What a driver's phone holds that has not reached dispatch. A report with nothing waiting and no items clears the phone's last one.", fields: [
            "device_id": ["description": "The phone's own id", "pattern": "^[A-Za-z0-9-]{1,64}$"],
            "waiting_changes": ["minimum": 0, "maximum": 1000000],
            "waiting_files": ["minimum": 0, "maximum": 1000000],
            "file_bytes": ["description": "Bytes of waiting files not yet sent", "minimum": 0],
            "oldest_at": ["description": "When the oldest waiting item was made"],
            "items": ["maxItems": 50]
        ]),
        "ReportedBacklog": SchemaNotes(fields: [
            "reported_at": ["description": "When the phone sent the report"]
        ]),
    ]
}
