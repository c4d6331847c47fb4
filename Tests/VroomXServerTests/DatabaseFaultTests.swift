import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Availability while the database fails: every request is answered, and in
/// time; database failures are 503 with Retry-After (507 when storage is
/// full), never 500; PostgreSQL restarts and outages lose and duplicate
/// nothing. The PostgreSQL faults are real: a cluster of the test's own is
/// restarted and stopped, backends are terminated, rows are locked.
@Suite("Database faults", .serialized)
struct DatabaseFaultTests {
    /// How long a test waits for any answer before counting it unanswered:
    /// far beyond the short database deadlines the tests configure.
    static let answerBound: Duration = .seconds(15)

    @Test("a PostgreSQL restart storm leaves no request unanswered, and every acknowledged write is there exactly once",
          .enabled(if: PostgresCluster.isAvailable), .timeLimit(.minutes(3)))
    func restartStorm() async throws {
        try await withCluster { cluster in
            // Short against the 15 s answer bound. The carrier is set up under a deadline of its own: the tests start
            // together, and the fixture's ~45 calls, 0.4 s alone, took 43 s at the start of a full run.
            let server = try await TestServer.make(.postgres, databaseURL: cluster.url) { configuration in
                configuration.databaseTimeout = .seconds(5)
                // Far beyond the bound on stopping below: a request left hanging would hold the stop for all of it.
                configuration.connectionLimits.shutdownGrace = .seconds(120)
            }
            // Several trips a driver: the writers go round them, as a trip holds a bounded number of expenses.
            let carrier = try await stage("the fixture") {
                try await DatabaseDeadline.allowing(.seconds(60)) {
                    try await CarrierFixture.make(server, name: "Storm", drivers: 2, tripsPerDriver: 4)
                }
            }
            let live = try await LiveServer(server)
            let client = HTTPTestClient(baseURL: live.baseURL)
            let storming = NIOLockedValueBox(true)
            let writers = (0..<6).map { index in
                let driver = index % carrier.drivers.count
                let trips = carrier.trips[driver].map(\.id)
                let token = carrier.drivers[driver].accessToken
                return Task { await Self.keepWriting(client, token: token, trips: trips, while: storming) }
            }
            for mode in ["fast", "immediate", "fast", "immediate", "fast", "immediate"] {
                try await Task.sleep(for: .milliseconds(1200))
                try await cluster.restart(mode: mode)
            }
            try await Task.sleep(for: .seconds(1))
            storming.withLockedValue { $0 = false }
            var log = WriterLog()
            for writer in writers { log.merge(await writer.value) }
            print("restart storm: \(log.summary)")

            #expect(log.unanswered.isEmpty, "unanswered requests: \(log.unanswered)")
            #expect(log.answers.keys.allSatisfy { [200, 503].contains($0) }, "answers by status: \(log.answers)")
            #expect(log.unavailableWithoutRetryAfter == 0)
            // A batch makes about three database calls, each bounded by the 2 s deadline.
            #expect(log.slowest < .seconds(8))
            #expect(log.answers[200, default: 0] > 0 && log.answers[503, default: 0] > 0, "the storm hit the writers: \(log.answers)")

            // A client sends what was not acknowledged again, with the same ids, as the app's outbox does.
            try await stage("sending again") {
                for pending in log.unacknowledged {
                    try await Self.sendUntilApplied(pending.batch, client, token: pending.token)
                }
            }
            let sent = Set((log.acknowledged + log.unacknowledged.map(\.batch)).flatMap(Self.expenseIDs))
            try await stage("reading back") { try await Self.expectStoredOnce(sent, server, carrier) }

            // No request holds the server: it stops at once.
            let stopping = ContinuousClock.now
            await live.stop()
            #expect(ContinuousClock.now - stopping < .seconds(30))
        }
    }

