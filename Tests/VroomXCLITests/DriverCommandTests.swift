import Crypto
import Foundation
import Logging
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// The terminal client and the server, both as real processes.
@Suite("vroomx-driver command")
struct DriverCommandTests {
    /// A `vroomx serve --demo` process on a data directory that outlives it.
    enum ServerProcess {
        /// The first start, on a free port.
        static func start(dataDirectory: URL, environment: [String: String] = [:]) async throws -> (process: ChildProcess, port: Int) {
            try await VroomXBinary.serve(["serve", "--demo"], environment: settings(dataDirectory, environment))
        }

        /// A restart on the port the device knows.
        static func restart(dataDirectory: URL, port: Int, environment: [String: String] = [:]) async throws -> ChildProcess {
            try await VroomXBinary.serve(["serve", "--demo"], port: port, environment: settings(dataDirectory, environment)).process
        }

        private static func settings(_ dataDirectory: URL, _ environment: [String: String]) -> [String: String] {
            environment.merging(["VROOMX_DATA_DIR": dataDirectory.path, "VROOMX_LOG_LEVEL": "info"]) { $1 }
        }
    }

    /// Runs `vroomx-driver` with the test's server and state directory.
    static func driver(_ arguments: [String], home: URL, port: Int) async throws -> (status: Int32, output: String) {
        try await VroomXBinary.run(arguments, binary: "vroomx-driver",
                                   environment: ["VROOMX_SERVER": "http://127.0.0.1:\(port)", "VROOMX_DRIVER_HOME": home.path, "NO_COLOR": "1"])
    }

    /// The last sign-in code the server's log shows for this email.
    static func signInCode(for email: String, in server: ChildProcess) throws -> String {
        try #require(server.text.split(separator: "\n").last { $0.contains(email) && $0.contains("sign-in code:") }
            .flatMap { line in line.range(of: #"code: \d{6}"#, options: .regularExpression).map { String(line[$0].suffix(6)) } })
    }

    /// Signs the device in with the emailed code and PIN 2468.
    static func signIn(_ email: String, home: URL, port: Int, server: ChildProcess) async throws {
        _ = try await driver(["login", "--email", email], home: home, port: port)
        try await server.waitFor("sign-in code:")
        let code = try signInCode(for: email, in: server)
        #expect(try await driver(["login", "--email", email, "--code", code, "--pin", "2468"], home: home, port: port).status == 0)
    }

    @Test("a driver of two carriers: without --carrier the terminal names both and the code stays good; with it, they sign in there")
    func twoCarriers() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let (server, port) = try await ServerProcess.start(dataDirectory: data)
        let email = DemoData.driverEmails[0]
        // A second carrier adds the demo carrier's driver, as it would an owner-operator who also hauls for it.
        let created = try await VroomXBinary.run(["tenant", "create", "--name", "Second Haul", "--dispatcher-email", "boss@second.example"],
                                                 environment: ["VROOMX_DATA_DIR": data.path])
        #expect(created.status == 0, "\(created.output)")
        let client = HTTPTestClient(baseURL: "http://127.0.0.1:\(port)")
        #expect(try await client.send(.sendCode, json: SendCodeRequest(email: "boss@second.example")).status == 202)
        try await server.waitFor("to=boss@second.example")
        let boss = try await client.send(.verifyCode, json: VerifyCodeRequest(email: "boss@second.example",
                                                                              code: try Self.signInCode(for: "boss@second.example", in: server)))
            .decode(AuthSession.self)
        let added = try await client.send(.dispatchCreateDriver, json: CreateDriverRequest(email: email, name: "Alex at Second",
                                                                                          payType: .percentage, payRate: 2500),
                                          token: boss.accessToken)
        #expect(added.status == 201, "\(added.text)")

        #expect(try await Self.driver(["login", "--email", email], home: home, port: port).status == 0)
        try await server.waitFor("to=\(email)")
        let code = try Self.signInCode(for: email, in: server)
        let asked = try await Self.driver(["login", "--email", email, "--code", code, "--pin", "2468"], home: home, port: port)
        #expect(asked.status == 64, "\(asked.output)")
        #expect(asked.output.contains("Demo Auto Transport") && asked.output.contains("Second Haul") && asked.output.contains("--carrier"),
                "\(asked.output)")
        let unknown = try await Self.driver(["login", "--email", email, "--code", code, "--pin", "2468", "--carrier", "Third Road"],
                                            home: home, port: port)
        #expect(unknown.status == 64 && unknown.output.contains("You do not drive for \"Third Road\""), "\(unknown.output)")
        let chosen = try await Self.driver(["login", "--email", email, "--code", code, "--pin", "2468", "--carrier", "second haul"],
                                           home: home, port: port)
        #expect(chosen.status == 0, "\(chosen.output)")
        #expect(chosen.output.contains("Signed in as Alex at Second"), "\(chosen.output)")
        await server.stop()
    }

    @Test("sign in with the emailed code, list trips, change an order offline, restart the server, sync: applied exactly once")
    func firstFiveMinutes() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let (first, port) = try await ServerProcess.start(dataDirectory: data)
        var server = first
        let email = DemoData.driverEmails[0]

        // Before signing in: an authentication exit code.
        #expect(try await Self.driver(["trips"], home: home, port: port).status == 77)
        // Usage errors have their own code.
        #expect(try await Self.driver(["order"], home: home, port: port).status == 64)

