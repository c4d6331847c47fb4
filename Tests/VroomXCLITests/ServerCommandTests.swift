import Foundation
import Glibc
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// The `vroomx` binary as an operator uses it: migrate, create a carrier,
/// serve, sign in with the code from the log, stop with SIGTERM.
@Suite("vroomx command")
struct ServerCommandTests {
    @Test("migrate, tenant create, serve, sign in, graceful shutdown", arguments: TestBackend.available)
    func operatorFlow(_ backend: TestBackend) async throws {
        let configuration = try await backend.freshConfiguration()
        var environment = ["VROOMX_DATA_DIR": configuration.dataDirectory.path, "VROOMX_LOG_LEVEL": "info"]
        if let url = configuration.databaseURL { environment["VROOMX_DATABASE_URL"] = url }

        let migrate = try await VroomXBinary.run(["migrate"], environment: environment)
        #expect(migrate.status == 0, "\(migrate.output)")
        #expect(migrate.output.contains("schema version"))

        let create = try await VroomXBinary.run(["tenant", "create", "--name", "Acme Hauling", "--dispatcher-email", "Boss@Acme.example"],
                                                environment: environment)
        #expect(create.status == 0, "\(create.output)")
        #expect(create.output.contains("boss@acme.example"))
        // A person may dispatch for two carriers: an account at each, chosen at sign-in.
        let second = try await VroomXBinary.run(["tenant", "create", "--name", "Other Carrier", "--dispatcher-email", "boss@acme.example"],
                                                environment: environment)
        #expect(second.status == 0, "\(second.output)")

        // Without a mail server, serving would print everyone's sign-in codes to the log: it refuses unless asked.
        let refused = try await VroomXBinary.run(["serve", "--port", String(try ChildProcess.freePort())], environment: environment)
        #expect(refused.status != 0 && refused.output.contains("VROOMX_SMTP_URL"), "\(refused.output)")
        environment["VROOMX_DEV_MAILBOX"] = "true"

        let (server, port) = try await VroomXBinary.serve(["serve"], environment: environment)
        #expect(server.text.contains("push notifications are not configured"))
        let client = HTTPTestClient(baseURL: "http://127.0.0.1:\(port)")
        let sent = try await client.send(.sendCode, json: SendCodeRequest(email: "boss@acme.example"))
        #expect(sent.status == 202)
        let code = try await codeFromLog(server, email: "boss@acme.example")
        let choice = try await client.send(.verifyCode, json: VerifyCodeRequest(email: "boss@acme.example", code: code))
        #expect(choice.errorCode == "carrier_required")
        let acme = try #require(choice.error?.carriers?.first { $0.name == "Acme Hauling" })
        let session = try await client.send(.verifyCode, json: VerifyCodeRequest(email: "boss@acme.example", code: code, carrierID: acme.id))
            .decode(AuthSession.self)
        #expect(session.user.role == .dispatcher && session.user.tenantID == acme.id)
        let driver = try await client.send(.dispatchCreateDriver, json: CreateDriverRequest(
            email: "driver@acme.example", name: "Dana", payType: .perMile, payRate: 60), token: session.accessToken)
        #expect(driver.status == 201)

        await server.stop()
        #expect(server.exitStatus == 0, "\(server.text)")
    }

