/// Every HTTP route of the API, defined once. The server registers its
/// handlers from these values and clients build their requests from them, so
/// the two cannot drift; a test checks the OpenAPI document against `all`.
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    public enum Method: String, Sendable, CaseIterable {
        case get = "GET", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE", head = "HEAD", options = "OPTIONS"
    }

    /// Who may call the endpoint. Tenant and driver always come from the
    /// access token, never from the request.
    public enum Access: Sendable, Hashable {
        case anyone
        case signedIn
        case driver
        case dispatcher
    }

    public let method: Method
    /// Path template with `{name}` placeholders, as in OpenAPI.
    public let path: String
    public let access: Access
    /// The query parameters and headers it reads (path parameters are the
    /// `{placeholders}`).
    public let parameters: [Parameter]

    public init(_ method: Method, _ path: String, _ access: Access, _ parameters: [Parameter] = []) {
        self.method = method
        self.path = path
        self.access = access
        self.parameters = parameters
    }

    /// A list answer: `{"items":[…],"next_cursor"?}`, paged with `limit`
    /// and `cursor`, plus the filters given.
    static func list(_ path: String, _ access: Access, filters: [Parameter] = []) -> Endpoint {
        Endpoint(.get, path, access, filters + [.pageLimit, .pageCursor])
    }

    public var description: String { "\(method.rawValue) \(path)" }

    /// Whether the endpoint may change carrier data (its answer then names the change number reached).
    public var writes: Bool { method != .get && method != .head && method != .options }

    /// Mutations of carrier data take an `Idempotency-Key` (a client-chosen
    /// UUID): sending the same request again with it has exactly one effect.
    /// (The batch endpoint keys each mutation by its own id; PIN calls are
    /// checks or naturally repeatable.)
    public var acceptsIdempotencyKey: Bool {
        method != .get && method != .head && access != .anyone && self != .mutations && self != .setPIN && self != .verifyPIN
            && !Self.streamsBody.contains(self) && !Self.takesCSV.contains(self)
    }

    /// The realtime socket also takes its token as `?access_token=`, for
    /// WebSocket clients that cannot set headers (browsers).
    public var acceptsQueryToken: Bool { self == .realtime }

    /// Endpoints whose body is file bytes, streamed to storage rather than
    /// held in memory (uploads keep their own exactly-once rules: offsets).
    public static let streamsBody: Set<Endpoint> = [createUpload, uploadOffset, appendUpload, terminateUpload, putInspectionMedia,
                                                    addUnitPhoto]

    /// Endpoints whose body is a CSV file (`text/csv`). An import is all or
    /// nothing and keyed by its rows' own numbers, so sending it again
    /// cannot apply it twice.
    public static let takesCSV: Set<Endpoint> = [dispatchImportEquipment, dispatchImportOrders]

    /// Names of the `{placeholders}` in order.
    public var parameterNames: [String] {
        path.split(separator: "/").compactMap { segment in
            segment.hasPrefix("{") && segment.hasSuffix("}") ? String(segment.dropFirst().dropLast()) : nil
        }
    }

    /// The concrete path with each placeholder replaced, in order, by a
    /// percent-encoded value.
    public func path(_ values: String...) -> String { path(values) }

    public func path(_ values: [String]) -> String {
        precondition(values.count == parameterNames.count, "\(self) takes \(parameterNames.count) parameter(s)")
        var remaining = values[...]
        return "/" + path.split(separator: "/").map { segment -> String in
            guard segment.hasPrefix("{") else { return String(segment) }
            return Self.percentEncode(remaining.removeFirst())
        }.joined(separator: "/")
    }

    static func percentEncode(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF")
                out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0xF)])
            }
        }
        return out
    }
}

extension Endpoint {
    // Service
    /// Liveness: the process answers (never waits on the database).
    public static let health = Endpoint(.get, "/healthz", .anyone)
    /// Readiness: the database answers, the folders take writes, disk space is left.
    public static let ready = Endpoint(.get, "/readyz", .anyone)
    public static let openAPI = Endpoint(.get, "/openapi.json", .anyone)
    /// Prometheus's numbers, for a scraper bearing `VROOMX_METRICS_TOKEN` (not a session).
    public static let metrics = Endpoint(.get, "/metrics", .anyone)

