import Foundation
import HTTPTypes
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// `GET /metrics`: only with the token set and only to a request bearing
/// it; what a carrier's day does moves the numbers an operator watches.
/// (Metrics are the process's, and tests run side by side: each check is
/// of growth between two scrapes, never of an exact count.)
@Suite("Metrics")
struct MetricsTests {
    static let token = "metrics-token-0123456789abcdef"

    @Test("a driver's requests, batch, positions, upload and a code mailed move the counters; the database's pool is measured",
          arguments: TestBackend.available)
    func carrierDay(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend) { $0.metricsToken = Self.token }
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0]
        let inspection = try await UploadTests.openInspection(server, carrier)
        try await server.run { api in
            for headers in [HTTPFields(), [.authorization: "Bearer wrong-token-0123456789"]] {
                let refused = try await api.client.execute(uri: "/metrics", method: .get, headers: headers)
                #expect(refused.status == .unauthorized)
                #expect(String(buffer: refused.body).contains("\"code\":\"invalid_token\""))
            }
            // The scheme in any case, as HTTP has it.
            #expect(try await api.client.execute(uri: "/metrics", method: .get, headers: [.authorization: "bearer \(Self.token)"]).status == .ok)
            let before = try await Self.scrape(api)
            // Every series is there from the start, at zero if nothing happened yet: Prometheus's increase() sees the first event.
            for series in [#"vroomx_database_unavailable_total{cause="timedOut"}"#, #"vroomx_mail_total{outcome="failed"}"#,
                           #"vroomx_apns_answers_total{outcome="invalid_token"}"#, "vroomx_push_queue_depth", "vroomx_realtime_sockets"] {
                #expect(before[series] != nil, "\(series) is missing")
            }
            let token = carrier.driver.accessToken
            #expect(try await api.call(.trips, token: token).status == 200)
            // A HEAD request (a monitor's) is counted too: its body is never written.
            #expect(try await api.client.execute(uri: "/healthz", method: .head).status == .ok)
            // An address no route serves is one series, whatever was asked for.
            #expect(try await api.client.execute(uri: "/no/such/\(UUID())", method: .get).status == .notFound)
            let order = try await LocationTests.fencedOrder(api, carrier, server)
            _ = order
            let stored = try await LocationTests.record(api, LocationTests.fixes([5_000, 4_000, 3_000], from: server.clock.now.addingTimeInterval(-120)),
                                                        token: token).stored
            #expect(stored == 3)
            let batch = MutationBatch([Mutation(.createExpense(.init(id: ID<Expense>(), tripID: trip.id, category: .fuel, amountCents: 1_999,
                                                                       date: LocalDate(Date()))))])
            #expect(try await api.call(.mutations, json: batch, token: token).status == 200)
            #expect(try await api.call(.mutations, json: batch, token: token).status == 200)  // the same again: replayed
            let photo = MediaSamples.jpeg(size: 20_000)
            #expect(try await api.call(.putInspectionMedia, inspection.id.rawValue, "front", bytes: photo, token: token).status == 200)
            let mailed = server.codeCount(to: carrier.dispatcher.user.email)
            #expect((200...299).contains(try await api.call(.sendCode, json: SendCodeRequest(email: carrier.dispatcher.user.email)).status))
            _ = try await server.code(for: carrier.dispatcher.user.email, after: mailed)
            // The mailbox has the code a moment before the sender counts it as sent.
            let mail = #"vroomx_mail_total{outcome="sent"}"#
            var after = try await Self.scrape(api)
            let deadline = ContinuousClock.now + TestWait.bound(.seconds(5))
            while (after[mail] ?? 0) <= (before[mail] ?? 0), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                after = try await Self.scrape(api)
            }

            func grew(_ series: String, by least: Double = 1) {
                let growth = (after[series] ?? 0) - (before[series] ?? 0)
                #expect(growth >= least, "\(series) grew by \(growth)")
            }
            grew(#"vroomx_http_requests_total{route="/v1/trips",method="GET",status="200"}"#)
            grew(#"vroomx_http_request_duration_seconds_count{route="/v1/trips",method="GET"}"#)
            grew(#"vroomx_http_requests_total{route="/healthz",method="HEAD",status="200"}"#)
            grew(#"vroomx_http_requests_total{route="unmatched",method="GET",status="404"}"#)
            grew("vroomx_location_fixes_total", by: 3)
            grew(#"vroomx_mutations_total{outcome="applied"}"#)
            grew(#"vroomx_mutations_total{outcome="replayed"}"#)
            grew("vroomx_upload_bytes_total", by: Double(photo.count))
            grew(mail)
            grew("vroomx_database_pool_wait_seconds_count{backend=\"\(backend == .postgres ? "postgres" : "sqlite")\"}", by: 5)
            if backend == .sqlite {
                grew("vroomx_sqlite_writes_total", by: 3)
                grew("vroomx_sqlite_commits_total")
            } else {
                #expect(after.keys.contains("vroomx_sqlite_commits_total"), "at zero on PostgreSQL too")
            }
            #expect(after.keys.contains { $0.hasPrefix("vroomx_database_pool_in_use{") })
            #expect(after.keys.contains { $0.hasPrefix("vroomx_http_request_duration_seconds_bucket{") })
        }
    }

    @Test("without the token set there is no /metrics, and a token too short to be a secret is refused at start")
    func offByDefault() async throws {
        let server = try await TestServer.make(.sqlite)
        try await server.run { api in
            let answer = try await api.client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(Self.token)"])
            #expect(answer.status == .notFound)
            #expect(String(buffer: answer.body).contains("VROOMX_METRICS_TOKEN"), "says how to turn them on")
        }
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(["VROOMX_METRICS_TOKEN": "short"]) }
        #expect(try ServerConfiguration.fromEnvironment(["VROOMX_METRICS_TOKEN": Self.token]).metricsToken == Self.token)
    }

    /// Each sample of the text format by its series (name and labels).
    static func scrape(_ api: TestAPI) async throws -> [String: Double] {
        let answer = try await api.client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(token)"])
        #expect(answer.status == .ok)
        #expect(answer.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
        var samples: [String: Double] = [:]
        for line in String(buffer: answer.body).split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}
