import Crypto
import Foundation
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// The deployment at scale, proven as a whole: `scripts/cluster` starts
/// PostgreSQL, an S3-compatible store, two instances and nginx; every client
/// below talks to nginx only.
@Suite("Cluster: two instances behind nginx")
struct ClusterTests {
    @Test("through nginx: sign-in, DriverKit sync, realtime across instances, an upload cut on one instance and finished on the other, and an instance SIGKILLed mid-traffic with nothing lost or duplicated")
    func clusterWorksAsAWhole() async throws {
        guard Cluster.isAvailable else { return }
        let cluster = try await Cluster.start()
        do {
            try await exercise(cluster)
        } catch {
            await cluster.stop()
            throw error
        }
        await cluster.stop()
    }

    private func exercise(_ cluster: Cluster) async throws {
        let api = HTTPTestClient(baseURL: cluster.baseURL)
        // Sign-in: the code is sent by one instance and checked by whichever nginx picks.
        let dispatch = try await signIn(DemoData.dispatcherEmail, cluster, api)
        let dispatcher = APISession(client: api, accessToken: dispatch.accessToken, refreshToken: dispatch.refreshToken)
        let drivers = try await dispatcher.list(.dispatchDrivers, Driver.self)
        let alex = try #require(drivers.first { $0.email == DemoData.driverEmails[0] })

        // DriverKit (the terminal client) signs in and syncs through nginx.
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cluster-driver-\(UUID().uuidString.prefix(6))")
        defer { try? FileManager.default.removeItem(at: home) }
        let device = DriverCommand(home: home, server: cluster.baseURL)
        let email = DemoData.driverEmails[0]
        let before = cluster.codes(for: email).count
        #expect(try await device.run(["login", "--email", email]).status == 0)
        let login = try await device.run(["login", "--email", email, "--code", try await cluster.code(for: email, after: before), "--pin", "2468"])
        #expect(login.status == 0, "\(login.output)")
        let synced = try await device.run(["sync"])
        #expect(synced.status == 0, "\(synced.output)")
        let trips = try await device.run(["trips"])
        #expect(trips.output.contains("T-1002"), "\(trips.output)")
        let driverToken = try DriverDevice.accessToken(home: home)

        print("cluster: signed in and synced through nginx")
        try await consoleSignIn(cluster)
        print("cluster: a dispatcher signed in to the console through nginx")
        try await realtimeCrossesInstances(cluster, dispatcher: dispatcher, token: dispatch.accessToken, driver: alex.id)
        print("cluster: realtime delivered writes made through the other instance")
        try await uploadResumesOnTheOtherInstance(cluster, dispatcher: dispatcher, driverToken: driverToken)
        print("cluster: the upload cut on one instance finished on the other")
        try await survivesAKilledInstance(cluster, dispatcher: dispatcher, token: dispatch.accessToken, device: device)
        print("cluster: nothing lost or duplicated after a SIGKILL")
    }

    // MARK: The console