    // Sign-in
    public static let sendCode = Endpoint(.post, "/v1/auth/otp", .anyone)
    public static let verifyCode = Endpoint(.post, "/v1/auth/verify", .anyone)
    public static let refresh = Endpoint(.post, "/v1/auth/refresh", .anyone)
    public static let logout = Endpoint(.post, "/v1/auth/logout", .anyone)

    // The signed-in user
    public static let me = Endpoint(.get, "/v1/me", .signedIn)
    public static let setPIN = Endpoint(.put, "/v1/me/pin", .signedIn)
    public static let verifyPIN = Endpoint(.post, "/v1/me/pin/verify", .signedIn)
    public static let registerDeviceToken = Endpoint(.post, "/v1/device-tokens", .signedIn)
    public static let removeDeviceToken = Endpoint(.delete, "/v1/device-tokens/{token}", .signedIn)

    // Driver
    public static let trips = list("/v1/trips", .driver, filters: [.changeSeen])
    public static let trip = Endpoint(.get, "/v1/trips/{id}", .driver)
    public static let tripOrders = list("/v1/trips/{id}/orders", .driver, filters: [.changeSeen])
    public static let tripExpenses = list("/v1/trips/{id}/expenses", .driver)
    public static let startTrip = Endpoint(.post, "/v1/trips/{id}/start", .driver)
    public static let orders = list("/v1/orders", .driver, filters: [.orderStatus, .changeSeen])
    public static let order = Endpoint(.get, "/v1/orders/{id}", .driver)
    public static let updateOrderStatus = Endpoint(.patch, "/v1/orders/{id}/status", .driver)
    public static let updateOrderETA = Endpoint(.patch, "/v1/orders/{id}/eta", .driver)
    public static let createExpense = Endpoint(.post, "/v1/expenses", .driver)
    public static let deleteExpense = Endpoint(.delete, "/v1/expenses/{id}", .driver)
    // Receipt photos of an expense: its driver and dispatch (large files go through the
    // resumable uploads with `expense_id` in their metadata)
    public static let addExpenseReceipt = Endpoint(.post, "/v1/expenses/{id}/receipts", .signedIn, [.contentLength])
    public static let expenseReceipt = Endpoint(.get, "/v1/expenses/{id}/receipts/{receipt}", .signedIn, [.range])
    public static let deleteExpenseReceipt = Endpoint(.delete, "/v1/expenses/{id}/receipts/{receipt}", .signedIn)
    // Money a driver collected for an order (COD, COP), and the photo of the check or receipt
    // (or resumable, with `payment_id` in the upload's metadata)
    public static let collectPayment = Endpoint(.post, "/v1/collections", .driver)
    public static let addCollectionPhoto = Endpoint(.post, "/v1/collections/{id}/photos", .driver, [.contentLength])
    public static let notifications = list("/v1/notifications", .driver, filters: [.unreadOnly])
    public static let markNotificationRead = Endpoint(.post, "/v1/notifications/{id}/read", .driver)
    public static let acknowledgeNotification = Endpoint(.post, "/v1/notifications/{id}/acknowledge", .driver)
    public static let sendMessage = Endpoint(.post, "/v1/messages", .driver)
    public static let reportStopProblem = Endpoint(.post, "/v1/problems", .driver)
    /// What the phone holds that has not reached dispatch (a report of nothing clears it).
    public static let reportDeviceBacklog = Endpoint(.put, "/v1/device-backlog", .driver)
    /// Every driver's phones' reports, for dispatch.
    public static let dispatchDeviceBacklogs = Endpoint(.get, "/v1/dispatch/device-backlogs", .dispatcher)

