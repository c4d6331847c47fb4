import Foundation
import Testing
import VroomXModels
import VroomXSecurity
@testable import VroomXServer
import VroomXTestSupport

/// Sign-in through the real application: the happy path and each way it
/// is abused (seed 004, made safe).
@Suite("Sign-in and sessions")
struct AuthTests {
    @Test("the bearer token is trimmed of the same spaces as Foundation trims")
    func bearerTrimming() {
        for text in ["abc", "  abc\t", "\u{00A0}a b\u{3000}", "\t\t", "", "\n abc \n", "\u{2003}é\u{202F}", " \u{1F69A} ", "\u{200B}x\u{200B}", "\u{FEFF}x\u{180E}", "\u{85}x", " \u{301}x "] {
            #expect(text.trimmingHorizontalSpace() == text.trimmingCharacters(in: .whitespaces), "\(text.unicodeScalars.map(\.value))")
            #expect(text[...].trimmingHorizontalSpace() == text.trimmingCharacters(in: .whitespaces))
        }
    }

    @Test("code sign-in returns tokens, the user and the driver record", arguments: TestBackend.available)
    func signIn(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        try await server.run { api in
            let email = carrier.driver.user.email
            let session = try await api.signIn(email, server: server)
            #expect(session.user.email == email)
            #expect(session.user.role == .driver)
            #expect(session.driver?.id == carrier.driverID(0))
            #expect(abs(session.expiresAt.timeIntervalSince(server.clock.now) - 3600) < 0.01)
            let me = try await api.call(.me, token: session.accessToken).decode(MeResponse.self)
            #expect(me.driver?.id == carrier.driverID(0))
            #expect(me.tenant.id == carrier.tenant.id)
            // The code is single-use.
            let again = try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: try await server.code(for: email)))
            #expect(again.status == 401)
            #expect(again.errorCode == "invalid_code")
        }
    }

    @Test("asking for a code reveals nothing about who has an account", arguments: TestBackend.available)
    func noEnumeration(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        try await server.run { api in
            let known = try await api.call(.sendCode, json: SendCodeRequest(email: carrier.driver.user.email))
            let unknown = try await api.call(.sendCode, json: SendCodeRequest(email: "nobody@nowhere.example"))
            #expect(known.status == 202)
            #expect(unknown.status == 202)
            #expect(known.body == unknown.body)
            // Guessing behaves the same way for both.
            let knownGuess = try await api.call(.verifyCode, json: VerifyCodeRequest(email: carrier.driver.user.email, code: "000000"))
            let unknownGuess = try await api.call(.verifyCode, json: VerifyCodeRequest(email: "nobody@nowhere.example", code: "000000"))
            #expect(knownGuess.status == unknownGuess.status)
            #expect(knownGuess.error?.attemptsLeft == unknownGuess.error?.attemptsLeft)
            // Resend limits apply to both, too.
            #expect(try await api.call(.sendCode, json: SendCodeRequest(email: "nobody@nowhere.example")).status == 429)
            // Only the real account got mail.
            try await Task.sleep(for: .milliseconds(50))
            #expect(server.mailbox.sent.map(\.to) == [carrier.driver.user.email])
        }
    }

    @Test("a code expires after 10 minutes", arguments: TestBackend.available)
    func codeExpiry(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        try await server.run { api in
            let email = carrier.driver.user.email
            _ = try await api.call(.sendCode, json: SendCodeRequest(email: email))
            let code = try await server.code(for: email)
            server.clock.advance(by: 601)
            let late = try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: code))
            #expect(late.status == 401)
            #expect(late.errorCode == "code_expired")
            // Just inside the window works.
            _ = try await api.call(.sendCode, json: SendCodeRequest(email: email))
            try await Task.sleep(for: .milliseconds(30))
            let fresh = try await server.code(for: email)
            server.clock.advance(by: 599)
            #expect(try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: fresh)).status == 200)
        }
    }

    @Test("five wrong guesses burn the code", arguments: TestBackend.available)
    func attemptCap(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        try await server.run { api in
            let email = carrier.driver.user.email
            _ = try await api.call(.sendCode, json: SendCodeRequest(email: email))
            let code = try await server.code(for: email)
            let wrong = code == "123456" ? "654321" : "123456"
            var left: [Int?] = []
            for _ in 0..<5 {
                let answer = try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: wrong))
                #expect(answer.status == 401)
                left.append(answer.error?.attemptsLeft)
            }
            #expect(left == [4, 3, 2, 1, 0])
            // The right code no longer works.
            let late = try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: code))
            #expect(late.status == 401)
            #expect(late.errorCode == "invalid_code")
        }
    }

    @Test("parallel guesses cannot exceed the attempt cap", arguments: TestBackend.available)
    func parallelGuesses(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        try await server.run { api in
            let email = carrier.driver.user.email
            _ = try await api.call(.sendCode, json: SendCodeRequest(email: email))
            let code = try await server.code(for: email)
            // 20 simultaneous wrong guesses, then the right code: at most 5 guesses were counted, so the code is gone.
            let wrong = (0..<20).map { String(format: "%06d", (Int(code)! + 1 + $0) % 1_000_000) }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for guess in wrong {
                    group.addTask { try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: guess)).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == 401 })
            #expect(try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: code)).status == 401)
        }
    }

    @Test("one code per email per minute, Retry-After says when", arguments: TestBackend.available)
    func sendRateLimit(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        try await server.run { api in
            let email = carrier.driver.user.email
            #expect(try await api.call(.sendCode, json: SendCodeRequest(email: email)).status == 202)
            server.clock.advance(by: 20)
            let limited = try await api.call(.sendCode, json: SendCodeRequest(email: email))
            #expect(limited.status == 429)
            #expect(limited.errorCode == "rate_limited")
            // It is the email that waits (the console then says its code is on the way).
            #expect(limited.error?.field == "email")
            #expect(limited.headers[.retryAfter] == "40")
            #expect(limited.error?.retryAfter == 40)
            server.clock.advance(by: 40)
            #expect(try await api.call(.sendCode, json: SendCodeRequest(email: email)).status == 202)
        }
    }

    @Test("each client address may ask for a limited number of codes", arguments: TestBackend.available)
    func perAddressLimit(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend) { $0.auth.codeSendsPerAddress = 3 }
        // Real sockets, so the server sees the client's address; a client that waits off the test pool, as long as the
        // machine's load needs (the test framework's live client gives up after 20 s: twice in a loaded CI run).
        let live = try await LiveServer(server)
        defer { Task { await live.stop() } }
        func send(_ email: String) async throws -> RawHTTP.Answer {
            try await RawHTTP.request(port: live.port, Endpoint.sendCode.method.rawValue, Endpoint.sendCode.path,
                                      headers: ["Content-Type": "application/json"], body: Array(#"{"email":"\#(email)"}"#.utf8))
        }
        for index in 0..<3 {
            #expect(try await send("person\(index)@example.com").status == 202)
        }
        let limited = try await send("person9@example.com")
        #expect(limited.status == 429)
        #expect(Int(limited.headers["retry-after"] ?? "") ?? 0 > 0)
    }

    @Test("refresh rotates; an old token presented after its successor was used ends the session", arguments: TestBackend.available)
    func refreshReuseDetection(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        try await server.run { api in
            let first = try await api.signIn(carrier.driver.user.email, server: server)
            let second = try await api.call(.refresh, json: RefreshRequest(refreshToken: first.refreshToken)).decode(AuthSession.self)
            #expect(second.refreshToken != first.refreshToken)
            #expect(try await api.call(.me, token: second.accessToken).status == 200)
            server.clock.advance(by: 31)
            let third = try await api.call(.refresh, json: RefreshRequest(refreshToken: second.refreshToken)).decode(AuthSession.self)
            // Someone replays the first token after the lineage moved on: the whole family is revoked.
            let replay = try await api.call(.refresh, json: RefreshRequest(refreshToken: first.refreshToken))
            #expect(replay.status == 401)
            #expect(replay.errorCode == "refresh_token_reused")
            let afterwards = try await api.call(.refresh, json: RefreshRequest(refreshToken: third.refreshToken))
            #expect(afterwards.status == 401)
            #expect(afterwards.errorCode == "session_revoked")
            // The access tokens of the session stop working too (after the session cache expires).
            server.clock.advance(by: 11)
            let me = try await api.call(.me, token: second.accessToken)
            #expect(me.status == 401)
            #expect(me.errorCode == "session_revoked")
        }
    }

    @Test("a lost refresh answer is answered again with the same successor — minutes later too — a few times, never once the successor was used",
          arguments: TestBackend.available)
    func refreshGrace(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let replays = server.services.configuration.auth.refreshReplays
        // A phone behind a proxy that repeats every request, whose refresh answer is lost three times (killed
        // mid-refresh, no signal), presents the token 1 + 3 × 2 = 7 times: it must stay signed in.
        #expect(replays == 8, "docs/api.md promises at most eight")
        try await server.run { api in
            let first = try await api.signIn(carrier.driver.user.email, server: server)
            let lost = try await api.call(.refresh, json: RefreshRequest(refreshToken: first.refreshToken)).decode(AuthSession.self)
            // The answer was lost (or a second process refreshed at the same moment): the same token gets the same successor.
            for _ in 0..<replays {
                server.clock.advance(by: 600)  // a phone that lost the answer and came back online much later
                let retried = try await api.call(.refresh, json: RefreshRequest(refreshToken: first.refreshToken))
                #expect(retried.status == 200)
                #expect(try retried.decode(AuthSession.self).refreshToken == lost.refreshToken, "one lineage, nothing new issued")
            }
            // One replay more than allowed is someone else's copy: the session ends.
            let tooMany = try await api.call(.refresh, json: RefreshRequest(refreshToken: first.refreshToken))
            #expect(tooMany.errorCode == "refresh_token_reused")
            #expect(try await api.call(.refresh, json: RefreshRequest(refreshToken: lost.refreshToken)).errorCode == "session_revoked")
        }
        // Presented 20 times at once (a proxy repeating, a flood of copies): the rotation and 8 replays, no more.
        let third = try await TestServer.make(backend)
        let carrier3 = try await CarrierFixture.make(third, name: "Charlie", drivers: 1, tripsPerDriver: 0)
        let session = try await third.services.signIn(email: carrier3.driver.user.email)
        try await third.run { api in
            let answered = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<20 {
                    group.addTask { (try? await api.call(.refresh, json: RefreshRequest(refreshToken: session.refreshToken)).status) ?? 0 }
                }
                return await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(answered.filter { $0 == 200 }.count == 1 + replays, "\(answered)")
            #expect(answered.allSatisfy { $0 == 200 || $0 == 401 }, "\(answered)")
        }
        // Once the successor itself was used, the old token is not answered again, even within the window.
        let second = try await TestServer.make(backend)
        let carrier2 = try await CarrierFixture.make(second, name: "Bravo", drivers: 1, tripsPerDriver: 0)
        try await second.run { api in
            let first = try await api.signIn(carrier2.driver.user.email, server: second)
            let next = try await api.call(.refresh, json: RefreshRequest(refreshToken: first.refreshToken)).decode(AuthSession.self)
            let third = try await api.call(.refresh, json: RefreshRequest(refreshToken: next.refreshToken))
            #expect(third.status == 200)
            let stale = try await api.call(.refresh, json: RefreshRequest(refreshToken: first.refreshToken))
            #expect(stale.errorCode == "refresh_token_reused")
        }
    }

    @Test("a PIN set offline arrives as the app's scrypt hash: it verifies, and a hash of another cost or shape is refused",
          arguments: TestBackend.available)
    func pinFromHash(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let cost = server.services.configuration.auth.pinHashCost
        let token = carrier.driver.accessToken
        try await server.run { api in
            let hash = try PINHasher.hash("4826", cost: cost)
            #expect(try await api.call(.setPIN, json: PINRequest(pinHash: hash), token: token).status == 204)
            #expect(try await api.call(.verifyPIN, json: PINRequest(pin: "4826"), token: token).decode(PINVerifyResponse.self).ok)
            for bad in [try PINHasher.hash("4826", cost: cost + 6), "scrypt$1024$8$1$c2FsdA==$a2V5", "4826", ""] {
                let refused = try await api.call(.setPIN, json: PINRequest(pinHash: bad), token: token)
                #expect(refused.status == 422 && refused.error?.field == "pin_hash", "\(bad): \(refused.text)")
            }
        }
    }

    @Test("logout ends the session at once", arguments: TestBackend.available)
    func logout(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        try await server.run { api in
            let session = try await api.signIn(carrier.driver.user.email, server: server)
            #expect(try await api.call(.me, token: session.accessToken).status == 200)
            #expect(try await api.call(.logout, json: LogoutRequest(refreshToken: session.refreshToken)).status == 204)
            #expect(try await api.call(.me, token: session.accessToken).errorCode == "session_revoked")
            #expect(try await api.call(.refresh, json: RefreshRequest(refreshToken: session.refreshToken)).errorCode == "session_revoked")
            // Logging out again is harmless.
            #expect(try await api.call(.logout, json: LogoutRequest(refreshToken: session.refreshToken)).status == 204)
        }
    }

    @Test("the realtime heartbeat's check of many sessions in one query sees a revocation made on another instance",
          arguments: TestBackend.available)
    func sessionsCheckedTogether(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 0)
        let services = server.services, authenticator = server.services.authenticator
        var sessions: [ID<Session>] = []
        for driver in carrier.drivers {
            let signedIn = try await services.signIn(email: driver.user.email)
            sessions.append(try await services.tokens.verify(signedIn.accessToken).session)
        }
        let (kept, revoked, unknown) = (sessions[0], sessions[1], ID<Session>())
        for session in sessions { #expect(try await authenticator.sessionIsActive(session)) }
        // Another instance revokes one: this instance does not hear of it and answers from its cache.
        try await server.store.database.write { db in
            try await db.execute("UPDATE sessions SET revoked_at = \(server.clock.now) WHERE id = \(revoked)")
        }
        #expect(try await authenticator.sessionIsActive(revoked))
        #expect(try await server.store.activeSessions(among: [kept, revoked, unknown]) == [kept])
        // Answers younger than half the cache's life are kept; older ones are asked about, all at once.
        await authenticator.refresh([kept, revoked, unknown])
        #expect(try await authenticator.sessionIsActive(revoked))
        server.clock.advance(by: authenticator.sessionCacheTTL / 2)
        await authenticator.refresh([kept, revoked, unknown])
        #expect(try await !authenticator.sessionIsActive(revoked))
        #expect(try await authenticator.sessionIsActive(kept))
        #expect(try await !authenticator.sessionIsActive(unknown))
        // Expired sessions are not active either.
        server.clock.advance(by: 400 * 86_400)
        #expect(try await server.store.activeSessions(among: sessions).isEmpty)
    }

    @Test("access tokens expire after an hour", arguments: TestBackend.available)
    func tokenExpiry(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        try await server.run { api in
            let session = try await api.signIn(carrier.driver.user.email, server: server)
            server.clock.advance(by: 3599)
            #expect(try await api.call(.me, token: session.accessToken).status == 200)
            server.clock.advance(by: 2)
            let expired = try await api.call(.me, token: session.accessToken)
            #expect(expired.status == 401)
            #expect(expired.errorCode == "token_expired")
            // The refresh token still gets a new one.
            let renewed = try await api.call(.refresh, json: RefreshRequest(refreshToken: session.refreshToken)).decode(AuthSession.self)
            #expect(try await api.call(.me, token: renewed.accessToken).status == 200)
        }
    }

    @Test("a driver user without a driver record gets driver_not_found", arguments: TestBackend.available)
    func driverNotFound(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let email = carrier.driver.user.email
        try await server.store.database.write { try await $0.execute("DELETE FROM drivers WHERE id = \(carrier.driverID(0))") }
        try await server.run { api in
            _ = try await api.call(.sendCode, json: SendCodeRequest(email: email))
            let answer = try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: try await server.code(for: email)))
            #expect(answer.status == 403)
            #expect(answer.errorCode == "driver_not_found")
            #expect(answer.error?.message == "Driver account not found. Contact your dispatcher.")
        }
    }

    @Test("PIN: set, verify, five failures lock until the next email sign-in", arguments: TestBackend.available)
    func pinLockout(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        try await server.run { api in
            let token = carrier.driver.accessToken
            #expect(try await api.call(.verifyPIN, json: PINRequest(pin: "1234"), token: token).errorCode == "pin_not_set")
            #expect(try await api.call(.setPIN, json: PINRequest(pin: "12a4"), token: token).errorCode == "validation_failed")
            #expect(try await api.call(.setPIN, json: PINRequest(pin: "4821"), token: token).status == 204)
            // Stored as a slow salted hash, never the PIN itself.
            let stored = try await server.store.database.read { db in
                try await db.first("SELECT pin_hash FROM users WHERE id = \(carrier.driver.user.id)")?.string("pin_hash")
            }
            #expect(stored?.hasPrefix("scrypt$") == true)
            #expect(stored?.contains("4821") == false)

            #expect(try await api.call(.verifyPIN, json: PINRequest(pin: "4821"), token: token).decode(PINVerifyResponse.self).ok)
            var left: [Int?] = []
            for _ in 0..<4 {
                let wrong = try await api.call(.verifyPIN, json: PINRequest(pin: "0000"), token: token)
                #expect(wrong.errorCode == "pin_incorrect")
                left.append(wrong.error?.attemptsLeft)
            }
            #expect(left == [4, 3, 2, 1])
            #expect(try await api.call(.verifyPIN, json: PINRequest(pin: "0000"), token: token).errorCode == "pin_locked")
            // Locked: even the right PIN, and setting a new one, are refused.
            #expect(try await api.call(.verifyPIN, json: PINRequest(pin: "4821"), token: token).status == 423)
            #expect(try await api.call(.setPIN, json: PINRequest(pin: "1111"), token: token).status == 423)
            // An email sign-in unlocks.
            let fresh = try await api.signIn(carrier.driver.user.email, server: server)
            #expect(try await api.call(.verifyPIN, json: PINRequest(pin: "4821"), token: fresh.accessToken).status == 200)
        }
    }
}