    @Test("vroomx check finds a carrier's kept counts that differ from its orders and trips; --repair-counts recounts that carrier's alone",
          arguments: TestBackend.available)
    func checkAndRepairCounts(_ backend: TestBackend) async throws {
        let configuration = try await backend.freshConfiguration()
        var environment = ["VROOMX_DATA_DIR": configuration.dataDirectory.path]
        if let url = configuration.databaseURL { environment["VROOMX_DATABASE_URL"] = url }
        var services = try await ServerServices.make(configuration)
        let days = try (1...3).map { try #require(LocalDate(year: 2026, month: 12, day: $0)) }
        var tenants: [ID<Tenant>] = []
        for (name, email) in [("Acme Hauling", "boss@acme.example"), ("Other Carrier", "boss@other.example")] {
            let (tenant, _) = try await services.store.people.createTenant(name: name, dispatcherEmail: email)
            _ = try await services.store.orders.createMany((0..<12).map { index in
                CreateOrderRequest(number: "A-\(index)", vehicle: Vehicle(make: "Kia"),
                                   pickup: Stop(address: "Joliet, IL", windowStart: days[index % 3]),
                                   delivery: Stop(address: "Gary, IN"), revenueCents: 10_000)
            }, tenant: tenant.id)
            tenants.append(tenant.id)
        }
        let (acme, other) = (tenants[0].rawValue, tenants[1].rawValue)
        let untouched: SQL = "SELECT status, day, n FROM order_day_counts WHERE tenant_id = \(other) ORDER BY status, day, n"
        let otherBefore = try await services.database.read { try await $0.query(untouched).map { "\(try $0.string("status")) \(try $0.string("day")) \(try $0.int64("n"))" } }
        // Counts edited behind the triggers' back: one too many, and a carrier's day counts gone.
        try await services.database.write { db in
            // (PostgreSQL keeps a row a change until they are gathered; SQLite one a key.)
            try await db.execute(backend == .postgres ? "INSERT INTO order_status_counts (tenant_id, status, n) VALUES (\(acme), 'new', 3)"
                                                      : "UPDATE order_status_counts SET n = n + 3 WHERE tenant_id = \(acme) AND status = 'new'")
            try await db.execute("DELETE FROM order_day_counts WHERE tenant_id = \(acme)")
        }
        await services.database.close()

        let check = try await VroomXBinary.run(["check"], environment: environment)
        #expect(check.status == 1, "\(check.output)")
        #expect(check.output.contains("Checked ") && check.output.contains("2 carriers, 0 trips, 24 orders."), "\(check.output)")
        #expect(check.output.contains("Problem: \"Acme Hauling\" (\(acme)): order_status_counts counts 15 orders new, and there are 12"), "\(check.output)")
        #expect(check.output.contains("Problem: \"Acme Hauling\" (\(acme)): order_day_counts counts 0 orders new on 2026-12-02, and there are 4"),
                "\(check.output)")
        #expect(!check.output.contains(other), "the other carrier's counts are right: \(check.output)")
        #expect(check.output.contains("--repair-counts"))

        let repair = try await VroomXBinary.run(["check", "--repair-counts"], environment: environment)
        #expect(repair.status == 0, "\(repair.output)")
        #expect(repair.output.contains("Repaired: \"Acme Hauling\" (\(acme)): order_status_counts counts 15 orders new, and there are 12; counted again")
                && repair.output.contains("Consistent:"), "\(repair.output)")
        #expect(!repair.output.contains(other), "\(repair.output)")
        #expect(try await VroomXBinary.run(["check"], environment: environment).status == 0)

        // Drift again, and two repairs at once: the second waits for the first and finds nothing left to count.
        services = try await ServerServices.make(configuration)
        try await services.database.write { db in try await db.execute("DELETE FROM order_status_counts WHERE tenant_id = \(acme)") }
        await services.database.close()
        async let first = VroomXBinary.run(["check", "--repair-counts"], environment: environment)
        async let second = VroomXBinary.run(["check", "--repair-counts"], environment: environment)
        let both = try await [first, second]
        #expect(both.allSatisfy { $0.status == 0 }, "\(both.map(\.output))")
        #expect(both.filter { $0.output.contains("Repaired: ") }.count == 1, "\(both.map(\.output))")

        // A wrong data folder is an error, never an empty database found consistent.
        let elsewhere = configuration.dataDirectory.appendingPathComponent("typo")
        let wrong = try await VroomXBinary.run(["check"], environment: ["VROOMX_DATA_DIR": elsewhere.path])
        #expect(wrong.status == 2 && wrong.output.contains("could not check: No database at \(elsewhere.path)"), "\(wrong.output)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere.path))
        if backend == .postgres {
            let empty = try await VroomXBinary.run(["check"], environment: ["VROOMX_DATABASE_URL": try await TestBackend.createDatabase()])
            #expect(empty.status == 2 && empty.output.contains("holds no VroomX data"), "\(empty.output)")
            // A database PostgreSQL does not have is named as such at once, not a pool's timeout.
            let url = try #require(configuration.databaseURL)
            var missing = try #require(URLComponents(string: url))
            missing.path = "/vroomx_no_such_database"
            let refused = try await VroomXBinary.run(["check"], environment: ["VROOMX_DATABASE_URL": try #require(missing.string)])
            #expect(refused.status == 2 && refused.output.contains("database \"vroomx_no_such_database\" does not exist (SQLSTATE 3D000)"),
                    "\(refused.output)")
        }

        services = try await ServerServices.make(configuration)
        #expect(try await services.store.integrityProblems() == [])
        #expect(try await services.database.read { try await $0.query(untouched).map { "\(try $0.string("status")) \(try $0.string("day")) \(try $0.int64("n"))" } } == otherBefore, "left as it was")
        let newOrders = try await services.database.read { db in
            try await db.query("SELECT CAST(SUM(n) AS BIGINT) AS n FROM order_status_counts WHERE tenant_id = \(acme) AND status = 'new'").first?.int64("n")
        }
        #expect(newOrders == 12)
        await services.database.close()
    }