    // Inspections and their media
    public static let saveInspection = Endpoint(.put, "/v1/inspections/{id}", .driver)
    public static let inspection = Endpoint(.get, "/v1/inspections/{id}", .driver)
    public static let completeInspection = Endpoint(.post, "/v1/inspections/{id}/complete", .driver)
    public static let orderInspections = Endpoint(.get, "/v1/orders/{id}/inspections", .driver)
    public static let inspectionMedia = Endpoint(.get, "/v1/inspections/{id}/media/{slot}", .signedIn, [.range])
    public static let putInspectionMedia = Endpoint(.put, "/v1/inspections/{id}/media/{slot}", .driver, [.contentLength])
    // Resumable uploads (tus 1.0)
    public static let uploadOptions = Endpoint(.options, "/v1/uploads", .anyone)
    public static let createUpload = Endpoint(.post, "/v1/uploads", .driver, [.uploadLength])
    public static let uploadOffset = Endpoint(.head, "/v1/uploads/{id}", .driver)
    public static let appendUpload = Endpoint(.patch, "/v1/uploads/{id}", .driver, [.uploadOffset, .contentLength])
    public static let terminateUpload = Endpoint(.delete, "/v1/uploads/{id}", .driver)

    // Sync
    public static let sync = Endpoint(.get, "/v1/sync", .signedIn, [.since, .syncLimit, .snapshotAfter])
    public static let mutations = Endpoint(.post, "/v1/mutations", .driver)
    public static let realtime = Endpoint(.get, "/v1/realtime", .signedIn, [.since, .accessToken])

