import VroomXModels

extension APIOperation {
    /// Trucks and trailers, and where they are.
    static var fleet: [APIOperation] { [
        APIOperation(.decodeVIN, .fleet, "What a VIN says: check digit, model year, maker, region",
                     answer: .ok(VINDecoding.self),
                     refusals: [
                         400: "invalid_parameter",
                         422: "validation_failed: not a VIN (17 letters and digits without I, O, Q)"
                     ]),
        APIOperation(.equipment, .fleet, "The truck and trailer assigned to the driver",
                     answer: .list(Equipment.self),
                     refusals: [400: "invalid_parameter", 403: "forbidden: the endpoint is for another role"]),
        APIOperation(.equipmentUnit, .fleet, "One of the driver's units, with its papers",
                     answer: .ok(Equipment.self),
                     refusals: [
                         400: "invalid_parameter",
                         403: "forbidden: the endpoint is for another role",
                         404: "not_found (another carrier's unit is not found either)"
                     ]),
        APIOperation(.recordOdometer, .fleet, "Record an odometer reading (a driver: their own units)",
                     body: .json(RecordOdometerRequest.self),
                     answer: .created(OdometerReading.self),
                     refusals: [
                         404: "not_found (another carrier's unit is not found either)",
                         409: "already_exists: this id is another reading",
                         422: "validation_failed (field names the field at fault)"
                     ]),
        APIOperation(.dispatchEquipment, .fleet, "The carrier's fleet, by unit number",
                     answer: .list(Equipment.self),
                     refusals: [400: "invalid_parameter"]),
        APIOperation(.dispatchCreateEquipment, .fleet, "Add a truck or trailer",
                     body: .json(EquipmentFields.self),
                     answer: .created(Equipment.self),
                     refusals: [
                         409: "already_exists: the unit number is taken",
                         422: "validation_failed (field names the field at fault)"
                     ]),
        APIOperation(.dispatchEquipmentUnit, .fleet, "A unit with its papers",
                     answer: .ok(Equipment.self),
                     refusals: [400: "invalid_parameter", 404: "not_found (another carrier's unit is not found either)"]),
        APIOperation(.dispatchUpdateEquipment, .fleet, "Change a unit's fields (field-level conflicts with base_version)",
                     body: .json(EquipmentFields.self),
                     answer: .ok(Equipment.self),
                     refusals: [
                         404: "not_found (another carrier's unit is not found either)",
                         409: "conflict or already_exists",
                         422: "validation_failed (field names the field at fault)"
                     ]),
        APIOperation(.dispatchAssignEquipment, .fleet, "Give a unit to a driver, or take it back",
                     body: .json(AssignEquipmentRequest.self),
                     answer: .ok(Equipment.self),
                     refusals: [
                         404: "not_found (another carrier's unit is not found either)",
                         409: "invalid_transition: a retired unit",
                         422: "validation_failed (field names the field at fault)"
                     ]),
        APIOperation(.dispatchEquipmentStatus, .fleet, "Move several units to one status (all or none)",
                     body: .json(EquipmentStatusChange.self),
                     answer: .list(Equipment.self),
                     refusals: [422: "validation_failed (field names the field at fault)"]),
        APIOperation(.dispatchImportEquipment, .fleet, "Create or update units from a CSV file (all lines or none)",
                     body: .csv("Header line, then one unit per line. Columns: unit_number (required), kind (for new units), make, model, year, vin, vin_confirmed, plate, plate_state, status, trailer_type, capacity_cars, gvwr_pounds, fuel_type, notes. A unit number the carrier has updates that unit. At most 2,000 lines."),
                     answer: .ok(ImportResult.self),
                     refusals: [
                         413: "payload_too_large (files are limited to 4 MiB)",
                         415: "unsupported_media_type: send text/csv",
                         422: "import_failed: problems lists every bad line (line, field, message); nothing was written"
                     ]),
        APIOperation(.dispatchAddEquipmentDocument, .fleet, "Add a paper (registration, insurance, …) with its expiry",
                     body: .json(AddEquipmentDocumentRequest.self),
                     answer: .created(Equipment.self),
                     refusals: [
                         404: "not_found (another carrier's unit is not found either)",
                         422: "validation_failed (field names the field at fault)"
                     ]),
        APIOperation(.dispatchDeleteEquipmentDocument, .fleet, "Remove a paper",
                     answer: .ok(Equipment.self),
                     refusals: [400: "invalid_parameter", 404: "not_found (another carrier's unit is not found either)"]),
        APIOperation(.dispatchExpiringDocuments, .fleet, "Papers run out or running out soon, soonest first",
                     answer: .list(ExpiringDocument.self),
                     refusals: [400: "invalid_parameter"]),
        APIOperation(.dispatchOdometerReadings, .fleet, "A unit's odometer readings, newest first",
                     answer: .list(OdometerReading.self),
                     refusals: [400: "invalid_parameter", 404: "not_found (another carrier's unit is not found either)"]),
        APIOperation(.dispatchFuelReport, .fleet, "Fuel economy of a truck over a period",
                     answer: .ok(FuelReport.self),
                     refusals: [
                         400: "invalid_parameter",
                         404: "not_found (another carrier's unit is not found either)",
                         422: "validation_failed: the unit is a trailer"
                     ]),
        APIOperation(.addUnitPhoto, .fleet, "Add a photo of a unit in one request",
                     details: "JPEG, PNG or HEIC; at most 25 MB; a unit keeps 30. Drivers may also send one resumably: POST /v1/uploads with equipment_id in Upload-Metadata.",
                     body: .bytes("application/octet-stream"),
                     answer: Answer(201, "The unit with its photos", .json(Equipment.self)),
                     refusals: [
                         400: "invalid_parameter: the body ended early, or the file is empty",
                         403: "forbidden: the endpoint is for another role (or driver_not_found)",
                         404: "not_found",
                         411: "invalid_parameter: Content-Length is required",
                         413: "payload_too_large: over the size limit of the slot's kind",
                         415: "unsupported_media_type: the bytes are not a JPEG/PNG/HEIC photo, MP4/MOV video or PNG/JPEG signature as the slot needs",
                         422: "validation_failed: the unit already keeps 30 photos (field photos)",
                         429: "upload_quota_exceeded: too many unfinished uploads for this user (Retry-After says when one expires)",
                         507: "storage_quota_exceeded (the carrier's media quota is used up) or insufficient_storage (the server's disk is full; Retry-After)"
                     ],
                     requires: ["Content-Length"]),
        APIOperation(.unitPhoto, .fleet, "Download a photo of a unit (Range supported)",
                     details: "A driver's own units, or any unit for dispatch.",
                     answer: Answer(200, "The file", .file),
                     refusals: [403: "forbidden: the endpoint is for another role (or driver_not_found)", 404: "not_found"]),
        APIOperation(.deleteUnitPhoto, .fleet, "Remove a photo of a unit: dispatch any, a driver one they took of their own unit",
                     answer: .ok(Equipment.self),
                     refusals: [
                         400: "invalid_parameter",
                         403: "forbidden: the endpoint is for another role",
                         404: "not_found (another carrier's unit is not found either)"
                     ]),
        APIOperation(.recordLocations, .location, "Record a batch of the driver's positions (marks geofenced arrivals)",
                     body: .json(RecordLocationsRequest.self),
                     answer: .ok(RecordLocationsResult.self),
                     refusals: [
                         403: "forbidden: the endpoint is for another role",
                         422: "validation_failed (field names the fix at fault, e.g. fixes[3].recorded_at)"
                     ]),
        APIOperation(.dispatchPositions, .location, "Each driver's last known position", answer: .list(DriverPosition.self)),
        APIOperation(.dispatchTripTrack, .location, "A trip's track as GeoJSON",
                     answer: Answer(200, "OK", .geoJSON(TripTrack.self)),
                     refusals: [404: "not_found (another carrier's trip is not found either)"]),
        APIOperation(.dispatchOrderProgress, .location, "Where an order's driver is against its next stop",
                     details: "Distance, and a computed ETA beside the driver's own. Distance, and a computed ETA beside the driver's own.",
                     answer: .ok(OrderProgress.self),
                     refusals: [404: "not_found (another carrier's order is not found either)"]),
    ] }
}