        let requested = try await Self.driver(["login", "--email", email], home: home, port: port)
        #expect(requested.status == 0, "\(requested.output)")
        try await server.waitFor("sign-in code:")
        let code = try Self.signInCode(for: email, in: server)
        // A wrong code is a failed sign-in (77), as --help says; the right one still works after it.
        let wrong = try await Self.driver(["login", "--email", email, "--code", code == "000000" ? "111111" : "000000", "--pin", "2468"],
                                          home: home, port: port)
        #expect(wrong.status == 77, "\(wrong.output)")
        let login = try await Self.driver(["login", "--email", email, "--code", code, "--pin", "2468"], home: home, port: port)
        #expect(login.status == 0, "\(login.output)")
        #expect(login.output.contains("Signed in as Alex Rivera"))

        let trips = try await Self.driver(["trips", "--json"], home: home, port: port)
        #expect(trips.status == 0)
        let tripList = try WireJSON.decoder().decode(Items<Trip>.self, from: Data(trips.output.utf8)).items
        #expect(tripList.map(\.number) == ["T-1003", "T-1002", "T-1001"])
        let table = try await Self.driver(["trips"], home: home, port: port)
        #expect(table.output.contains("T-1002") && table.output.contains("In progress") && table.output.contains("Atlanta, GA → Miami, FL"))
        let messages = try await Self.driver(["messages"], home: home, port: port)
        #expect(messages.output.contains("Today") && messages.output.contains("Hurricane detour") && messages.output.contains("unread"))

