import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The oldest driver app a server serves (`VROOMX_MIN_APP_VERSION`).
@Suite("API: apps too old for the server")
struct AppVersionTests {
    @Test("versions compare number by number, a missing number as 0; anything but dotted numbers is no version")
    func versions() throws {
        let parsed = ["1.4", "1.4.0", "1.10", "1.9.9", "2", "0.0.1", "1.4.0.1"].compactMap(AppVersion.init)
        #expect(parsed.count == 7)
        #expect(AppVersion("1.4") == AppVersion("1.4.0"))
        #expect(try #require(AppVersion("1.10")) > #require(AppVersion("1.9.9")))
        #expect(try #require(AppVersion("1.4.0.1")) > #require(AppVersion("1.4")))
        #expect(try #require(AppVersion("2")) > #require(AppVersion("1.99999")))
        for bad in ["", "1.", ".1", "1..2", "v1.2", "1.2-beta", "1.2.3.4.5", "1234567", "١.٢", " ", "1.-2", "+1"] {
            #expect(AppVersion(bad) == nil, "\(bad.debugDescription)")
        }
        #expect(try ServerConfiguration.fromEnvironment([:]).minimumAppVersion == nil)
        #expect(try ServerConfiguration.fromEnvironment(["VROOMX_MIN_APP_VERSION": "2.1"]).minimumAppVersion == AppVersion("2.1"))
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(["VROOMX_MIN_APP_VERSION": "latest"]) }
    }

    @Test("an app older than the minimum is answered 426 app_update_required with the version to reach; the same or newer, none stated, the console and health are served")
    func refusesOldApps() async throws {
        let server = try await TestServer.make(.sqlite) { $0.minimumAppVersion = AppVersion("2.0") }
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let live = try await LiveServer(server)
        defer { Task { await live.stop() } }
        let token = carrier.driver.accessToken
        func trips(_ version: String?) async throws -> RawHTTP.Answer {
            var headers = ["Authorization": "Bearer \(token)"]
            if let version { headers[AppVersion.header] = version }
            return try await RawHTTP.request(port: live.port, "GET", "/v1/trips", headers: headers)
        }
        let old = try await trips("1.9.9")
        #expect(old.status == 426 && old.text.contains("\"code\":\"app_update_required\""), "\(old.status) \(old.text)")
        #expect(old.headers[AppVersion.minimumHeader.lowercased()] == "2.0")
        #expect(old.text.contains("update to 2.0 or later"))
        // Sign-in too: the app is told before the driver types a code.
        let signIn = try await RawHTTP.request(port: live.port, "POST", "/v1/auth/otp", headers: [AppVersion.header: "1.0", "Content-Type": "application/json"],
                                               body: Array(#"{"email":"nobody@example.com"}"#.utf8))
        #expect(signIn.status == 426)
        for fine in ["2.0", "2.0.0", "2.0.1", "10", nil] {
            #expect(try await trips(fine).status == 200, "\(fine ?? "no version")")
        }
        // The realtime socket's upgrade too: refused with the same answer, upgraded for a current app.
        func upgrade(_ version: String) async throws -> String {
            let socket = try await RawSocket.connect(port: live.port)
            defer { socket.close() }
            try await socket.send(RawHTTP.head("GET", "/v1/realtime?since=0", headers: [
                "Authorization": "Bearer \(token)", "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", AppVersion.header: version,
            ], contentLength: 0))
            return String(decoding: try await socket.receive(timeout: .seconds(10)), as: UTF8.self)
        }
        let oldSocket = try await upgrade("1.9")
        #expect(oldSocket.hasPrefix("HTTP/1.1 426") && oldSocket.contains("app_update_required"), "\(oldSocket)")
        #expect(oldSocket.lowercased().contains("\(AppVersion.minimumHeader.lowercased()): 2.0"), "\(oldSocket)")
        let current = try await upgrade("2.0")
        #expect(current.hasPrefix("HTTP/1.1 101"), "\(current)")
        let garbled = try await trips("two")
        #expect(garbled.status == 400 && garbled.text.contains(AppVersion.header), "\(garbled.text)")
        #expect(try await RawHTTP.request(port: live.port, "GET", "/healthz", headers: [AppVersion.header: "0.1"]).status == 200)
        #expect(try await RawHTTP.request(port: live.port, "GET", "/sign-in", headers: [AppVersion.header: "0.1"]).status == 200)
        // The API document names the header and the answer on every /v1/ operation.
        let document = try await RawHTTP.request(port: live.port, "GET", "/openapi.json")
        let spec = try #require(try JSONSerialization.jsonObject(with: Data(document.body)) as? [String: Any])
        let paths = try #require(spec["paths"] as? [String: [String: Any]])
        let listTrips = try #require(paths["/v1/trips"]?["get"] as? [String: Any])
        let responses = try #require(listTrips["responses"] as? [String: Any])
        #expect((responses["426"] as? [String: String])?["$ref"] == "#/components/responses/AppUpdateRequired")
        let names = (listTrips["parameters"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(names.contains(AppVersion.header))
    }
}