    /// The browser's sign-in through nginx: the forms' same-origin check
    /// sees the host and port the browser used (nginx forwards them).
    private func consoleSignIn(_ cluster: Cluster) async throws {
        let email = "office@console-carrier.example"
        let created = try await VroomXBinary.run(["tenant", "create", "--name", "Console Carrier", "--dispatcher-email", email],
                                                 environment: ["VROOMX_DATABASE_URL": cluster.databaseURL, "VROOMX_DEV_MAILBOX": "true"])
        #expect(created.status == 0, "\(created.output)")
        // As a browser sends them: Host with the port, and Origin on the forms.
        let host = "127.0.0.1:\(cluster.port)"
        let page = try await RawHTTP.request(port: cluster.port, "GET", "/sign-in", headers: ["Host": host])
        let cookie = try #require(page.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let token = try #require(cookie.split(separator: "=", maxSplits: 1).last.map(String.init))
        let form = ["Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie, "Origin": cluster.baseURL, "Host": host]
        let encoded = email.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? email
        let before = cluster.codes(for: email).count
        let asked = try await RawHTTP.request(port: cluster.port, "POST", "/sign-in", headers: form,
                                              body: Array("email=\(encoded)&_signin=\(token)".utf8))
        #expect(asked.status == 200 && asked.text.contains("code is on its way"), "\(asked.status) \(asked.text.prefix(600))")
        let code = try await cluster.code(for: email, after: before)
        let signedIn = try await RawHTTP.request(port: cluster.port, "POST", "/sign-in/code", headers: form,
                                                 body: Array("email=\(encoded)&code=\(code)&_signin=\(token)".utf8))
        #expect(signedIn.status == 303, "\(signedIn.status) \(signedIn.text.prefix(600))")
        let session = try #require(signedIn.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let board = try await RawHTTP.request(port: cluster.port, "GET", "/board", headers: ["Cookie": session, "Host": host])
        #expect(board.status == 200 && board.text.contains("Console Carrier"), "\(board.status)")
    }

    // MARK: Realtime

    /// A dispatcher's socket sits on one instance; messages written through
    /// nginx land on both; every one reaches the socket.
    private func realtimeCrossesInstances(_ cluster: Cluster, dispatcher: APISession, token: String, driver: ID<Driver>) async throws {
        let socket = RealtimeTestClient(port: cluster.port, token: token, since: 0)
        try await socket.waitForReady()
        var sent: [String] = []
        for index in 0..<4 {
            let answer = try await dispatcher.call(.dispatchSendMessage, json: SendMessageRequest(
                driverID: driver, type: .dispatchMessage, title: "Across instances \(index)", body: ""))
            #expect(answer.status == 201, "\(answer.text)")
            sent.append(try answer.decode(DriverNotification.self).id.rawValue)
        }
        let expected = Set(sent)
        try await socket.waitUntil("the four messages") { messages in
            expected.isSubset(of: Set(messages.flatMap { $0.changes ?? [] }.filter { $0.entity == .notification }.map(\.id)))
        }
        await socket.disconnect()
        // nginx logs a socket when it closes; which instance held it, and which took the writes?
        var socketPort: Int?
        for _ in 0..<200 {
            socketPort = cluster.lastServed("GET /v1/realtime")?.instancePort
            if socketPort != nil { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let writers = Set(cluster.served().filter { $0.request.hasPrefix("POST /v1/dispatch/messages") }.compactMap(\.instancePort))
        #expect(writers == Set(cluster.instancePorts), "writes went to \(writers)")
        #expect(socketPort != nil && writers.contains { $0 != socketPort }, "socket on \(String(describing: socketPort)), writes on \(writers)")
    }

    // MARK: Uploads

    /// A 30 MB walkthrough video: the PATCH is cut mid-way on one instance,
    /// the other reports the offset and takes the rest; the stored file's
    /// SHA-256 is the original's.
    private func uploadResumesOnTheOtherInstance(_ cluster: Cluster, dispatcher: APISession, driverToken: String) async throws {
        let orders = try await dispatcher.list(.dispatchOrders, Order.self)
        let order = try #require(orders.first { $0.number == "O-5004" && $0.status == .assigned })
        let inspection = ID<Inspection>()
        let api = HTTPTestClient(baseURL: cluster.baseURL)
        let opened = try await api.send(.saveInspection, inspection.rawValue, json: SaveInspectionRequest(orderID: order.id, kind: .pickup),
                                        token: driverToken)
        #expect([200, 201].contains(opened.status), "\(opened.text)")

        let file = MediaSamples.mp4(size: 30 << 20)
        let tus = ["Tus-Resumable": Tus.version, "Authorization": "Bearer \(driverToken)"]
        let created = try await RawHTTP.request(port: cluster.port, "POST", "/v1/uploads", headers: tus.merging([
            "Upload-Length": String(file.count), "Upload-Metadata": MediaSamples.metadata(inspection, .walkthrough, filename: "walk.mp4"),
        ]) { $1 })
        #expect(created.status == 201, "\(created.text)")
        let location = try #require(created.headers["location"])
        let path = location.hasPrefix("http") ? String(location[location.range(of: "/v1/")!.lowerBound...]) : location

        // The phone loses signal 13 MB in.
        let cut = try RawSocket(port: cluster.port)
        try await cut.send(RawHTTP.head("PATCH", path, headers: tus.merging([
            "Upload-Offset": "0", "Content-Type": Tus.patchContentType,
        ]) { $1 }, contentLength: file.count) + Array(file[0..<(13 << 20)]))
        try await Task.sleep(for: .milliseconds(500))
        cut.close()
        var cutPort: Int?
        for _ in 0..<500 {
            cutPort = cluster.lastServed("PATCH /v1/uploads/")?.instancePort
            if cutPort != nil { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let cutOn = try #require(cutPort)

        // HEAD until the offset settles, then send the rest so that nginx's round-robin gives it to the other instance.
        var offset = -1
        var finished = false
        // nginx logs a request just after answering it: wait for the line of the request just made.
        func servedAfter(_ prefix: String, count before: Int) async throws -> Cluster.Served? {
            for _ in 0..<200 {
                let lines = cluster.served().filter { $0.request.hasPrefix(prefix) }
                if lines.count > before { return lines.last }
                try await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }
        for _ in 0..<200 where !finished {
            let heads = cluster.served().filter { $0.request.hasPrefix("HEAD /v1/uploads/") }.count
            let head = try await RawHTTP.request(port: cluster.port, "HEAD", path, headers: tus)
            let reported = Int(head.headers["upload-offset"] ?? "") ?? -1
            let headServer = try await servedAfter("HEAD /v1/uploads/", count: heads)?.instancePort
            guard reported > 0, reported == offset, headServer == cutOn else {
                offset = reported
                try await Task.sleep(for: .milliseconds(100))
                continue
            }
            // The HEAD just now went to the instance that was cut: the next request goes to the other one.
            let patches = cluster.served().filter { $0.request.hasPrefix("PATCH /v1/uploads/") }.count
            let rest = try await RawHTTP.request(port: cluster.port, "PATCH", path, headers: tus.merging([
                "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
            ]) { $1 }, body: Array(file[offset...]))
            if rest.status == 204 {
                finished = true
                #expect(try await servedAfter("PATCH /v1/uploads/", count: patches)?.instancePort != cutOn, "the rest went to the instance that was cut")
            } else {
                #expect([409, 423].contains(rest.status), "\(rest.status) \(rest.text)")
                offset = -1
            }
        }
        #expect(finished, "the upload never finished; last offset \(offset)")
        #expect(offset > 0 && offset < file.count, "resumed at \(offset)")

        let stored = try await api.send(.inspection, inspection.rawValue, token: driverToken).decode(Inspection.self)
        let video = try #require(stored.media.first { $0.slot == .walkthrough })
        let digest = SHA256.hash(data: file).map { String(format: "%02x", $0) }.joined()
        #expect(video.sha256 == digest && video.sizeBytes == Int64(file.count))
        let download = try await RawHTTP.request(port: cluster.port, "GET", "/v1/inspections/\(inspection)/media/walkthrough",
                                                 headers: ["Authorization": "Bearer \(driverToken)"])
        #expect(download.status == 200)
        #expect(SHA256.hash(data: download.body).map { String(format: "%02x", $0) }.joined() == digest)
    }

    // MARK: An instance dies

    /// Dispatch creates orders and the driver records expenses while
    /// instance 1 is killed; clients retry (the same idempotency key, the
    /// same queued mutation) through nginx, which sends them to the survivor.
    private func survivesAKilledInstance(_ cluster: Cluster, dispatcher: APISession, token dispatchToken: String,
                                         device: DriverCommand) async throws {
        let api = dispatcher.client
        let orders = 30
        let expenses = 10
        async let created: [Int] = {
            var attempts: [Int] = []
            for index in 0..<orders {
                if index == 10 { cluster.kill9(instance: 0) }
                let key = UUID().uuidString.lowercased()
                var tries = 0
                while true {
                    tries += 1
                    let answer = try? await api.send(.dispatchCreateOrder, json: CreateOrderRequest(
                        number: "O-K\(index)", vehicle: Vehicle(make: "Kia"), pickup: Stop(address: "Savannah, GA"),
                        delivery: Stop(address: "Macon, GA"), revenueCents: 10_000 + index), token: dispatchToken,
                        headers: ["Idempotency-Key": key], timeout: .seconds(10))
                    if let answer, answer.status == 201 || answer.status == 200 { break }
                    if tries > 100 { throw ProcessError("order \(index) never went in: \(answer?.status ?? 0) \(answer?.text ?? "")") }
                    try await Task.sleep(for: .milliseconds(100))
                }
                attempts.append(tries)
            }
            return attempts
        }()
        async let recorded: [Int32] = {
            var statuses: [Int32] = []
            for index in 0..<expenses {
                let added = try await device.run(["expense", "add", "--trip", "T-1002", "--category", "tolls",
                                                  "--amount", "1.\(10 + index)", "--note", "cluster-\(index)"])
                statuses.append(added.status)
                _ = try await device.run(["sync"])
            }
            return statuses
        }()
        let (attempts, statuses) = try await (created, recorded)
        #expect(statuses.allSatisfy { $0 == 0 || $0 == 75 }, "expense add exited \(statuses)")
        print("cluster: orders needing a retry after the kill: \(attempts.filter { $0 > 1 }.count) of \(orders)")

        // The driver's queue drains through the survivor.
        var drained = false
        for _ in 0..<30 {
            if try await device.run(["sync"]).status == 0 { drained = true; break }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(drained, "the driver's changes never all went in")

        // Exactly once each.
        let numbers = try await dispatcher.list(.dispatchOrders, Order.self).map(\.number).filter { $0.hasPrefix("O-K") }
        #expect(numbers.count == orders && Set(numbers).count == orders, "orders: \(numbers.sorted())")
        let trip = try #require(try await dispatcher.list(.dispatchTrips, Trip.self).first { $0.number == "T-1002" })
        let notes = try await dispatcher.list(.dispatchTripExpenses, Expense.self, trip.id.rawValue).map(\.notes)
            .filter { $0.hasPrefix("cluster-") }
        #expect(notes.count == expenses && Set(notes).count == expenses, "expenses: \(notes.sorted())")
        // The survivor answers everything; the dead instance served nothing after the kill.
        #expect(try await api.send(.health).status == 200)
        let survivor = cluster.instancePorts[1]
        let afterKill = cluster.served().suffix(20)
        #expect(afterKill.allSatisfy { $0.instancePort == survivor || $0.instancePort == nil || $0.status >= 500 })
    }

    private func signIn(_ email: String, _ cluster: Cluster, _ api: HTTPTestClient) async throws -> AuthSession {
        let before = cluster.codes(for: email).count
        let sent = try await api.send(.sendCode, json: SendCodeRequest(email: email))
        #expect(sent.status == 202, "\(sent.text)")
        let code = try await cluster.code(for: email, after: before)
        let answer = try await api.send(.verifyCode, json: VerifyCodeRequest(email: email, code: code))
        guard answer.status == 200 else { throw ProcessError("sign-in of \(email): \(answer.status) \(answer.text)") }
        return try answer.decode(AuthSession.self)
    }
}

/// The terminal driver client on one device folder.
struct DriverCommand {
    let home: URL
    let server: String

    func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await VroomXBinary.run(arguments, binary: "vroomx-driver", environment: [
            "VROOMX_SERVER": server, "VROOMX_DRIVER_HOME": home.path, "NO_COLOR": "1",
        ], timeout: .seconds(120))
    }
}