    // Dispatch
    public static let dispatchDrivers = list("/v1/dispatch/drivers", .dispatcher)
    public static let dispatchCreateDriver = Endpoint(.post, "/v1/dispatch/drivers", .dispatcher)
    public static let dispatchUpdateDriver = Endpoint(.patch, "/v1/dispatch/drivers/{id}", .dispatcher)
    public static let dispatchDeactivateDriver = Endpoint(.post, "/v1/dispatch/drivers/{id}/deactivate", .dispatcher)
    public static let dispatchReactivateDriver = Endpoint(.post, "/v1/dispatch/drivers/{id}/reactivate", .dispatcher)
    public static let dispatchTrips = list("/v1/dispatch/trips", .dispatcher, filters: [.tripStatus])
    public static let dispatchCreateTrip = Endpoint(.post, "/v1/dispatch/trips", .dispatcher)
    public static let dispatchTrip = Endpoint(.get, "/v1/dispatch/trips/{id}", .dispatcher)
    public static let dispatchUpdateTrip = Endpoint(.patch, "/v1/dispatch/trips/{id}", .dispatcher)
    public static let dispatchAssignTrip = Endpoint(.post, "/v1/dispatch/trips/{id}/assign", .dispatcher)
    public static let dispatchTripExpenses = list("/v1/dispatch/trips/{id}/expenses", .dispatcher)
    public static let dispatchOrders = list("/v1/dispatch/orders", .dispatcher, filters: [.orderStatus, .tripFilter, .customerFilter])
    public static let dispatchCreateOrder = Endpoint(.post, "/v1/dispatch/orders", .dispatcher)
    public static let dispatchOrder = Endpoint(.get, "/v1/dispatch/orders/{id}", .dispatcher)
    public static let dispatchUpdateOrder = Endpoint(.patch, "/v1/dispatch/orders/{id}", .dispatcher)
    public static let dispatchAssignOrder = Endpoint(.post, "/v1/dispatch/orders/{id}/assign", .dispatcher)
    public static let dispatchSendMessage = Endpoint(.post, "/v1/dispatch/messages", .dispatcher)
    public static let dispatchConversations = Endpoint(.get, "/v1/dispatch/messages", .dispatcher)
    public static let dispatchConversation = Endpoint(.get, "/v1/dispatch/drivers/{id}/messages", .dispatcher)
    public static let dispatchReadConversation = Endpoint(.post, "/v1/dispatch/drivers/{id}/messages/read", .dispatcher)
    public static let dispatchOrderInspections = Endpoint(.get, "/v1/dispatch/orders/{id}/inspections", .dispatcher)
    public static let dispatchImportOrders = Endpoint(.post, "/v1/dispatch/orders/import", .dispatcher)
    public static let dispatchCustomers = list("/v1/dispatch/customers", .dispatcher, filters: [.customerSearch])
    public static let dispatchCreateCustomer = Endpoint(.post, "/v1/dispatch/customers", .dispatcher)
    public static let dispatchCustomer = Endpoint(.get, "/v1/dispatch/customers/{id}", .dispatcher)
    public static let dispatchUpdateCustomer = Endpoint(.patch, "/v1/dispatch/customers/{id}", .dispatcher)
    public static let dispatchImportCustomers = Endpoint(.post, "/v1/dispatch/customers/import", .dispatcher)
    public static let dispatchBillOfLading = Endpoint(.get, "/v1/dispatch/orders/{id}/bill-of-lading.pdf", .dispatcher)
    // Getting paid: invoices, payments against them, what customers owe
    public static let dispatchInvoices = list("/v1/dispatch/invoices", .dispatcher, filters: [.invoiceStatus, .customerFilter])
    public static let dispatchCreateInvoice = Endpoint(.post, "/v1/dispatch/invoices", .dispatcher)
    public static let dispatchInvoice = Endpoint(.get, "/v1/dispatch/invoices/{id}", .dispatcher)
    public static let dispatchUpdateInvoice = Endpoint(.patch, "/v1/dispatch/invoices/{id}", .dispatcher)
    public static let dispatchSendInvoice = Endpoint(.post, "/v1/dispatch/invoices/{id}/send", .dispatcher)
    public static let dispatchVoidInvoice = Endpoint(.post, "/v1/dispatch/invoices/{id}/void", .dispatcher)
    public static let dispatchInvoicePDF = Endpoint(.get, "/v1/dispatch/invoices/{id}/invoice.pdf", .dispatcher)
    public static let dispatchRecordPayment = Endpoint(.post, "/v1/dispatch/invoices/{id}/payments", .dispatcher)
    public static let dispatchRemovePayment = Endpoint(.delete, "/v1/dispatch/invoices/{id}/payments/{payment}", .dispatcher)
    public static let dispatchDepositPayment = Endpoint(.post, "/v1/dispatch/invoices/{id}/payments/{payment}/deposit", .dispatcher)
    public static let dispatchPaymentPhoto = Endpoint(.get, "/v1/dispatch/invoices/{id}/payments/{payment}/photos/{photo}", .dispatcher, [.range])
    public static let dispatchReceivables = Endpoint(.get, "/v1/dispatch/receivables", .dispatcher, [.asOfDate])
    // Paying drivers: weekly settlements, what dispatch enters for a driver, the driver's Earnings
    public static let earnings = Endpoint(.get, "/v1/earnings", .driver)
    public static let settlementStatement = Endpoint(.get, "/v1/settlements/{id}/statement.pdf", .driver)
    public static let dispatchSettlements = Endpoint(.get, "/v1/dispatch/settlements", .dispatcher, [.settlementWeek])
    public static let dispatchSettlement = Endpoint(.get, "/v1/dispatch/settlements/{id}", .dispatcher)
    public static let dispatchDriverPay = Endpoint(.get, "/v1/dispatch/drivers/{id}/pay", .dispatcher, [.settlementWeek])
    public static let dispatchApproveSettlement = Endpoint(.post, "/v1/dispatch/drivers/{id}/settlements", .dispatcher)
    public static let dispatchMarkSettlementPaid = Endpoint(.post, "/v1/dispatch/settlements/{id}/paid", .dispatcher)
    public static let dispatchReopenSettlement = Endpoint(.delete, "/v1/dispatch/settlements/{id}", .dispatcher)
    public static let dispatchEmailStatement = Endpoint(.post, "/v1/dispatch/settlements/{id}/email", .dispatcher)
    public static let dispatchSettlementStatement = Endpoint(.get, "/v1/dispatch/settlements/{id}/statement.pdf", .dispatcher)
    public static let dispatchAddPayItem = Endpoint(.post, "/v1/dispatch/drivers/{id}/pay-items", .dispatcher)
    public static let dispatchRemovePayItem = Endpoint(.delete, "/v1/dispatch/drivers/{id}/pay-items/{item}", .dispatcher)
    public static let dispatchAddDeduction = Endpoint(.post, "/v1/dispatch/drivers/{id}/deductions", .dispatcher)
    public static let dispatchEndDeduction = Endpoint(.delete, "/v1/dispatch/drivers/{id}/deductions/{deduction}", .dispatcher)
    public static let dispatchInvoicesExport = Endpoint(.get, "/v1/dispatch/exports/quickbooks-invoices.csv", .dispatcher, [.fromDate, .toDate])
    public static let dispatchPaymentsExport = Endpoint(.get, "/v1/dispatch/exports/quickbooks-payments.csv", .dispatcher, [.fromDate, .toDate])
    // The carrier's profile: what its documents say of it
    public static let dispatchCarrierProfile = Endpoint(.get, "/v1/dispatch/carrier", .dispatcher)
    public static let dispatchUpdateCarrierProfile = Endpoint(.patch, "/v1/dispatch/carrier", .dispatcher)
    // A customer's link to follow an order
    public static let dispatchTrackingLink = Endpoint(.get, "/v1/dispatch/orders/{id}/tracking-link", .dispatcher)
    public static let dispatchCreateTrackingLink = Endpoint(.post, "/v1/dispatch/orders/{id}/tracking-link", .dispatcher)
    public static let dispatchRevokeTrackingLink = Endpoint(.delete, "/v1/dispatch/orders/{id}/tracking-link", .dispatcher)
    public static let trackingStatus = Endpoint(.get, "/v1/tracking/{token}", .anyone)

