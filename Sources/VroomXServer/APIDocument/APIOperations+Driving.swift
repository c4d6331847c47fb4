import VroomXModels

extension APIOperation {
    /// A driver's work: trips and orders, sync, inspections and their uploads.
    static var driving: [APIOperation] { [
        APIOperation(.trips, .driver, "The driver's trips, newest start date first", answer: .list(Trip.self)),
        APIOperation(.trip, .driver, "One of the driver's trips",
                     answer: .ok(Trip.self),
                     refusals: [404: "not_found (also for rows of another driver or carrier)"]),
        APIOperation(.startTrip, .driver, "Start one of the driver's trips before its first pickup",
                     details: "A planned trip gets under way (and the driver's position is recorded from then on); picking up its first vehicle starts it too. Starting a trip under way answers it unchanged, so a replayed tap succeeds (also as the mutation start_trip through POST /v1/mutations).",
                     answer: .ok(Trip.self),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         409: "invalid_transition: the trip is completed or cancelled"
                     ]),
        APIOperation(.tripOrders, .driver, "Orders on one of the driver's trips",
                     answer: .list(Order.self),
                     refusals: [
                         400: "invalid_parameter: the id is not a UUID",
                         404: "not_found (also for rows of another driver or carrier)"
                     ]),
        APIOperation(.tripExpenses, .driver, "Expenses of one of the driver's trips",
                     answer: .list(Expense.self),
                     refusals: [
                         400: "invalid_parameter: the id is not a UUID",
                         404: "not_found (also for rows of another driver or carrier)"
                     ]),
        APIOperation(.orders, .driver, "The driver's orders, newest first",
                     answer: .list(Order.self),
                     refusals: [400: "invalid_parameter"]),
        APIOperation(.order, .driver, "One of the driver's orders",
                     answer: .ok(Order.self),
                     refusals: [404: "not_found (also for rows of another driver or carrier)"]),
        APIOperation(.updateOrderStatus, .driver, "Pick up or deliver",
                     details: "Moving to the current status is a no-op (200). A driver's picked_up / delivered needs the completed pickup / delivery inspection (completing it already moves the order). Picking up and delivering set actual_pickup_date / actual_delivery_date to occurred_at.",
                     body: .json(UpdateOrderStatusRequest.self),
                     answer: .ok(Order.self),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         409: "invalid_transition: the state machine does not allow it; inspection_required: a driver picks up or delivers by completing that inspection. Nothing was written"
                     ]),
        APIOperation(.updateOrderETA, .driver, "Submit pickup and/or delivery ETAs",
                     body: .json(UpdateETARequest.self),
                     answer: .ok(Order.self),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         409: "conflict: the order is closed (or already picked up, for pickup_eta)"
                     ]),
        APIOperation(.createExpense, .driver, "Record an expense on one of the driver's trips",
                     body: .json(CreateExpenseRequest.self),
                     answer: .created(Expense.self),
                     refusals: [
                         404: "not_found: no such trip of this driver",
                         409: "already_exists: the id is taken by a different expense"
                     ]),
        APIOperation(.deleteExpense, .driver, "Delete an expense the driver recorded",
                     answer: Answer(204, "Deleted", .empty),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         422: "validation_failed or idempotency_key_reused"
                     ]),
        APIOperation(.addExpenseReceipt, .driver, "Add a photo of an expense's receipt in one request",
                     details: "Its driver (who recorded it, or holds the trip dispatch recorded it on) or dispatch. JPEG, PNG or HEIC; an expense keeps 10. Resumable too: POST /v1/uploads with expense_id in Upload-Metadata (send it once the expense exists).",
                     body: .bytes("application/octet-stream"),
                     answer: Answer(201, "The expense with its receipts", .json(Expense.self)),
                     refusals: Self.paperPhotoRefusals,
                     requires: ["Content-Length"]),
        APIOperation(.expenseReceipt, .driver, "Download a receipt photo (Range supported)",
                     details: "Whoever sees the expense: its driver, or dispatch.",
                     answer: Answer(200, "The file", .file),
                     refusals: [403: "forbidden: the endpoint is for another role (or driver_not_found)", 404: "not_found"]),
        APIOperation(.deleteExpenseReceipt, .driver, "Remove a receipt photo of an expense",
                     answer: .ok(Expense.self),
                     refusals: [404: "not_found (another driver's or carrier's expense is not found either)"]),
        APIOperation(.collectPayment, .driver, "Record money collected for an order on delivery (COD) or at pickup (COP)",
                     details: "A payment of the order's invoice (its draft is prepared if there is none yet): the invoice shows it paid on collection, pending deposit until dispatch banks it. id is yours: sending it again records it once (also as the mutation collect_payment through POST /v1/mutations). The photo of the check follows: POST /v1/collections/{id}/photos, or resumably with payment_id in Upload-Metadata.",
                     body: .json(CollectPaymentRequest.self),
                     answer: .created(InvoicePayment.self),
                     refusals: [
                         403: "forbidden: the endpoint is for another role",
                         404: "not_found: no such order of this driver",
                         409: "invalid_transition: the order is not picked up or delivered; idempotency_key_reused: a different payment has this id; conflict: the invoice has its 100 payments",
                         422: "validation_failed: amount_cents, collected_on, reference, or the order names no customer to bill"
                     ]),
        APIOperation(.addCollectionPhoto, .driver, "Add a photo of the check or cash receipt of money the driver collected",
                     details: "JPEG, PNG or HEIC; a payment keeps 10 (front and back of a check).",
                     body: .bytes("application/octet-stream"),
                     answer: Answer(201, "The payment with its photos", .json(InvoicePayment.self)),
                     refusals: Self.paperPhotoRefusals,
                     requires: ["Content-Length"]),
        APIOperation(.notifications, .driver, "The driver's notifications, newest first",
                     answer: .list(DriverNotification.self),
                     refusals: [400: "invalid_parameter"]),
        APIOperation(.markNotificationRead, .driver, "Mark a notification read (keeps the first read time)",
                     answer: .ok(DriverNotification.self),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         422: "validation_failed or idempotency_key_reused"
                     ]),
        APIOperation(.acknowledgeNotification, .driver, "Answer an urgent message “Got it” (keeps the first time; marks it read)",
                     details: "Dispatch sees the time beside its message. Also as the mutation acknowledge_notification (read_at: when the driver tapped).",
                     answer: .ok(DriverNotification.self),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         409: "invalid_transition: the message is not urgent"
                     ]),
        APIOperation(.sendMessage, .driver, "Write to dispatch, in general or about one of your trips or orders",
                     details: "id is yours: sending it again records it once (also as the mutation send_message through POST /v1/mutations). Dispatch sees it in its inbox at once; read_by_dispatch_at is set when dispatch opens the conversation. At most 500 of a driver's messages wait unread by dispatch.",
                     body: .json(SendDriverMessageRequest.self),
                     answer: .created(DriverMessage.self),
                     refusals: [
                         404: "not_found: trip_id or order_id is not one of yours",
                         409: "idempotency_key_reused: the id was used for another message",
                         422: "validation_failed: body empty or over 2,000 characters, or 500 messages unread by dispatch"
                     ]),
        APIOperation(.reportStopProblem, .driver, "Report a problem at a stop of one of your orders",
                     details: "Vehicle not ready, inoperable, keys missing, dry run, damage found before loading, or waiting; a note if you like. id is yours: reporting it again records it once (also as the mutation report_stop_problem through POST /v1/mutations). The order answers with the problem in `problems`; dispatch sees it on the order and the board at once, and as a line of your conversation. A report of waiting starts detention when the truck's position did not; a dry run earns the carrier's dry-run fee on the invoice. At most \(StopProblem.maxPerOrder) an order.",
                     body: .json(ReportStopProblemRequest.self),
                     answer: .created(Order.self),
                     refusals: [
                         404: "not_found: order_id is not one of yours",
                         409: "idempotency_key_reused: the id was used for another report; invalid_transition: the order is cancelled, a pickup problem after delivery, a delivery problem before pickup",
                         422: "validation_failed: the note is over 1,000 characters, or the order has 20 problems already"
                     ]),
        APIOperation(.reportDeviceBacklog, .driver, "Report what this phone has not sent yet",
                     details: "What the phone holds of the driver's work that has not reached dispatch (waiting, refused, kept), for dispatch to see; a report of nothing clears it. What the phone holds of the driver's work that has not reached dispatch (waiting, refused, kept), for dispatch to see; a report of nothing clears it.",
                     body: .json(DeviceBacklog.self),
                     answer: Answer(204, "Stored (or cleared)", .empty),
                     refusals: [422: "validation_failed: a count, a text or the device id out of range (field names it)"]),
        APIOperation(.sync, .sync, "The change feed: what you may see after a cursor, or a snapshot",
                     details: "since=0 (or absent) starts a snapshot of everything you may see; its pages carry the cursor of the moment it began. Otherwise: the changes after since, oldest first, gap-free, in commit order. Keep asking while has_more.",
                     answer: Answer(200, "A page", .json(SyncPage.self)),
                     refusals: [
                         400: "invalid_parameter",
                         410: "cursor_expired: older than the kept history (or ahead of the server): start over with since=0"
                     ]),
        APIOperation(.mutations, .sync, "Apply a batch of offline mutations, each exactly once",
                     details: "Mutations apply in order, each atomically, keyed by its id: a replay returns the original result (replayed: true) and applies nothing. A rejection does not stop the batch. Conflict rule: a mutation writes only the fields it names; with base_version, a field someone else changed since then (to another value) is a conflict; status changes are validated by the state machine against the current status.",
                     body: .json(MutationBatch.self),
                     answer: Answer(200, "One result per mutation, in order", .json(MutationBatchResult.self)),
                     refusals: [
                         403: "forbidden: drivers only",
                         413: "payload_too_large",
                         422: "validation_failed (more than 500 mutations, duplicate ids, bad payload)"
                     ]),
        APIOperation(.realtime, .sync, "Realtime changes over a WebSocket",
                     details: "Upgrade to a WebSocket with Authorization: Bearer (or ?access_token=) and ?since=<cursor>. The server sends {type: changes, changes, cursor} for everything missed, then {type: ready, cursor}, then changes as they commit, and {type: heartbeat, cursor} about every 25 s. Close codes: 4001 token expired (refresh, reconnect), 4003 session revoked (sign in), 4008 too slow (reconnect from your cursor), 4029 too many connections (a newer socket of the same user took this one's place: back off), 4410 cursor expired (re-snapshot), 1001 server going away (reconnect), 1013 try again later (the database failed: back off). A refused upgrade is answered with the JSON error of its reason and Connection: close.",
                     answer: Answer(101, "Switching protocols: WebSocket messages are RealtimeMessage", .json(RealtimeMessage.self)),
                     refusals: [
                         400: "invalid_parameter: since",
                         426: "upgrade_required: not a WebSocket upgrade request",
                         429: "too_many_connections: the carrier or this server holds as many realtime sockets as it may (Retry-After)"
                     ],
                     requires: ["since"]),
        APIOperation(.saveInspection, .inspections, "Start an inspection or update it while open",
                     body: .json(SaveInspectionRequest.self),
                     answer: Answer(200, "The inspection", .json(Inspection.self)),
                     refusals: [
                         400: "malformed_json or invalid_parameter",
                         404: "not_found: no such order of this driver",
                         409: "inspection_completed, already_exists, or invalid_transition (a pickup inspection needs an assigned order, a delivery one a picked-up order)"
                     ]),
        APIOperation(.inspection, .inspections, "One inspection",
                     answer: Answer(200, "The inspection", .json(Inspection.self)),
                     refusals: [404: "not_found"]),
        APIOperation(.completeInspection, .inspections, "Complete an inspection",
                     details: "Completing the pickup inspection moves the order to picked_up, the delivery inspection to delivered, at occurred_at (default now), in the same transaction.",
                     body: .optionalJSON(CompleteInspectionRequest.self),
                     answer: Answer(200, "The completed inspection (completing again answers it unchanged)", .json(Inspection.self)),
                     refusals: [
                         404: "not_found",
                         409: "invalid_transition: the order is no longer at this stage",
                         422: "inspection_incomplete: required photos (front, rear, left_side, right_side, odometer, vin_plate) or the signature / customer_unavailable missing; validation_failed for occurred_at in the future or a delivery before its pickup"
                     ]),
        APIOperation(.orderInspections, .inspections, "Inspections of one of the driver's orders",
                     answer: Answer(200, "Inspections", .list(Inspection.self)),
                     refusals: [404: "not_found"]),
        APIOperation(.inspectionMedia, .inspections, "Download a file of an inspection (Range supported)",
                     answer: Answer(200, "The file", .file),
                     refusals: [403: "forbidden: the endpoint is for another role (or driver_not_found)", 404: "not_found"]),
        APIOperation(.putInspectionMedia, .inspections, "Upload a whole file in one request (small files; large ones use /v1/uploads)",
                     body: .bytes("application/octet-stream"),
                     answer: Answer(200, "The inspection with the file attached", .json(Inspection.self)),
                     refusals: [
                         400: "invalid_parameter: the body ended early, or the file is empty",
                         404: "not_found",
                         409: "inspection_completed",
                         411: "invalid_parameter: Content-Length is required",
                         413: "payload_too_large: over the size limit of the slot's kind",
                         415: "unsupported_media_type: the bytes are not a JPEG/PNG/HEIC photo, MP4/MOV video or PNG/JPEG signature as the slot needs",
                         422: "validation_failed",
                         429: "upload_quota_exceeded: too many unfinished uploads for this user (Retry-After says when one expires)",
                         507: "storage_quota_exceeded (the carrier's media quota is used up) or insufficient_storage (the server's disk is full; Retry-After)"
                     ],
                     requires: ["Content-Length"]),
        APIOperation(.uploadOptions, .uploads, "tus capabilities: Tus-Version, Tus-Extension, Tus-Max-Size, Tus-Checksum-Algorithm",
                     answer: Answer(204, "Capabilities in the headers", .empty)),
        APIOperation(.createUpload, .uploads, "Create a resumable upload (tus creation) for an inspection slot or a photo of a unit",
                     details: "Upload-Length and Upload-Metadata (inspection_id, slot, filename, content type) name the file; a photo of one of the driver's units names equipment_id instead of inspection_id and slot. Creating an upload for a slot replaces this user's unfinished uploads for the same inspection and slot (they answer 410 upload_expired from then on), so an abandoned attempt never holds a place in the quota.",
                     answer: Answer(201, "Created; Location names the upload, Upload-Expires says until when it can be resumed", .empty, headers: ["Location": "The upload's URL", "Upload-Expires": "Until when it can be resumed (RFC 9110 date)"]),
                     refusals: [
                         400: "invalid_parameter: Upload-Length or Upload-Metadata (inspection_id, slot) missing or malformed",
                         404: "not_found: no such inspection of this driver",
                         409: "inspection_completed",
                         412: "tus_version_unsupported",
                         413: "payload_too_large",
                         429: "upload_quota_exceeded: too many unfinished uploads for this user (Retry-After says when one expires)",
                         507: "storage_quota_exceeded (the carrier's media quota is used up) or insufficient_storage (the server's disk is full; Retry-After)"
                     ],
                     requires: ["Upload-Length"],
                     headers: [.tusResumable, .uploadMetadata]),
        APIOperation(.uploadOffset, .uploads, "The upload's offset (tus core), to resume after an interruption",
                     answer: Answer(200, "Upload-Offset and Upload-Length in the headers", .empty, headers: ["Upload-Offset": "Bytes the server holds", "Upload-Length": "The file's size"]),
                     refusals: [404: "not_found", 410: "upload_expired", 412: "tus_version_unsupported"],
                     headers: [.tusResumable]),
        APIOperation(.appendUpload, .uploads, "Append bytes at Upload-Offset (tus core, checksum)",
                     body: .bytes("application/offset+octet-stream"),
                     answer: Answer(204, "Written; Upload-Offset is the new offset. The last byte attaches the file to the inspection.", .empty, headers: ["Upload-Offset": "The new offset"]),
                     refusals: [
                         400: "invalid_parameter: Upload-Offset or Upload-Checksum malformed, or the request was interrupted (Upload-Offset says where to resume)",
                         404: "not_found",
                         409: "upload_offset_mismatch (Upload-Offset says what the server has; also after storage lost bytes past it) or inspection_completed",
                         410: "upload_expired, or upload_lost: storage lost the upload's bytes; start a new upload",
                         412: "tus_version_unsupported",
                         413: "payload_too_large: past Upload-Length",
                         415: "unsupported_media_type: not application/offset+octet-stream, or the bytes are not what the slot takes",
                         422: "validation_failed",
                         423: "upload_locked: another request is writing to it; retry after Retry-After",
                         460: "checksum_mismatch: the chunk was discarded",
                         503: "unavailable: media storage is failing; retry after Retry-After",
                         507: "insufficient_storage: the server's disk is full; the bytes recorded so far are kept (HEAD), retry after Retry-After"
                     ],
                     requires: ["Upload-Offset"],
                     headers: [.tusResumable, .uploadChecksum]),
        APIOperation(.terminateUpload, .uploads, "Abandon an upload (tus termination)",
                     answer: Answer(204, "Deleted", .empty),
                     refusals: [404: "not_found", 412: "tus_version_unsupported", 423: "upload_locked"],
                     headers: [.tusResumable]),
    ] }

    /// How a one-request photo of paper (a receipt, a collected check) is refused.
    static let paperPhotoRefusals: [Int: String] = [
        400: "invalid_parameter: the body ended early, or the file is empty",
        403: "forbidden: the endpoint is for another role (or driver_not_found)",
        404: "not_found",
        411: "invalid_parameter: Content-Length is required",
        413: "payload_too_large: over the size limit of a photo",
        415: "unsupported_media_type: the bytes are not a JPEG/PNG/HEIC photo",
        422: "validation_failed: it already has 10 photos (field receipts, or photos for a payment)",
        429: "upload_quota_exceeded: too many unfinished uploads for this user (Retry-After says when one expires)",
        507: "storage_quota_exceeded (the carrier's media quota is used up) or insufficient_storage (the server's disk is full; Retry-After)",
    ]
}