    @Test("SIGTERM ends the server within the grace period though an upload still trickles in; realtime sockets close with 1001")
    func shutdownDeadline() async throws {
        let configuration = try await TestBackend.sqlite.freshConfiguration()
        let services = try await ServerServices.make(configuration)
        let (tenant, _) = try await services.store.people.createTenant(name: "Acme Hauling", dispatcherEmail: "boss@acme.example")
        let driver = try await services.store.people.createDriver(tenant: tenant.id, .init(
            email: "driver@acme.example", name: "Dana", payType: .perMile, payRate: 60))
        let token = try await services.signIn(email: driver.email).accessToken
        await services.database.close()

        let (server, port) = try await VroomXBinary.serve(["serve"], environment: [
            "VROOMX_DATA_DIR": configuration.dataDirectory.path, "VROOMX_JWT_SECRET": try #require(configuration.jwtSecret),
            "VROOMX_SHUTDOWN_GRACE_SECONDS": "2", "VROOMX_LOG_LEVEL": "info", "VROOMX_DEV_MAILBOX": "true",
        ])
        let socket = RealtimeTestClient(port: port, token: token, since: 0)
        try await socket.waitForReady()
        // An upload at 1,000 B/s: within the minimum rate, and far from done when the grace period ends.
        let upload = try await RawSocket.connect(port: port)
        try await upload.send(RawHTTP.head("POST", Endpoint.sendCode.path(), headers: ["Content-Type": "application/json"],
                                           contentLength: 1 << 20, keepAlive: true) + Array(#"{"email": "x@acme.example""#.utf8))
        let trickle = Task {
            while !Task.isCancelled {
                try await upload.send([UInt8](repeating: 0x20, count: 100))
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        try await Task.sleep(for: .seconds(1))

        let signalled = ContinuousClock.now
        server.terminate()
        let exited = await server.waitForExit(timeout: .seconds(12))
        let took = ContinuousClock.now - signalled
        trickle.cancel()
        _ = await trickle.result
        upload.close()
        if !exited { await server.kill9() }
        #expect(exited, "still running 12 s after SIGTERM: \(server.text.suffix(2000))")
        #expect(took < .seconds(12))
        #expect(server.exitStatus == 0, "\(server.text.suffix(2000))")
        #expect(try await socket.waitForClose(timeout: .seconds(5)) == RealtimeCloseCode.goingAway.rawValue)
    }

    @Test("at start the server raises its open-files limit to the hard limit and logs it with the realtime socket cap")
    func descriptorLimit() async throws {
        let configuration = try await TestBackend.sqlite.freshConfiguration()
        var limit = rlimit()
        #expect(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        try #require(limit.rlim_max > 256, "the hard limit leaves nothing to raise")
        let port = try ChildProcess.freePort()
        // A shell lowers the soft limit, as a default service manager or login would.
        let server = try ChildProcess("/bin/sh", ["-c", "ulimit -S -n 256 && exec \"$0\" serve --port \(port)", VroomXBinary.path()],
                                      environment: ["VROOMX_DATA_DIR": configuration.dataDirectory.path, "VROOMX_LOG_LEVEL": "info",
                                                    "VROOMX_DEV_MAILBOX": "true"])
        try await server.waitFor("listening on 127.0.0.1:\(port)")
        #expect(server.text.contains("open files limit \(limit.rlim_max)"), "\(server.text)")
        await server.stop()
    }

    @Test("a second server on the same SQLite folder is refused, naming the first; once the first has stopped, one starts")
    func oneServerPerFolder() async throws {
        let configuration = try await TestBackend.sqlite.freshConfiguration()
        let environment = ["VROOMX_DATA_DIR": configuration.dataDirectory.path, "VROOMX_DEV_MAILBOX": "true"]
        let (first, _) = try await VroomXBinary.serve(["serve"], environment: environment)
        let second = try VroomXBinary.start(["serve", "--port", String(try ChildProcess.freePort())], environment: environment)
        #expect(await second.waitForExit(timeout: .seconds(30)))
        #expect(second.exitStatus != 0)
        #expect(second.text.contains("Another vroomx server (process ") && second.text.contains(configuration.dataDirectory.path),
                "\(second.text)")
        await first.stop()
        let (third, _) = try await VroomXBinary.serve(["serve"], environment: environment)
        await third.stop()
    }

    func codeFromLog(_ process: ChildProcess, email: String) async throws -> String {
        try await process.waitFor("sign-in code:")
        let lines = process.text.split(separator: "\n").filter { $0.contains(email) && $0.contains("sign-in code:") }
        guard let line = lines.last, let range = line.range(of: #"code: \d{6}"#, options: .regularExpression) else {
            throw ProcessError("no code in the log: \(process.text)")
        }
        return String(line[range].suffix(6))
    }
}