    // Vehicles: what a VIN says
    public static let decodeVIN = Endpoint(.get, "/v1/vin/{vin}", .signedIn)

    // Fleet: a driver's own units, odometer readings
    public static let equipment = list("/v1/equipment", .driver)
    public static let equipmentUnit = Endpoint(.get, "/v1/equipment/{id}", .driver)
    public static let recordOdometer = Endpoint(.post, "/v1/odometer-readings", .signedIn)
    // A unit's photos: a driver on their own units, dispatch on every unit (large
    // files go through the resumable uploads with `equipment_id` in their metadata)
    public static let unitPhoto = Endpoint(.get, "/v1/equipment/{id}/photos/{photo}", .signedIn, [.range])
    public static let addUnitPhoto = Endpoint(.post, "/v1/equipment/{id}/photos", .signedIn, [.contentLength])
    public static let deleteUnitPhoto = Endpoint(.delete, "/v1/equipment/{id}/photos/{photo}", .signedIn)

    // Fleet: dispatch
    public static let dispatchEquipment = list("/v1/dispatch/equipment", .dispatcher, filters: [.equipmentKind, .equipmentStatus])
    public static let dispatchCreateEquipment = Endpoint(.post, "/v1/dispatch/equipment", .dispatcher)
    public static let dispatchEquipmentUnit = Endpoint(.get, "/v1/dispatch/equipment/{id}", .dispatcher)
    public static let dispatchUpdateEquipment = Endpoint(.patch, "/v1/dispatch/equipment/{id}", .dispatcher)
    public static let dispatchAssignEquipment = Endpoint(.post, "/v1/dispatch/equipment/{id}/assign", .dispatcher)
    public static let dispatchEquipmentStatus = Endpoint(.post, "/v1/dispatch/equipment/status", .dispatcher)
    public static let dispatchImportEquipment = Endpoint(.post, "/v1/dispatch/equipment/import", .dispatcher)
    public static let dispatchAddEquipmentDocument = Endpoint(.post, "/v1/dispatch/equipment/{id}/documents", .dispatcher)
    public static let dispatchDeleteEquipmentDocument = Endpoint(.delete, "/v1/dispatch/equipment/{id}/documents/{document}", .dispatcher)
    public static let dispatchExpiringDocuments = Endpoint(.get, "/v1/dispatch/equipment-documents/expiring", .dispatcher, [.withinDays])
    public static let dispatchOdometerReadings = list("/v1/dispatch/equipment/{id}/odometer-readings", .dispatcher)
    public static let dispatchFuelReport = Endpoint(.get, "/v1/dispatch/equipment/{id}/fuel-report", .dispatcher, [.fromDate, .toDate])