        // The server goes away; the driver inspects and picks up a vehicle anyway.
        await server.stop()
        let photos = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-photos-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: photos, withIntermediateDirectories: true)
        var inspect = ["inspect", "O-5004", "--pickup", "--customer-unavailable"]
        for slot in MediaSlot.requiredPhotos {
            let path = photos.appendingPathComponent("\(slot).jpg")
            try Data(MediaSamples.jpeg(size: 20_000)).write(to: path)
            inspect += ["--photo", "\(slot)=\(path.path)"]
        }
        let offline = try await Self.driver(inspect, home: home, port: port)
        #expect(offline.status == 75, "\(offline.output)")
        #expect(offline.output.contains("You're offline — showing cached data"))
        #expect(offline.output.contains("Pickup inspection of O-5004 complete: picked up."))
        let cached = try await Self.driver(["order", "O-5004", "--json"], home: home, port: port)
        #expect(try WireJSON.decoder().decode(Order.self, from: Data(cached.output.utf8)).status == .pickedUp)
        // Marking a status by hand is not how it is done; an inspection the order is not ready for is refused.
        #expect(try await Self.driver(["order", "O-5006", "status", "delivered"], home: home, port: port).status == 64)
        let refused = try await Self.driver(["inspect", "O-5006", "--delivery", "--draft"], home: home, port: port)
        #expect(refused.status == 65, "\(refused.output)")

        // Back online: sync delivers it, once.
        server = try await ServerProcess.restart(dataDirectory: data, port: port)
        let sync = try await Self.driver(["sync"], home: home, port: port)
        #expect(sync.status == 0, "\(sync.output)")
        #expect(sync.output.contains("Waiting       nothing"))
        #expect(try await Self.driver(["sync"], home: home, port: port).status == 0)

        var configuration = ServerConfiguration()
        configuration.dataDirectory = data
        configuration.logLevel = .critical
        let services = try await ServerServices.make(configuration)
        let applied = try await pickups(of: "O-5004", services)
        #expect(applied.count == 1)
        #expect(applied.first == "picked_up")
        await services.database.close()
        try? FileManager.default.removeItem(at: photos)

        let logout = try await Self.driver(["logout"], home: home, port: port)
        #expect(logout.status == 0, "\(logout.output)")
        #expect(try await Self.driver(["trips"], home: home, port: port).status == 77)
        await server.stop()
    }

    @Test("inspect: photos and a video upload with resumable uploads; a client killed mid-video resumes on the next sync")
    func inspectAndResume() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-media-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let (server, port) = try await ServerProcess.start(dataDirectory: data)
        let email = DemoData.driverEmails[0]
        try await Self.signIn(email, home: home, port: port, server: server)

        var arguments = ["inspect", "O-5005", "--pickup", "--customer-unavailable", "--odometer", "61200",
                         "--damage", "rear_bumper:dent:moderate:fist-sized@damage_1"]
        for slot in MediaSlot.requiredPhotos + [MediaSlot("damage_1")] {
            let path = files.appendingPathComponent("\(slot).jpg")
            try Data(MediaSamples.jpeg(size: 50_000)).write(to: path)
            arguments += ["--photo", "\(slot)=\(path.path)"]
        }
        let video = MediaSamples.mp4(size: 48 << 20)
        let videoPath = files.appendingPathComponent("walk.mp4")
        try Data(video).write(to: videoPath)
        arguments += ["--video", videoPath.path]

        // Killed while the video is on its way. Its 1 MB chunks go through a proxy that answers each late
        // (0.05–0.8 s), so the video takes seconds: straight to the server on loopback it could be done
        // before a machine busy with other suites let this test look.
        let proxy = try FaultProxy(upstreamPort: port)
        defer { proxy.stop() }
        try proxy.set(.slow, seed: 7)
        let inspect = try VroomXBinary.start(arguments, binary: "vroomx-driver", environment: [
            "VROOMX_SERVER": "http://127.0.0.1:\(proxy.port)", "VROOMX_DRIVER_HOME": home.path, "NO_COLOR": "1"])
        // Killed once the server holds part of the video (over 1 MB of it
        // in the partial folder, where only the video grows that large):
        // a fixed pause could miss a 48 MB upload on a fast loopback.
        let partial = data.appendingPathComponent("media/.partial")
        func videoUnderWay() -> Bool {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: partial.path)) ?? []
            return names.contains { name in
                let size = (try? partial.appendingPathComponent(name).resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
                return size > 1 << 20 && size < video.count
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !videoUnderWay() {
            try #require(ContinuousClock.now < deadline && inspect.isRunning, "the video never started: \(inspect.text)")
            try await Task.sleep(for: .milliseconds(2))
        }
        await inspect.kill9()
        #expect(!inspect.text.contains("complete."), "killed before the video finished: \(inspect.text)")
        try proxy.set(.normal, seed: 7)

        let sync = try await Self.driver(["sync"], home: home, port: port)
        #expect(sync.status == 0, "\(sync.output)")
        #expect(sync.output.contains("walkthrough") && sync.output.contains("100%"), "\(sync.output)\nserver: \(server.text.suffix(3000))")
        let shown = try await Self.driver(["order", "O-5005"], home: home, port: port)
        #expect(shown.output.contains("Pickup    inspection complete") && shown.output.contains("8 files on the server"), "\(shown.output)")
        #expect(shown.output.contains("Picked up"), "completing the pickup inspection picked the vehicle up: \(shown.output)")
        // A broker's load shows its load board reference, as the gate asks for it.
        let brokered = try await Self.driver(["order", "O-5006"], home: home, port: port)
        #expect(brokered.output.contains("Load ID   CD-5006"), "\(brokered.output)")
        await server.stop()

        var configuration = ServerConfiguration()
        configuration.dataDirectory = data
        configuration.logLevel = .critical
        let services = try await ServerServices.make(configuration)
        let (uploads, inspection) = try await services.database.read { db in
            let order = try await db.first("SELECT id FROM orders WHERE number = 'O-5005'")!.string("id")
            let doc = try await db.first("SELECT doc FROM inspections WHERE order_id = \(order)")!.string("doc")
            let count = try await db.first("SELECT COUNT(*) AS n FROM uploads WHERE slot = 'walkthrough'")!.int("n")
            return (count, doc)
        }
        let stored = try WireJSON.decoder().decode(Inspection.self, from: Data(inspection.utf8))
        #expect(uploads == 1, "the video resumed its upload instead of starting a new one")
        #expect(stored.completedAt != nil && stored.odometer == 61200 && stored.customerUnavailable && stored.media.count == 8)
        #expect(stored.media.first { $0.slot == .walkthrough }?.sha256 == SHA256.hash(data: video).map { String(format: "%02x", $0) }.joined())
        await services.database.close()
        try? FileManager.default.removeItem(at: files)
    }

    @Test("exit codes a script can act on: 75 while changes wait for the network, 0 once they reached dispatch, 77 when the session was revoked")
    func offlineExitCodes() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let (first, port) = try await ServerProcess.start(dataDirectory: data)
        var server = first
        let email = DemoData.driverEmails[0]
        try await Self.signIn(email, home: home, port: port, server: server)
        #expect(try await Self.driver(["sync"], home: home, port: port).status == 0)

        // No server: every expense is kept and says so with 75, and so does sync, naming what it waits for.
        await server.stop()
        for index in 1...7 {
            let added = try await Self.driver(["expense", "add", "--trip", "T-1002", "--category", "fuel", "--amount", "10.0\(index)"],
                                              home: home, port: port)
            #expect(added.status == 75, "expense \(index): \(added.output)")
        }
        let waiting = try await Self.driver(["sync"], home: home, port: port)
        #expect(waiting.status == 75, "\(waiting.output)")
        #expect(waiting.output.contains("Waiting       7 changes"), "\(waiting.output)")
        #expect(waiting.output.components(separatedBy: "waiting for the network").count - 1 == 7, "\(waiting.output)")

        // The server is back: one sync sends all seven, once each.
        server = try await ServerProcess.restart(dataDirectory: data, port: port)
        let sent = try await Self.driver(["sync"], home: home, port: port)
        #expect(sent.status == 0, "\(sent.output)")
        #expect(sent.output.contains("Waiting       nothing"), "\(sent.output)")
        await server.stop()
        var configuration = ServerConfiguration()
        configuration.dataDirectory = data
        configuration.logLevel = .critical
        let services = try await ServerServices.make(configuration)
        let amounts = try await services.database.read { db in
            try await db.query("""
                SELECT e.amount_cents FROM trip_expenses e JOIN trips t ON t.id = e.trip_id
                WHERE t.number = 'T-1002' AND e.category = 'fuel' AND e.amount_cents BETWEEN 1001 AND 1007 ORDER BY e.amount_cents
                """).map { try $0.int("amount_cents") }
        }
        #expect(amounts == Array(1001...1007))
        // The office ends the session (a lost phone): the next sync says the session is over.
        try await services.database.write { db in
            try await db.execute("UPDATE sessions SET revoked_at = \(Date()), revoked_reason = 'lost_phone'")
        }
        await services.database.close()
        server = try await ServerProcess.restart(dataDirectory: data, port: port)
        let revoked = try await Self.driver(["sync"], home: home, port: port)
        #expect(revoked.status == 77, "\(revoked.output)")
        #expect(try await Self.driver(["trips"], home: home, port: port).status == 77)
        await server.stop()
    }

    @Test("the driver's truck in the terminal: papers, an odometer reading, a fuel fill-up and a photo made offline reach dispatch once; a lower reading is refused")
    func truckOdometerAndFuel() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let (first, port) = try await ServerProcess.start(dataDirectory: data)
        var server = first
        try await Self.signIn(DemoData.driverEmails[0], home: home, port: port, server: server)
        let units = try await Self.driver(["units"], home: home, port: port)
        #expect(units.status == 0, "\(units.output)")
        #expect(units.output.contains("Truck T-12") && units.output.contains("Trailer TR-7") && units.output.contains("Odometer 413,250 mi"), "\(units.output)")
        #expect(units.output.contains("Registration TX-REG-4KH221: expires") && units.output.contains("(in 18 days)"), "\(units.output)")
        #expect(!units.output.contains("T-14"), "another driver's truck: \(units.output)")
        // Read by a pager or `head` that stops early: the command ends quietly, never with a crash.
        let piped = try await VroomXBinary.run(["-c", "set -o pipefail; '\(VroomXBinary.path("vroomx-driver"))' units | head -1"], binary: "/bin/bash",
                                               environment: ["VROOMX_SERVER": "http://127.0.0.1:\(port)", "VROOMX_DRIVER_HOME": home.path,
                                                             "NO_COLOR": "1"])
        #expect(piped.status == 0 && !piped.output.contains("Fatal error"), "\(piped.output)")

        // Offline: refused at once when lower than the last reading, queued otherwise.
        await server.stop()
        let lower = try await Self.driver(["odometer", "413000"], home: home, port: port)
        #expect(lower.status == 65 && lower.output.contains("already read 413,250 mi"), "\(lower.output)")
        #expect(try await Self.driver(["odometer", "413,480"], home: home, port: port).status == 75)
        let fill = try await Self.driver(["expense", "add", "--trip", "T-1002", "--category", "fuel", "--amount", "412.80",
                                          "--gallons", "118.25", "--odometer", "413480"], home: home, port: port)
        #expect(fill.status == 75, "\(fill.output)")
        let misuse = try await Self.driver(["expense", "add", "--trip", "T-1002", "--category", "tolls", "--amount", "5", "--gallons", "1"],
                                           home: home, port: port)
        #expect(misuse.status == 64, "\(misuse.output)")
        #expect(try await Self.driver(["odometer", "-5"], home: home, port: port).status == 64)
        // A photo of the truck waits on the device like an inspection photo.
        let photo = home.appendingPathComponent("dent.jpg")
        let photoBytes = MediaSamples.jpeg(size: 40_000)
        try Data(photoBytes).write(to: photo)
        let queued = try await Self.driver(["unit-photo", photo.path], home: home, port: port)
        #expect(queued.status == 75 && queued.output.contains("Added a photo of T-12."), "\(queued.output)")
        #expect(try await Self.driver(["unit-photo", photo.path, "--unit", "T-14"], home: home, port: port).status == 65,
                "another driver's truck")
        let scan = home.appendingPathComponent("registration.jpg")  // a PDF, whatever its name says
        try Data(MediaSamples.pdf()).write(to: scan)
        let notPhoto = try await Self.driver(["unit-photo", scan.path], home: home, port: port)
        #expect(notPhoto.status == 65 && notPhoto.output.contains("is not a photo"), "\(notPhoto.output)")
        let waiting = try await Self.driver(["sync"], home: home, port: port)
        #expect(waiting.status == 75, "a photo waiting offline: \(waiting.output)")

        server = try await ServerProcess.restart(dataDirectory: data, port: port)
        let sent = try await Self.driver(["sync"], home: home, port: port)
        #expect(sent.status == 0 && sent.output.contains("Waiting       nothing"), "\(sent.output)")
        let withPhoto = try await Self.driver(["units"], home: home, port: port)
        #expect(withPhoto.output.contains("1 photo,"), "\(withPhoto.output)")
        // With the server up, a photo goes at once.
        let second = home.appendingPathComponent("tyres.png")
        let secondBytes = MediaSamples.png(size: 20_000)
        try Data(secondBytes).write(to: second)
        let sentNow = try await Self.driver(["unit-photo", second.path], home: home, port: port)
        #expect(sentNow.status == 0 && sentNow.output.contains("Added a photo of T-12."), "\(sentNow.output)")
        // Only the file this command sent is shown going, not the one sent earlier.
        #expect(sentNow.output.components(separatedBy: "100%").count == 2, "\(sentNow.output)")
        #expect(try await Self.driver(["sync"], home: home, port: port).status == 0)
        await server.stop()

        var configuration = ServerConfiguration()
        configuration.dataDirectory = data
        configuration.logLevel = .critical
        let services = try await ServerServices.make(configuration)
        let (readings, fills, odometer) = try await services.database.read { db in
            (try await db.query("SELECT r.miles FROM odometer_readings r JOIN equipment e ON e.id = r.equipment_id WHERE e.unit_number = 'T-12' ORDER BY r.miles")
                .map { try $0.int("miles") },
             try await db.query("SELECT fuel_quantity_milli FROM trip_expenses WHERE fuel_odometer_miles = 413480").map { try $0.int("fuel_quantity_milli") },
             try await db.first("SELECT odometer_miles FROM equipment WHERE unit_number = 'T-12'")?.int("odometer_miles"))
        }
        let photos = try await services.database.read { db in
            try await db.query("SELECT p.sha256 FROM equipment_photos p JOIN equipment e ON e.id = p.equipment_id WHERE e.unit_number = 'T-12'")
                .map { try $0.string("sha256") }
        }
        #expect(Set(photos) == Set([photoBytes, secondBytes].map { SHA256.hash(data: $0).map { String(format: "%02x", $0) }.joined() })
                && photos.count == 2, "each sent once, intact")
        // The typed readings and each fill's odometer (a fill is a reading too: the demo's two and this one), once each.
        #expect(readings == [412_300, 412_350, 412_980, 413_200, 413_250, 413_480, 413_480])
        #expect(fills == [118_250])
        #expect(odometer == 413_480)
        await services.database.close()
    }

    @Test("cash collected at pickup with a photo of the receipt, and a toll receipt on an expense, made offline in the terminal, reach dispatch once")
    func collectedAndReceipts() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let (first, port) = try await ServerProcess.start(dataDirectory: data)
        var server = first
        try await Self.signIn(DemoData.driverEmails[0], home: home, port: port, server: server)
        #expect(try await Self.driver(["trips"], home: home, port: port).status == 0)
        await server.stop()

        let cashReceipt = home.appendingPathComponent("cash.jpg"), toll = home.appendingPathComponent("toll.jpg")
        let cashBytes = MediaSamples.jpeg(size: 30_000), tollBytes = MediaSamples.jpeg(size: 12_000)
        try Data(cashBytes).write(to: cashReceipt)
        try Data(tollBytes).write(to: toll)
        let collected = try await Self.driver(["collect", "O-5003", "--amount", "950", "--method", "cash", "--reference", "R-1",
                                               "--photo", cashReceipt.path], home: home, port: port)
        #expect(collected.status == 75 && collected.output.contains("Collected $950.00 cash for order O-5003 with 1 photo."), "\(collected.output)")
        // O-5004 is not picked up yet: nothing to collect, said at once.
        let early = try await Self.driver(["collect", "O-5004", "--amount", "5", "--method", "cash"], home: home, port: port)
        #expect(early.status == 65 && early.output.contains("complete its pickup inspection first"), "\(early.output)")
        let notAmount = try await Self.driver(["collect", "O-5003", "--amount", "lots", "--method", "cash"], home: home, port: port)
        #expect(notAmount.status == 64, "\(notAmount.output)")
        let expense = try await Self.driver(["expense", "add", "--trip", "T-1002", "--category", "tolls", "--amount", "12.75",
                                             "--note", "Turnpike", "--receipt", toll.path], home: home, port: port)
        #expect(expense.status == 75 && expense.output.contains("with 1 receipt photo"), "\(expense.output)")

        server = try await ServerProcess.restart(dataDirectory: data, port: port)
        let sent = try await Self.driver(["sync"], home: home, port: port)
        #expect(sent.status == 0 && sent.output.contains("Waiting       nothing"), "\(sent.output)")
        let listed = try await Self.driver(["expense", "list", "--trip", "T-1002"], home: home, port: port)
        #expect(listed.output.contains("Turnpike · 1 receipt"), "\(listed.output)")
        let shown = try await Self.driver(["order", "O-5003"], home: home, port: port)
        #expect(shown.output.contains("Collected $950.00 cash R-1") && shown.output.contains("reached dispatch"), "\(shown.output)")
        // More than the order comes to is refused at once; a photo that is not one records nothing.
        let tooMuch = try await Self.driver(["collect", "O-5003", "--amount", "99999", "--method", "cash"], home: home, port: port)
        #expect(tooMuch.status == 65 && tooMuch.output.contains("left to collect"), "\(tooMuch.output)")
        let before = try await Self.driver(["expense", "list", "--trip", "T-1002", "--json"], home: home, port: port).output
        let pdf = home.appendingPathComponent("scan.jpg")
        try Data(MediaSamples.pdf()).write(to: pdf)
        let refused = try await Self.driver(["expense", "add", "--trip", "T-1002", "--category", "tolls", "--amount", "3", "--receipt", pdf.path],
                                            home: home, port: port)
        #expect(refused.status == 65 && refused.output.contains("is not a photo"), "\(refused.output)")
        #expect(try await Self.driver(["expense", "list", "--trip", "T-1002", "--json"], home: home, port: port).output == before)
        await server.stop()

        var configuration = ServerConfiguration()
        configuration.dataDirectory = data
        configuration.logLevel = .critical
        let services = try await ServerServices.make(configuration)
        let (payments, photos) = try await services.database.read { db in
            (try await db.query("SELECT amount_cents, reference FROM invoice_payments WHERE collected_by IS NOT NULL")
                .map { "\(try $0.int("amount_cents")) \(try $0.string("reference"))" },
             try await db.query("SELECT sha256 FROM receipt_photos ORDER BY size_bytes DESC").map { try $0.string("sha256") })
        }
        #expect(payments == ["95000 R-1"])
        #expect(photos == [cashBytes, tollBytes].map { SHA256.hash(data: $0).map { String(format: "%02x", $0) }.joined() }, "each sent once, intact")
        await services.database.close()
    }

    @Test("earnings list the weeks dispatch settled, keep them for reading offline, and save a statement")
    func settledEarnings() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let (first, port) = try await ServerProcess.start(dataDirectory: data)
        var server = first
        try await Self.signIn(DemoData.driverEmails[0], home: home, port: port, server: server)
        await server.stop()

        // Dispatch approves and pays Alex's week of the finished run T-1001 (completed when the demo was made).
        var configuration = ServerConfiguration()
        configuration.dataDirectory = data
        configuration.logLevel = .critical
        let services = try await ServerServices.make(configuration)
        let row = try #require(try await services.database.read { db in
            try await db.first("SELECT d.id, d.tenant_id FROM drivers d JOIN users u ON u.id = d.user_id WHERE u.email = \(DemoData.driverEmails[0])")
        })
        let (alex, tenant): (ID<Driver>, ID<Tenant>) = (try row.id("id"), try row.id("tenant_id"))
        let week = LocalDate(Date())
        let approved = try await services.store.settlements.approve(driver: alex, ApproveSettlementRequest(week: week, email: false), tenant: tenant)
        let paid = try await services.store.settlements.markPaid(try #require(approved.id), MarkSettlementPaidRequest(reference: "CHK 77"), tenant: tenant)
        #expect(paid.lines.contains { $0.description.hasPrefix("T-1001") })
        await services.database.close()

        server = try await ServerProcess.restart(dataDirectory: data, port: port)
        let shown = try await Self.driver(["earnings"], home: home, port: port)
        #expect(shown.status == 0 && shown.output.contains("Paid ") && shown.output.contains(MoneyFormat.dollars(paid.netCents)), "\(shown.output)")
        let file = home.appendingPathComponent("statement.pdf")
        let saved = try await Self.driver(["earnings", "--statement", week.description, "--out", file.path], home: home, port: port)
        #expect(saved.status == 0 && saved.output.contains("Saved the statement"), "\(saved.output)")
        #expect(try Data(contentsOf: file).starts(with: Data("%PDF".utf8)))
        let unsettled = try await Self.driver(["earnings", "--statement", LocalDate(Date()).adding(days: 14).description, "--out", file.path],
                                              home: home, port: port)
        #expect(unsettled.status == 65 && unsettled.output.contains("not settled yet") && !unsettled.output.contains("Usage"), "\(unsettled.output)")
        await server.stop()
        // No signal: the weeks as last fetched, and the statement opened before.
        let offline = try await Self.driver(["earnings"], home: home, port: port)
        #expect(offline.output.contains(MoneyFormat.dollars(paid.netCents)) && offline.output.contains("Dispatch could not be reached: settlements as of"), "\(offline.output)")
        try FileManager.default.removeItem(at: file)
        let kept = try await Self.driver(["earnings", "--statement", week.description, "--out", file.path], home: home, port: port)
        #expect(kept.status == 0 && (try? Data(contentsOf: file))?.starts(with: Data("%PDF".utf8)) == true, "\(kept.output)")
    }

    @Test("in the terminal, a driver with a trip under way is told the next one waits, writes to dispatch offline (sent once when back), answers the urgent message Got it and reads the conversation")
    func conversationAndTripStart() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let (first, port) = try await ServerProcess.start(dataDirectory: data)
        var server = first
        try await Self.signIn(DemoData.driverEmails[0], home: home, port: port, server: server)
        // Alex's T-1002 is under way: the next trip waits (its first pickup would start it).
        let busy = try await Self.driver(["trip", "T-1003", "start"], home: home, port: port)
        #expect(busy.status == 65 && busy.output.contains("Trip T-1002 is under way"), "\(busy.output)")
        let again = try await Self.driver(["trip", "T-1002", "start"], home: home, port: port)
        #expect(again.status == 0 && again.output.contains("already under way"), "\(again.output)")
        let shown = try await Self.driver(["trip", "T-1003"], home: home, port: port)
        #expect(shown.output.contains("Planned") && shown.output.contains("Starts at the first pickup"), "\(shown.output)")

        // The demo's urgent message, by its short id in the conversation.
        let conversation = try await Self.driver(["messages", "--conversation"], home: home, port: port)
        #expect(conversation.status == 0 && conversation.output.contains("URGENT") && conversation.output.contains("--got-it"), "\(conversation.output)")
        let urgentID = try #require(conversation.output.range(of: #"read ([0-9a-f]{8}) --got-it"#, options: .regularExpression)
            .map { String(conversation.output[$0].dropFirst(5).prefix(8)) })

        await server.stop()
        let offline = try await Self.driver(["send", "Gate locked at the Savannah lot", "--order", "O-5004"], home: home, port: port)
        #expect(offline.status == 75, "saved, not yet sent: \(offline.output)")
        let gotIt = try await Self.driver(["read", urgentID, "--got-it"], home: home, port: port)
        #expect(gotIt.status == 75, "\(gotIt.output)")
        let empty = try await Self.driver(["send", "   "], home: home, port: port)
        #expect(empty.status == 65 && empty.output.contains("Write something to send."), "\(empty.output)")
        // A problem at the stop, from the dead zone too; a problem the command does not know is a usage error naming them.
        let keys = home.appendingPathComponent("keys.jpg")
        try Data(MediaSamples.jpeg(size: 3000)).write(to: keys)
        let problem = try await Self.driver(["problem", "O-5004", "keys-missing", "--note", "Keys locked in the office", "--photo", keys.path],
                                            home: home, port: port)
        #expect(problem.status == 75 && problem.output.contains("Your report of keys missing at O-5004 is written"), "\(problem.output)")
        let unknown = try await Self.driver(["problem", "O-5004", "teleport"], home: home, port: port)
        #expect(unknown.status == 64 && unknown.output.contains("keys-missing, dry-run"), "\(unknown.output)")
        let waiting = try await Self.driver(["messages", "--conversation"], home: home, port: port)
        #expect(waiting.output.contains("Gate locked at the Savannah lot") && waiting.output.contains("not sent yet"), "\(waiting.output)")

        server = try await ServerProcess.restart(dataDirectory: data, port: port)
        let synced = try await Self.driver(["sync"], home: home, port: port)
        #expect(synced.status == 0, "\(synced.output)")
        _ = try await Self.driver(["sync"], home: home, port: port)
        let after = try await Self.driver(["messages", "--conversation", "--json"], home: home, port: port)
        let lines = try WireJSON.decoder().decode(Items<ConversationLine>.self, from: Data(after.output.utf8)).items
        #expect(lines.filter { $0.from == .driver && $0.body == "Gate locked at the Savannah lot" }.count == 1, "\(after.output)")
        #expect(lines.contains { $0.urgent && $0.acknowledgedAt != nil })
        #expect(lines.filter { $0.body.hasPrefix("Problem reported: Keys missing") }.count == 1, "\(after.output)")
        let order = try await Self.driver(["order", "O-5004"], home: home, port: port)
        #expect(order.output.contains("problem: Keys missing — Keys locked in the office") && order.output.contains("1 photo"), "\(order.output)")
        await server.stop()
    }

    /// A GPX track from `metres` north of `stop` (every 10 s), as the test describes it.
    static func gpx(_ legs: [(metresNorth: Double, seconds: Int)], around stop: GeoPoint) -> String {
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        var points: [String] = []
        var offset = 0
        for leg in legs {
            for _ in 0..<max(leg.seconds / 10, 1) {
                let latitude = stop.latitude + leg.metresNorth / 111_195
                points.append(#"<trkpt lat="\#(latitude)" lon="\#(stop.longitude)"><time>\#(WireTime.string(from: start.addingTimeInterval(Double(offset))))</time></trkpt>"#)
                offset += 10
            }
        }
        return #"<?xml version="1.0"?><gpx version="1.1" creator="test"><trk><trkseg>"# + points.joined(separator: "\n") + "</trkseg></trk></gpx>"
    }

    @Test("driving a GPX route: parked two minutes at a pickup arrives there, driving past another does not; sharing can be paused")
    func driveRoute() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let (server, port) = try await ServerProcess.start(dataDirectory: data)
        try await Self.signIn(DemoData.driverEmails[0], home: home, port: port, server: server)
        let routes = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-routes-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: routes, withIntermediateDirectories: true)
        // Past the Jacksonville pickup (O-5005) at highway speed: 20 s within the fence.
        let passBy = routes.appendingPathComponent("pass.gpx")
        try Self.gpx([(-3000, 10), (-2000, 10), (-1000, 10), (-60, 10), (60, 10), (1000, 10), (2000, 10), (3000, 10)],
                     around: DemoData.places["Jacksonville, FL"]!).write(to: passBy, atomically: true, encoding: .utf8)
        // Into the Savannah yard (O-5004) and parked three minutes, with GPS wander of a few metres.
        let parked = routes.appendingPathComponent("savannah.gpx")
        try Self.gpx([(-4000, 30), (-2500, 30), (-1000, 30), (-200, 10), (40, 60), (55, 60), (35, 60), (800, 20)],
                     around: DemoData.places["Savannah, GA"]!).write(to: parked, atomically: true, encoding: .utf8)

        // (A replay is stamped to end as it ends, so each drive's positions are the latest.)
        let arrival = try await Self.driver(["drive", "--track", parked.path, "--speed", "40x"], home: home, port: port)
        #expect(arrival.status == 0 && arrival.output.contains("Arrived at pickup of O-5004"), "\(arrival.output)")
        #expect(arrival.output.contains("to pickup of O-5004"), "the way to the next stop is shown: \(arrival.output)")
        let past = try await Self.driver(["drive", "--track", passBy.path, "--speed", "60x"], home: home, port: port)
        #expect(past.status == 0 && past.output.contains("Recorded ") && !past.output.contains("Arrived at pickup of O-5005"), "\(past.output)")

        let paused = try await Self.driver(["location", "off"], home: home, port: port)
        #expect(paused.status == 0 && paused.output.contains("paused"), "\(paused.output)")
        let refused = try await Self.driver(["drive", "--track", parked.path, "--speed", "40x"], home: home, port: port)
        #expect(refused.status == 1 && refused.output.contains("location on"), "\(refused.output)")
        #expect(try await Self.driver(["location", "on"], home: home, port: port).output.contains("T-1002"))
        for bad in [["--speed", "0x"], ["--speed", "fast"]] {
            #expect(try await Self.driver(["drive", "--track", parked.path] + bad, home: home, port: port).status == 64)
        }
        #expect(try await Self.driver(["drive", "--track", routes.appendingPathComponent("none.gpx").path], home: home, port: port).status == 64)
        try Data("<gpx><trkpt lat=\"95\" lon=\"0\"></trkpt></gpx>".utf8).write(to: passBy)
        let broken = try await Self.driver(["drive", "--track", passBy.path], home: home, port: port)
        #expect(broken.status == 64 && broken.output.contains("Track point 1"), "\(broken.output)")
        await server.stop()

        var configuration = ServerConfiguration()
        configuration.dataDirectory = data
        configuration.logLevel = .critical
        let services = try await ServerServices.make(configuration)
        let arrived = try await services.database.read { db in
            try await db.query("SELECT number, arrived_at_pickup FROM orders WHERE number IN ('O-5004', 'O-5005') ORDER BY number")
                .map { (try $0.string("number"), try $0.optionalDate("arrived_at_pickup")) }
        }
        #expect(arrived.map(\.0) == ["O-5004", "O-5005"] && arrived[0].1 != nil && arrived[1].1 == nil, "\(arrived)")
        await services.database.close()
    }

    @Test("commands run at once on one device wait for each other's writes: every expense is kept and sent once")
    func concurrentCommands() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let (server, port) = try await ServerProcess.start(dataDirectory: data)
        let email = DemoData.driverEmails[0]
        try await Self.signIn(email, home: home, port: port, server: server)

        // A sync beside two expense adds, eight times: each process writes the same database.
        for round in 0..<8 {
            async let sync = Self.driver(["sync"], home: home, port: port)
            async let first = Self.driver(["expense", "add", "--trip", "T-1002", "--category", "other", "--amount", "30.\(10 + 2 * round)"],
                                          home: home, port: port)
            async let second = Self.driver(["expense", "add", "--trip", "T-1002", "--category", "other", "--amount", "30.\(11 + 2 * round)"],
                                           home: home, port: port)
            let results = try await [sync, first, second]
            // 75 is honest too: the change is kept and another process has it on its way.
            for result in results { #expect([0, 75].contains(result.status), "round \(round): \(result.output)") }
            if let waiting = results.first(where: { $0.status == 75 }) { print("round \(round), exit 75:\n\(waiting.output)") }
        }
        #expect(try await Self.driver(["sync"], home: home, port: port).status == 0)
        await server.stop()
        var configuration = ServerConfiguration()
        configuration.dataDirectory = data
        configuration.logLevel = .critical
        let services = try await ServerServices.make(configuration)
        let amounts = try await services.database.read { db in
            try await db.query("""
                SELECT e.amount_cents FROM trip_expenses e JOIN trips t ON t.id = e.trip_id
                WHERE t.number = 'T-1002' AND e.category = 'other' AND e.amount_cents BETWEEN 3010 AND 3025 ORDER BY e.amount_cents
                """).map { try $0.int("amount_cents") }
        }
        #expect(amounts == Array(3010...3025))
        await services.database.close()
    }

    @Test("a device clock three days slow: once a command has heard the server, the next one dates an expense by the server's day",
          .enabled(if: SkewedClock.isAvailable, "needs libfaketime"))
    func slowClockDatesByServer() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cli-\(UUID().uuidString.prefix(8))")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-driver-\(UUID().uuidString.prefix(8))")
        let (server, port) = try await ServerProcess.start(dataDirectory: data)
        // Every command of this device runs with its clock three days behind.
        func slow(_ arguments: [String]) async throws -> (status: Int32, output: String) {
            let process = try SkewedClock.start(VroomXBinary.path("vroomx-driver"), arguments, offset: "-3d",
                                                environment: ["VROOMX_SERVER": "http://127.0.0.1:\(port)",
                                                              "VROOMX_DRIVER_HOME": home.path, "NO_COLOR": "1"])
            while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
            return (process.exitStatus ?? -1, process.text)
        }
        let email = DemoData.driverEmails[0]
        let requested = try await slow(["login", "--email", email])
        #expect(requested.status == 0, "asking for a code: \(requested.output)")
        try await server.waitFor("sign-in code:")
        let code = try Self.signInCode(for: email, in: server)
        let signedIn = try await slow(["login", "--email", email, "--code", code, "--pin", "2468"])
        #expect(signedIn.status == 0, "signing in: \(signedIn.output)")
        // This process stamps its change before it hears from the server: what an earlier one learnt applies.
        let added = try await slow(["expense", "add", "--trip", "T-1002", "--category", "tolls", "--amount", "7.77"])
        #expect(added.status == 0, "\(added.output)")
        await server.stop()
        var configuration = ServerConfiguration()
        configuration.dataDirectory = data
        configuration.logLevel = .critical
        let services = try await ServerServices.make(configuration)
        let dates = try await services.database.read { db in
            try await db.query("SELECT expense_date FROM trip_expenses WHERE amount_cents = 777").map { try $0.string("expense_date") }
        }
        #expect(dates == [LocalDate(Date(), in: .current).description], "the server's today, not three days ago")
        await services.database.close()
    }

    /// Every change-log entry that moved the order to picked up.
    func pickups(of number: String, _ services: ServerServices) async throws -> [String] {
        try await services.database.read { db in
            let order = try await db.first("SELECT id FROM orders WHERE number = \(number)")!.string("id")
            return try await db.query("""
                SELECT payload FROM change_log WHERE entity_id = \(order) AND op = 'upsert' AND dispatch_visible = 1 ORDER BY seq
                """).compactMap { row -> String? in
                let order = try WireJSON.decoder().decode(Order.self, from: Data(try row.string("payload").utf8))
                return order.status == .pickedUp ? order.status.rawValue : nil
            }
        }
    }
}