    @Test("PostgreSQL stopped: liveness answers at once, requests fail fast with 503 and Retry-After, service follows the database back",
          .enabled(if: PostgresCluster.isAvailable), .timeLimit(.minutes(2)))
    func stoppedDatabase() async throws {
        try await withCluster { cluster in
            let server = try await TestServer.make(.postgres, databaseURL: cluster.url) { configuration in
                configuration.databaseTimeout = .seconds(5)
            }
            let carrier = try await DatabaseDeadline.allowing(.seconds(60)) {
                try await CarrierFixture.make(server, name: "Outage", drivers: 1, tripsPerDriver: 1)
            }
            let trip = carrier.trips[0][0].id
            let token = carrier.driver.accessToken
            let live = try await LiveServer(server)
            let client = HTTPTestClient(baseURL: live.baseURL)
            #expect(try await client.send(.trips, token: token).status == 200)
            #expect(try await client.send(.ready).status == 200)

            try await cluster.stop()
            var slowestHealth = Duration.zero
            var slowestRequest = Duration.zero
            for _ in 0..<6 {
                let (health, healthTime) = try await timed { try await client.send(.health, timeout: Self.answerBound) }
                #expect(health.status == 200, "\(health.text)")
                slowestHealth = max(slowestHealth, healthTime)
                let (trips, tripsTime) = try await timed { try await client.send(.trips, token: token, timeout: Self.answerBound) }
                expectUnavailable(trips)
                slowestRequest = max(slowestRequest, tripsTime)
                try await Task.sleep(for: .milliseconds(250))
            }
            print("PostgreSQL stopped: slowest /healthz \(slowestHealth), slowest GET /v1/trips \(slowestRequest) (deadline 5 s)")
            #expect(slowestHealth < .seconds(2))
            #expect(slowestRequest < .seconds(2), "fails fast, well before the 5 s deadline")
            let health = try await client.send(.health).decode(HealthResponse.self)
            #expect(health.databaseReachable == false)
            // The whole batch stops, so the client retries all of it.
            let batch = Self.expenseBatch(trip: trip)
            expectUnavailable(try await client.send(.mutations, json: batch, token: token, timeout: Self.answerBound))
            let ready = try await client.send(.ready, timeout: Self.answerBound)
            #expect(ready.status == 503)
            let readiness = try ready.decode(ReadinessResponse.self)
            #expect(readiness.status == "not_ready")
            #expect(readiness.checks.first { $0.name == "database" }?.ok == false)

            try await cluster.start()
            let restarted = ContinuousClock.now
            var recovery: Duration?
            while ContinuousClock.now - restarted < .seconds(30) {
                if (try? await client.send(.trips, token: token, timeout: Self.answerBound))?.status == 200 {
                    recovery = ContinuousClock.now - restarted
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            print("PostgreSQL back: requests succeed again after \(recovery.map { "\($0)" } ?? "more than 30 s")")
            #expect(try #require(recovery) <= .seconds(5))
            try await Self.sendUntilApplied(batch, client, token: token)
            #expect(try await client.send(.ready).status == 200)
            #expect(try await client.send(.health).decode(HealthResponse.self).databaseReachable == true)
            await live.stop()
        }
    }

    @Test("PostgreSQL: a terminated connection answers 503; a write stuck on a lock and a request waiting for a pooled connection answer 503 at the deadline; retried, each mutation applies once",
          arguments: TestBackend.postgresOnly)
    func stuckWrites(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend) { configuration in
            configuration.databaseTimeout = .seconds(2)
            configuration.databasePoolSize = 1
        }
        let carrier = try await CarrierFixture.make(server, name: "Stuck", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0].id
        let token = carrier.driver.accessToken
        let live = try await LiveServer(server)
        let client = HTTPTestClient(baseURL: live.baseURL)
        #expect(try await client.send(.trips, token: token).status == 200) // the session is now cached
        let admin = try await PostgresDatabase.open(url: try #require(server.services.configuration.databaseURL), maxConnections: 2,
                                                    options: .init(timeout: .seconds(60)), logger: Logger(label: "test-admin"))
        // Every write of a carrier ends by counting its changes on the carrier's row: holding that row's lock stalls them all.
        let locked = NIOLockedValueBox(false)
        let release = NIOLockedValueBox(false)
        let holder = Task {
            try await admin.write { db in
                try await db.execute("SELECT id FROM tenants WHERE id = \(carrier.tenant.id) FOR UPDATE")
                locked.withLockedValue { $0 = true }
                while !release.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
            }
        }
        while !locked.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }

        // The database ends the connection of a waiting write (SQLSTATE 57P01).
        let terminated = Self.expenseBatch(trip: trip)
        let terminatedAnswer = Task { try await timed { try await client.send(.mutations, json: terminated, token: token, timeout: Self.answerBound) } }
        try await Self.waitForLockWaiters(1, admin)
        _ = try await admin.read { try await $0.query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
            """) }
        let (terminatedResponse, terminatedTime) = try await terminatedAnswer.value
        expectUnavailable(terminatedResponse)
        #expect(terminatedTime < .seconds(2), "answered when the connection ended, not at the deadline")

        // A write waits for the lock past its deadline, holding the only pooled connection meanwhile.
        let stuck = Self.expenseBatch(trip: trip)
        let stuckAnswer = Task { try await timed { try await client.send(.mutations, json: stuck, token: token, timeout: Self.answerBound) } }
        try await Self.waitForLockWaiters(1, admin)
        let (read, readTime) = try await timed { try await client.send(.trips, token: token, timeout: Self.answerBound) }
        expectUnavailable(read)
        #expect(readTime < .seconds(6), "a request waiting for a pooled connection gives up at the 2 s deadline")
        let (stuckResponse, stuckTime) = try await stuckAnswer.value
        expectUnavailable(stuckResponse)
        #expect(stuckTime < .seconds(6), "a write stuck on a lock gives up at the 2 s deadline")

        release.withLockedValue { $0 = true }
        try await holder.value
        // Neither applied anything: sent again with the same ids, each applies once.
        for batch in [terminated, stuck] { try await Self.sendUntilApplied(batch, client, token: token) }
        let replay = try await client.send(.mutations, json: stuck, token: token).decode(MutationBatchResult.self)
        #expect(replay.results.allSatisfy { $0.outcome == .applied && $0.replayed })
        try await Self.expectStoredOnce(Set([terminated, stuck].flatMap(Self.expenseIDs)), server, carrier)
        await live.stop()
        await admin.close()
    }

    @Test("SQLite: a write lock held by another process or a stalled write answers 503; a full database answers 507 insufficient_storage; a batch stops as a whole")
    func sqliteBusyAndFull() async throws {
        let server = try await TestServer.make(.sqlite) { configuration in
            configuration.databaseTimeout = .seconds(1)
        }
        let carrier = try await CarrierFixture.make(server, name: "Embedded", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0].id
        let token = carrier.driver.accessToken
        let sent = try await server.run { api in
            // Another process (a second `vroomx` command) holds the write lock of the file.
            let other = try SQLiteDatabase(path: server.services.configuration.sqlitePath)
            let locked = NIOLockedValueBox(false)
            let release = NIOLockedValueBox(false)
            let holder = Task {
                try await other.write { _ in
                    locked.withLockedValue { $0 = true }
                    while !release.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
                }
            }
            while !locked.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
            let busy = Self.expenseBatch(trip: trip)
            let (answer, elapsed) = try await timed { try await api.call(.mutations, json: busy, token: token) }
            expectUnavailable(answer)
            #expect(elapsed < .seconds(4), "gives up at the 1 s deadline")
            release.withLockedValue { $0 = true }
            try await holder.value
            await other.close()

            // A write of this process stalls (a disk that stopped answering): the writes queued behind it give up at the deadline.
            let stalled = NIOLockedValueBox(false)
            let stall = Task {
                try await server.services.database.write { _ in
                    stalled.withLockedValue { $0 = true }
                    try await Task.sleep(for: .seconds(4))
                }
            }
            while !stalled.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
            let queued = Self.expenseBatch(trip: trip)
            let (queuedAnswer, queuedTime) = try await timed { try await api.call(.mutations, json: queued, token: token) }
            expectUnavailable(queuedAnswer)
            #expect(queuedTime < .seconds(3), "gives up at the 1 s deadline")
            try await stall.value

            // The database may not grow: SQLITE_FULL, as on a full disk.
            try await server.services.database.write { try await $0.execute("PRAGMA max_page_count = 1") }
            let full = Self.expenseBatch(trip: trip, count: 20, notes: String(repeating: "receipt ", count: 250))
            let refused = try await api.call(.mutations, json: full, token: token)
            #expect(refused.status == 507, "\(refused.text)")
            #expect(refused.errorCode == "insufficient_storage")
            #expect(refused.headers[.retryAfter].flatMap(Int.init).map { $0 > 0 } == true)
            #expect(refused.error?.retryAfter == refused.headers[.retryAfter].flatMap(Int.init))
            try await server.services.database.write { try await $0.execute("PRAGMA max_page_count = 1073741823") }

            // Sent again with the same ids, both apply (what the full database took is replayed, not repeated).
            for batch in [busy, queued, full] {
                let applied = try await api.call(.mutations, json: batch, token: token)
                #expect(applied.status == 200)
                #expect(try applied.decode(MutationBatchResult.self).results.allSatisfy { $0.outcome == .applied })
            }
            return Set([busy, queued, full].flatMap(Self.expenseIDs))
        }
        try await Self.expectStoredOnce(sent, server, carrier)
    }

    @Test("readiness: ready when the database answers, the folders take writes and disk space is left; else 503 naming what is wrong",
          arguments: TestBackend.available)
    func readiness(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        try await server.run { api in
            let answer = try await api.call(.ready)
            #expect(answer.status == 200, "\(answer.text)")
            let ready = try answer.decode(ReadinessResponse.self)
            #expect(ready.status == "ready")
            #expect(Set(ready.checks.map(\.name)).isSuperset(of: ["database", "media_folder", "free_disk"]))
            #expect(ready.checks.allSatisfy { $0.ok }, "\(ready.checks)")
            #expect(ready.checks.contains { $0.name == "data_folder" } == (backend == .sqlite))
        }

        let cramped = try await TestServer.make(backend) { $0.minFreeDiskBytes = 1 << 60 }
        try await cramped.run { api in
            let answer = try await api.call(.ready)
            #expect(answer.status == 503)
            let checks = try answer.decode(ReadinessResponse.self).checks
            #expect(checks.filter { !$0.ok }.map(\.name) == ["free_disk"], "\(checks)")
        }

        let unwritable = try await TestServer.make(backend)
        let media = unwritable.services.configuration.resolvedMediaDirectory
        try FileManager.default.removeItem(at: media)
        try Data("not a folder".utf8).write(to: media)
        try await unwritable.run { api in
            let answer = try await api.call(.ready)
            #expect(answer.status == 503)
            let checks = try answer.decode(ReadinessResponse.self).checks
            #expect(checks.filter { !$0.ok }.map(\.name) == ["media_folder"], "\(checks)")
            // Liveness does not look at any of it.
            #expect(try await api.call(.health).status == 200)
        }
    }

    @Test("the database deadline, the free-disk minimum, SQLite's memory map and their checks come from the environment")
    func configuration() throws {
        let defaults = try ServerConfiguration.fromEnvironment([:])
        #expect(defaults.databaseTimeout == .seconds(10))
        #expect(defaults.minFreeDiskBytes == 1024 << 20)
        let set = try ServerConfiguration.fromEnvironment(["VROOMX_DATABASE_TIMEOUT_SECONDS": "2.5", "VROOMX_MIN_FREE_DISK_MB": "0"])
        #expect(set.databaseTimeout == .milliseconds(2500))
        #expect(set.minFreeDiskBytes == 0)
        #expect(defaults.sqliteMemoryMapBytes == 256 << 20)
        #expect(try ServerConfiguration.fromEnvironment(["VROOMX_SQLITE_MMAP_MB": "0"]).sqliteMemoryMapBytes == 0)
        for (name, value) in [("VROOMX_DATABASE_TIMEOUT_SECONDS", "0"), ("VROOMX_DATABASE_TIMEOUT_SECONDS", "ten"),
                              ("VROOMX_DATABASE_TIMEOUT_SECONDS", "nan"), ("VROOMX_MIN_FREE_DISK_MB", "-1"),
                              ("VROOMX_SQLITE_MMAP_MB", "-1"), ("VROOMX_SQLITE_MMAP_MB", "99999999999999999999")] {
            #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment([name: value]) }
        }
    }
}

// MARK: - Helpers

extension DatabaseFaultTests {
    /// What writers saw during a storm.
    struct WriterLog: Sendable {
        var answers: [Int: Int] = [:]
        var unanswered: [String] = []
        var unavailableWithoutRetryAfter = 0
        var slowest = Duration.zero
        var acknowledged: [MutationBatch] = []
        var unacknowledged: [PendingBatch] = []

        mutating func merge(_ other: WriterLog) {
            answers.merge(other.answers, uniquingKeysWith: +)
            unanswered += other.unanswered
            unavailableWithoutRetryAfter += other.unavailableWithoutRetryAfter
            slowest = max(slowest, other.slowest)
            acknowledged += other.acknowledged
            unacknowledged += other.unacknowledged
        }

        var summary: String {
            "\(answers.values.reduce(0, +) + unanswered.count) requests, answers by status \(answers.sorted { $0.key < $1.key }), "
                + "unanswered \(unanswered.count), slowest answer \(slowest)"
        }
    }

    struct PendingBatch: Sendable {
        let batch: MutationBatch
        let token: String
    }

    /// Sends batches of new expenses until told to stop, as a driver's app
    /// drains its outbox; a batch that was not acknowledged is kept to be
    /// sent again later.
    static func keepWriting(_ client: HTTPTestClient, token: String, trips: [ID<Trip>], while running: NIOLockedValueBox<Bool>) async -> WriterLog {
        var log = WriterLog()
        var round = 0
        while running.withLockedValue({ $0 }) {
            let batch = expenseBatch(trip: trips[round % trips.count], count: 2)
            round += 1
            let started = ContinuousClock.now
            do {
                let response = try await client.send(.mutations, json: batch, token: token, timeout: answerBound)
                log.slowest = max(log.slowest, ContinuousClock.now - started)
                log.answers[response.status, default: 0] += 1
                if response.status == 503, response.headers[.retryAfter] == nil { log.unavailableWithoutRetryAfter += 1 }
                let applied = (try? response.decode(MutationBatchResult.self))?.results.allSatisfy { $0.outcome == .applied } == true
                if response.status == 200 && applied {
                    log.acknowledged.append(batch)
                } else {
                    log.unacknowledged.append(PendingBatch(batch: batch, token: token))
                }
                if response.status != 200 { try? await Task.sleep(for: .milliseconds(100)) }
            } catch {
                log.unanswered.append("\(error) after \(ContinuousClock.now - started)")
                log.unacknowledged.append(PendingBatch(batch: batch, token: token))
            }
        }
        return log
    }

    static func expenseBatch(trip: ID<Trip>, count: Int = 1, notes: String = "fault test") -> MutationBatch {
        MutationBatch((0..<count).map { _ in
            Mutation(.createExpense(CreateExpenseRequest(id: ID(), tripID: trip, category: .fuel, amountCents: 1_000,
                                                         date: LocalDate(Date()), notes: notes)))
        })
    }

    static func expenseIDs(_ batch: MutationBatch) -> [ID<Expense>] {
        batch.mutations.compactMap(MutationTests.expenseID)
    }

    /// Sends a batch until every mutation in it is applied (a 503 means: try again).
    static func sendUntilApplied(_ batch: MutationBatch, _ client: HTTPTestClient, token: String) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let response = try await client.send(.mutations, json: batch, token: token, timeout: answerBound)
            if response.status == 200 {
                let results = try response.decode(MutationBatchResult.self).results
                #expect(results.allSatisfy { $0.outcome == .applied }, "\(response.text)")
                return
            }
            #expect(response.status == 503, "\(response.text)")
            guard ContinuousClock.now < deadline else { throw TestSetupError("the batch was never applied: \(response.text)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Every expense is stored once, and the carrier's feed announced it once.
    static func expectStoredOnce(_ expected: Set<ID<Expense>>, _ server: TestServer, _ carrier: CarrierFixture) async throws {
        var stored: [ID<Expense>] = []
        var announced: [String: Int] = [:]
        try await retryingWhileUnavailable {
            stored = []
            for trip in carrier.trips.flatMap({ $0 }) {
                stored += try await server.store.expenses.list(trip: trip.id, carrier.scope).map(\.id)
            }
            announced = [:]
            var cursor: Int64 = 0
            while true {
                let page = try await server.store.feed(since: cursor, limit: 1000, carrier.scope)
                for change in page.changes where change.entity == .expense { announced[change.id, default: 0] += 1 }
                cursor = page.cursor
                if !page.hasMore { break }
            }
        }
        let fixture = Set(carrier.expenses.values.flatMap { $0.map(\.id) })
        let written = stored.filter { !fixture.contains($0) }
        #expect(written.count == Set(written).count)
        #expect(Set(written) == expected, "missing \(expected.subtracting(written).count), unexpected \(Set(written).subtracting(expected).count)")
        #expect(expected.allSatisfy { announced[$0.rawValue] == 1 }, "each new expense appears once in the feed")
    }

    /// Reads through the test's own pool, which lived through the same faults.
    static func retryingWhileUnavailable(_ body: () async throws -> Void) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            do {
                return try await body()
            } catch is DatabaseUnavailable where ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    static func waitForLockWaiters(_ count: Int, _ admin: PostgresDatabase) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let waiting = try await admin.read { try await $0.first("""
                SELECT count(*) AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                """) }
            if try waiting?.int("waiting") ?? 0 >= count { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestSetupError("no request waited on the lock")
    }

    func withCluster(_ body: (PostgresCluster) async throws -> Void) async throws {
        let cluster = try await PostgresCluster.start()
        do {
            try await body(cluster)
        } catch {
            await cluster.destroy()
            throw error
        }
        await cluster.destroy()
    }
}

/// A 503 a client knows to retry: `unavailable`, with `Retry-After` in the
/// header and the body.
func expectUnavailable(_ response: APIResponse, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(response.status == 503, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.errorCode == "unavailable", sourceLocation: sourceLocation)
    let retryAfter = response.headers[.retryAfter].flatMap(Int.init)
    #expect(retryAfter.map { $0 > 0 } == true, "Retry-After: \(String(describing: retryAfter))", sourceLocation: sourceLocation)
    #expect(response.error?.retryAfter == retryAfter, sourceLocation: sourceLocation)
}

/// Runs a step of a test, naming it in the error it throws.
func stage<T>(_ name: String, _ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch {
        throw TestSetupError("\(name): \(error)")
    }
}

func timed<T>(_ body: () async throws -> T) async throws -> (T, Duration) {
    let start = ContinuousClock.now
    let value = try await body()
    return (value, ContinuousClock.now - start)
}