    // Location: a driver's positions; dispatch reads where drivers are and where they went
    public static let recordLocations = Endpoint(.post, "/v1/locations", .driver)
    public static let dispatchPositions = Endpoint(.get, "/v1/dispatch/positions", .dispatcher)
    public static let dispatchTripTrack = Endpoint(.get, "/v1/dispatch/trips/{id}/track", .dispatcher)
    public static let dispatchOrderProgress = Endpoint(.get, "/v1/dispatch/orders/{id}/progress", .dispatcher)

    public static let all: [Endpoint] = [
        health, ready, openAPI, metrics,
        sendCode, verifyCode, refresh, logout,
        me, setPIN, verifyPIN, registerDeviceToken, removeDeviceToken,
        trips, trip, startTrip, tripOrders, tripExpenses, orders, order, updateOrderStatus, updateOrderETA,
        createExpense, deleteExpense, addExpenseReceipt, expenseReceipt, deleteExpenseReceipt, collectPayment, addCollectionPhoto,
        notifications, markNotificationRead, acknowledgeNotification, sendMessage, reportStopProblem, reportDeviceBacklog, dispatchDeviceBacklogs,
        saveInspection, inspection, completeInspection, orderInspections, inspectionMedia, putInspectionMedia,
        uploadOptions, createUpload, uploadOffset, appendUpload, terminateUpload,
        sync, mutations, realtime,
        dispatchDrivers, dispatchCreateDriver, dispatchUpdateDriver, dispatchDeactivateDriver, dispatchReactivateDriver, dispatchTrips, dispatchCreateTrip, dispatchTrip, dispatchUpdateTrip,
        dispatchAssignTrip, dispatchTripExpenses, dispatchOrders, dispatchCreateOrder, dispatchOrder,
        dispatchUpdateOrder, dispatchAssignOrder, dispatchSendMessage, dispatchConversations, dispatchConversation, dispatchReadConversation, dispatchOrderInspections, dispatchImportOrders,
        dispatchCustomers, dispatchCreateCustomer, dispatchCustomer, dispatchUpdateCustomer, dispatchImportCustomers,
        dispatchTrackingLink, dispatchCreateTrackingLink, dispatchRevokeTrackingLink, trackingStatus,
        dispatchCarrierProfile, dispatchUpdateCarrierProfile, dispatchBillOfLading,
        dispatchInvoices, dispatchCreateInvoice, dispatchInvoice, dispatchUpdateInvoice, dispatchSendInvoice, dispatchVoidInvoice,
        dispatchInvoicePDF, dispatchRecordPayment, dispatchRemovePayment, dispatchDepositPayment,
        dispatchPaymentPhoto, dispatchReceivables, dispatchInvoicesExport, dispatchPaymentsExport,
        earnings, settlementStatement, dispatchSettlements, dispatchSettlement, dispatchDriverPay, dispatchApproveSettlement,
        dispatchMarkSettlementPaid, dispatchReopenSettlement, dispatchEmailStatement, dispatchSettlementStatement,
        dispatchAddPayItem, dispatchRemovePayItem, dispatchAddDeduction, dispatchEndDeduction,
        decodeVIN, equipment, equipmentUnit, recordOdometer, unitPhoto, addUnitPhoto, deleteUnitPhoto,
        dispatchEquipment, dispatchCreateEquipment, dispatchEquipmentUnit, dispatchUpdateEquipment, dispatchAssignEquipment,
        dispatchEquipmentStatus, dispatchImportEquipment, dispatchAddEquipmentDocument, dispatchDeleteEquipmentDocument,
        dispatchExpiringDocuments, dispatchOdometerReadings, dispatchFuelReport,
        recordLocations, dispatchPositions, dispatchTripTrack, dispatchOrderProgress,
    ]
}
