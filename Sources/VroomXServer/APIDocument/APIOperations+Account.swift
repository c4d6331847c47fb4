import VroomXModels

extension APIOperation {
    /// The service itself, sign-in and the signed-in user.
    static var account: [APIOperation] { [
        APIOperation(.health, .service, "Liveness: the process answers",
                     details: "Never waits on the database (load balancers should use /readyz); database_reachable is what the server last knew of it.",
                     answer: .ok(HealthResponse.self)),
        APIOperation(.ready, .service, "Readiness: whether this instance should take traffic",
                     details: "Checks that the database answers (2 s at most), that the media folder and, on SQLite, the data folder take a write (a small file created, fsynced and deleted), and that their disks have VROOMX_MIN_FREE_DISK_MB free. Load balancers take an instance answering 503 out of rotation.",
                     answer: Answer(200, "Ready", .json(ReadinessResponse.self)),
                     refusals: [503: "Not ready: the failed checks say what is wrong"]),
        APIOperation(.openAPI, .service, "This document", answer: Answer(200, "OpenAPI 3.1 document", .document)),
        APIOperation(.metrics, .service, "This instance's numbers, for Prometheus",
                     details: "Only with VROOMX_METRICS_TOKEN set (otherwise 404), for a request bearing it: `Authorization: Bearer <VROOMX_METRICS_TOKEN>` (the metrics token, not a session's). The series and the dashboards' queries are in docs/operations.md.",
                     answer: Answer(200, "Prometheus text format 0.0.4", .text("text/plain; version=0.0.4")),
                     refusals: [401: "invalid_token: the request does not bear the metrics token"]),
        APIOperation(.sendCode, .auth, "Send a 6-digit sign-in code by email",
                     details: "Codes are valid 10 minutes and stored hashed. The answer is the same for unknown emails.",
                     body: .json(SendCodeRequest.self),
                     answer: Answer(202, "Accepted, whether or not the email has an account", .json(SendCodeResponse.self)),
                     refusals: [
                         429: "rate_limited: too many requests from this address, or too many wrong codes for this email today (Retry-After)"
                     ]),
        APIOperation(.verifyCode, .auth, "Exchange a code for a session",
                     body: .json(VerifyCodeRequest.self),
                     answer: .ok(AuthSession.self),
                     refusals: [
                         401: "invalid_code (with attempts_left) or code_expired; a code dies after 5 wrong attempts",
                         403: "driver_not_found: no driver record for this account; account_deactivated: the carrier deactivated this driver",
                         409: "carrier_required: the code is right and the email has accounts at several carriers; send the same code again with one of error.carriers as carrier_id",
                         429: "rate_limited: too many requests from this address, or too many wrong codes for this email today (Retry-After)"
                     ]),
        APIOperation(.refresh, .auth, "Rotate the refresh token",
                     details: "Rotates the refresh token. The same token always has the same successor: presented again within 30 s of its rotation (a lost answer, two processes at once) it is answered with that successor again, at most 3 times and only while the successor has not been used; any other reuse ends the session (refresh_token_reused).",
                     body: .json(RefreshRequest.self),
                     answer: .ok(AuthSession.self),
                     refusals: [
                         401: "invalid_refresh_token, session_revoked, or refresh_token_reused (an already-rotated token came back after the grace window: the session is revoked)"
                     ]),
        APIOperation(.logout, .auth, "End the session of a refresh token",
                     body: .json(RefreshRequest.self),
                     answer: Answer(204, "Logged out (also when already logged out)", .empty)),
        APIOperation(.me, .me, "The signed-in user, carrier and driver record",
                     answer: .ok(MeResponse.self),
                     refusals: [403: "driver_not_found"]),
        APIOperation(.setPIN, .me, "Set the 4-digit PIN (stored with scrypt)",
                     body: .json(PINRequest.self),
                     answer: Answer(204, "PIN set", .empty),
                     refusals: [423: "pin_locked: 5 wrong PINs; sign in with email first"]),
        APIOperation(.verifyPIN, .me, "Check the PIN",
                     body: .json(PINRequest.self),
                     answer: .ok(PINVerifyResponse.self),
                     refusals: [
                         403: "pin_incorrect, with attempts_left",
                         409: "pin_not_set",
                         423: "pin_locked until the next email sign-in"
                     ]),
        APIOperation(.registerDeviceToken, .me, "Register this device for push notifications",
                     body: .json(RegisterDeviceTokenRequest.self),
                     answer: Answer(201, "Registered", .json(DeviceToken.self)),
                     refusals: [
                         409: "conflict: the token is registered to another account (released when that account signs out on the device)"
                     ]),
        APIOperation(.removeDeviceToken, .me, "Remove a device token (on logout)",
                     answer: Answer(204, "Removed", .empty),
                     refusals: [404: "not_found", 422: "validation_failed or idempotency_key_reused"]),
    ] }
}
