import Foundation
import Testing
@testable import VroomXModels

@Suite("Wire formats")
struct WireFormatTests {
    @Test("times print as UTC ISO-8601 with milliseconds and parse back exactly")
    func timeRoundTrip() throws {
        #expect(WireTime.string(fromMilliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(WireTime.string(fromMilliseconds: 951_782_400_123) == "2000-02-29T00:00:00.123Z")
        #expect(WireTime.string(fromMilliseconds: -1) == "1969-12-31T23:59:59.999Z")
        // Four-digit years at both ends; beyond them, as many digits as the year has.
        #expect(WireTime.string(fromMilliseconds: -59_011_459_200_000) == "0100-01-01T00:00:00.000Z")
        #expect(WireTime.string(fromMilliseconds: 253_402_300_799_999) == "9999-12-31T23:59:59.999Z")
        #expect(WireTime.string(fromMilliseconds: 253_402_300_800_000) == "10000-01-01T00:00:00.000Z")
        // Every millisecond of a range round-trips through text and through Date.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let ms = Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &generator)
            let text = WireTime.string(fromMilliseconds: ms)
            #expect(WireTime.parseMilliseconds(text) == ms, "\(text)")
            #expect(WireTime.milliseconds(WireTime.date(milliseconds: ms)) == ms)
        }
    }

    @Test("parsing accepts offsets and short fractions, and rejects the rest")
    func parsing() {
        #expect(WireTime.parseMilliseconds("2026-11-22T14:05:09Z") == WireTime.parseMilliseconds("2026-11-22T14:05:09.000Z"))
        #expect(WireTime.parseMilliseconds("2026-11-22T16:05:09.5+02:00") == WireTime.parseMilliseconds("2026-11-22T14:05:09.500Z"))
        #expect(WireTime.parseMilliseconds("2026-11-22T09:05:09.123456-05:00") == WireTime.parseMilliseconds("2026-11-22T14:05:09.123Z"))
        for bad in ["", "2026-11-22", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-22T24:00:00Z",
                    "2026-11-22T10:00:00", "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00Zjunk", "yesterday"] {
            #expect(WireTime.parseMilliseconds(bad) == nil, "\(bad)")
        }
    }

    @Test("calendar dates")
    func localDates() {
        #expect(LocalDate("2024-02-29")?.description == "2024-02-29")
        #expect(LocalDate(year: 1900, month: 1, day: 1)?.description == "1900-01-01")
        #expect(LocalDate(year: 2999, month: 12, day: 31)?.description == "2999-12-31")
        #expect(LocalDate(WireTime.date(milliseconds: 253_402_300_800_000)).description == "10000-01-01")
        #expect(LocalDate("2023-02-29") == nil)
        #expect(LocalDate("2024-2-01") == nil)
        for text in ["2024-+1-01", "2024-01-1x", "2024/01/01", "+024-01-01", "２０２４-01-01", "2024-01-01 ", "", "2024-00-10", "2024-13-01", "1899-12-31"] {
            #expect(LocalDate(text) == nil, "\(text)")
        }
        #expect(LocalDate("2999-12-31")?.description == "2999-12-31" && LocalDate("1900-01-01") != nil)
        #expect(LocalDate("2024-12-31")!.adding(days: 1).description == "2025-01-01")
        #expect(LocalDate(WireTime.date(milliseconds: 86_400_000 - 1)).description == "1970-01-01")
    }

    @Test("ids are lowercase on the wire and accept any case")
    func identifiers() throws {
        let upper = "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"
        let id = try #require(ID<Trip>(upper))
        #expect(id.rawValue == upper.lowercased())
        let json = try WireJSON.encoder().encode(["id": id])
        #expect(String(decoding: json, as: UTF8.self) == #"{"id":"e621e1f8-c36c-495a-93fc-0c247a3e6e5f"}"#)
        #expect(ID<Trip>("not-a-uuid") == nil)
    }

    @Test("ids are read and written as Foundation writes them, read only in the canonical form, and sort as their text")
    func identifierText() {
        for _ in 0..<5_000 {
            let uuid = UUID()
            #expect(UUIDText.lowercase(uuid) == uuid.uuidString.lowercased())
            #expect(UUIDText.parse(uuid.uuidString) == uuid)
            #expect(UUIDText.parse(uuid.uuidString.lowercased()) == uuid)
            let other = ID<Trip>(UUID())
            #expect((ID<Trip>(uuid) < other) == (uuid.uuidString.lowercased() < other.rawValue))
        }
        let good = "e621e1f8-c36c-495a-93fc-0c247a3e6e5f"
        for bad in ["", String(good.dropLast()), good + "0", good.replacingOccurrences(of: "-", with: "0"),
                    "e621e1f8c-36c-495a-93fc-0c247a3e6e5f", "g621e1f8-c36c-495a-93fc-0c247a3e6e5f",
                    "e621e1f8-c36c-495a-93fc-0c247a3e6e5\u{e9}", " 621e1f8-c36c-495a-93fc-0c247a3e6e5f",
                    "{621e1f8-c36c-495a-93fc-0c247a3e6e5}"] {
            #expect(UUIDText.parse(bad) == nil, "\(bad)")
        }
        // Stricter than Foundation's sscanf-based parser, which reads a space, a sign or a
        // single digit before a dash as part of a number (" 621e1f8-…" became 0621e1f8-…).
        #expect(UUIDText.parse(" 621e1f8-c36c-495a-93fc-0c247a3e6e5f") == nil)
        #expect(UUIDText.parse("+621e1f8-c36c-495a-93fc-0c247a3e6e5f") == nil)
    }

    @Test("new ids are random version-4 UUIDs")
    func newIdentifiers() {
        var seen = Set<String>()
        var ones = 0
        for _ in 0..<10_000 {
            let text = ID<Trip>().rawValue
            let characters = Array(text)
            #expect(characters[14] == "4", "\(text)")
            #expect("89ab".contains(characters[19]), "\(text)")
            seen.insert(text)
            let bytes = withUnsafeBytes(of: UUIDText.parse(text)!.uuid) { Array($0) }
            ones += bytes.reduce(0) { $0 + $1.nonzeroBitCount }
            #expect(bytes[0..<6] != bytes[8..<14], "both halves drawn: \(text)")
        }
        #expect(seen.count == 10_000)
        // 122 random bits each: about half of them set (the six fixed bits hold two ones).
        let share = Double(ones - 2 * 10_000) / Double(122 * 10_000)
        #expect(abs(share - 0.5) < 0.01, "\(share)")
    }

    @Test("yesterday's JSON still decodes: unknown fields are ignored, unknown error codes kept")
    func oldClientsKeepWorking() throws {
        let json = """
            {"id":"e621e1f8-c36c-495a-93fc-0c247a3e6e5f","number":"T-1","driver_id":null,"status":"planned",
             "start_date":"2026-11-22","end_date":null,"origin":"A","destination":"B","revenue_cents":100,
             "driver_pay_cents":25,"miles":10,"version":1,"created_at":"2026-11-22T10:00:00.000Z",
             "updated_at":"2026-11-22T10:00:00Z","field_added_later":{"nested":true}}
            """
        let trip = try WireJSON.decoder().decode(Trip.self, from: Data(json.utf8))
        #expect(trip.number == "T-1")
        let error = try WireJSON.decoder().decode(APIErrorResponse.self, from: Data(#"{"error":{"code":"new_code","message":"m"}}"#.utf8))
        #expect(error.error.code.rawValue == "new_code")
    }

    @Test("order status machine: drivers move along the road, dispatch also assigns and cancels")
    func orderStateMachine() {
        #expect(OrderStatus.assigned.canTransition(to: .pickedUp, by: .driver))
        #expect(OrderStatus.pickedUp.canTransition(to: .delivered, by: .driver))
        #expect(!OrderStatus.assigned.canTransition(to: .delivered, by: .driver))
        #expect(!OrderStatus.new.canTransition(to: .pickedUp, by: .driver))
        #expect(!OrderStatus.assigned.canTransition(to: .cancelled, by: .driver))
        #expect(OrderStatus.assigned.canTransition(to: .cancelled, by: .dispatcher))
        #expect(!OrderStatus.pickedUp.canTransition(to: .cancelled, by: .dispatcher))
        for terminal in [OrderStatus.delivered, .cancelled] {
            for next in OrderStatus.allCases {
                #expect(!terminal.canTransition(to: next, by: .dispatcher))
                #expect(!terminal.canTransition(to: next, by: .driver))
            }
        }
    }

    @Test("endpoint paths fill placeholders and percent-encode values")
    func endpointPaths() {
        #expect(Endpoint.trip.path("abc") == "/v1/trips/abc")
        #expect(Endpoint.removeDeviceToken.path("a/b c") == "/v1/device-tokens/a%2Fb%20c")
        #expect(Endpoint.trips.path() == "/v1/trips")
        #expect(Set(Endpoint.all.map { "\($0.method) \($0.path)" }).count == Endpoint.all.count)
    }
}

@Suite("JSON slicer")
struct JSONSlicerTests {
    @Test("each feed row's raw JSON is found exactly, whatever its strings contain")
    func rawRows() async throws {
        let now = WireTime.date(milliseconds: 1_790_000_000_123)
        let tricky = #"Gate "B" {code: 44} [north] \ 🚚 , : "#
        let notification = DriverNotification(id: ID(), driverID: ID(), type: .urgent, title: tricky, body: "line\nbreak\t\"q\"",
                                              data: NotificationData(), readAt: nil, createdAt: now)
        let expense = Expense(id: ID(), tripID: ID(), driverID: nil, category: .fuel, amountCents: 1, date: LocalDate(now), notes: "}]", createdAt: now)
        let page = SyncPage(changes: [
            Change(seq: 1, entity: .notification, id: notification.id.rawValue, op: .upsert, row: .notification(notification)),
            Change(seq: 2, entity: .trip, id: "gone", op: .delete, row: nil),
            Change(seq: 3, entity: .expense, id: expense.id.rawValue, op: .upsert, row: .expense(expense)),
        ], cursor: 3, hasMore: false, reset: false, snapshotAfter: nil)
        let data = try WireJSON.encoder().encode(page)
        let decoded = try await SyncPage.decode(data, decoder: WireJSON.decoder())
        #expect(decoded == page)
        #expect(decoded.changes[1].rawRow == nil)
        let rawNotification = try #require(decoded.changes[0].rawRow)
        #expect(try WireJSON.decoder().decode(DriverNotification.self, from: Data(rawNotification.utf8)) == notification)
        let rawExpense = try #require(decoded.changes[2].rawRow)
        #expect(try WireJSON.decoder().decode(Expense.self, from: Data(rawExpense.utf8)) == expense)
        // Malformed input yields nothing rather than a wrong slice.
        #expect(JSONSlicer.layout(of: "changes", member: "row", in: Array(#"{"changes":[{"row":{"a":1}"#.utf8)) == nil)
    }

    @Test("a large page decodes in parts to exactly the page, in order, each row's JSON kept; a bad change in any part fails it")
    func pageInParts() async throws {
        let now = WireTime.date(milliseconds: 1_790_000_000_123)
        let trip = ID<Trip>()
        let changes = (1...1000).map { seq -> Change in
            if seq % 7 == 0 { return Change(seq: Int64(seq), entity: .expense, id: "gone-\(seq)", op: .delete, row: nil) }
            let expense = Expense(id: ID(), tripID: trip, driverID: nil, category: .tolls, amountCents: seq, date: LocalDate(now),
                                  notes: "#\(seq) }], \"", createdAt: now)
            return Change(seq: Int64(seq), entity: .expense, id: expense.id.rawValue, op: .upsert, row: .expense(expense))
        }
        let page = SyncPage(changes: changes, cursor: 1000, hasMore: true, reset: false, snapshotAfter: "after-1000")
        let data = try WireJSON.encoder().encode(page)
        // Four parts whatever the machine's cores.
        let decoded = try await SyncPage.decode(data, decoder: WireJSON.decoder(), cores: 4)
        #expect(decoded == page)
        #expect(decoded.changes.map(\.seq) == Array(1...1000))
        for change in decoded.changes {
            guard case .expense(let expense) = change.row else { #expect(change.rawRow == nil); continue }
            #expect(try WireJSON.decoder().decode(Expense.self, from: Data(try #require(change.rawRow).utf8)) == expense)
        }

        // Parts cover every change once, in order, at least 100 each.
        #expect(SyncPage.partition(1000, cores: 4).count == 4)
        #expect(SyncPage.partition(1000, cores: 64).count == 8)
        #expect(SyncPage.partition(250, cores: 4).count == 2)
        for count in [0, 1, 99, 100, 199, 200, 1000, 1001] {
            let parts = SyncPage.partition(count, cores: 4)
            #expect(parts.first?.lowerBound == 0 && parts.last?.upperBound == count)
            #expect(zip(parts, parts.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
            #expect(parts.count == 1 || parts.allSatisfy { $0.count >= 100 })
        }

        // A change the client cannot read, in the last part, fails the whole page.
        let text = String(decoding: data, as: UTF8.self)
        let corrupted = Data(text.replacingOccurrences(of: #""seq":999}"#, with: #""seq":"999"}"#).utf8)
        #expect(corrupted != data)
        #expect(JSONSlicer.layout(of: "changes", member: "row", in: Array(corrupted)) != nil)  // so the part fails, not the scan
        await #expect(throws: DecodingError.self) { try await SyncPage.decode(corrupted, decoder: WireJSON.decoder(), cores: 4) }
    }

    @Test("a page reads as a plain decoder reads it: spaced out, keys in any order, a key escaped or given twice")
    func pageAsDecoderReadsIt() async throws {
        let now = WireTime.date(milliseconds: 1_790_000_000_123)
        let changes = (1...300).map { seq -> Change in
            let expense = Expense(id: ID(), tripID: ID(), driverID: nil, category: .tolls, amountCents: seq, date: LocalDate(now),
                                  notes: "n", createdAt: now)
            return Change(seq: Int64(seq), entity: .expense, id: expense.id.rawValue, op: .upsert, row: .expense(expense))
        }
        let page = SyncPage(changes: changes, cursor: 300, hasMore: false, reset: true, snapshotAfter: nil)
        let compact = String(decoding: try WireJSON.encoder().encode(page), as: UTF8.self)
        let pretty = WireJSON.encoder()
        pretty.outputFormatting = [.prettyPrinted, .sortedKeys]
        // The encoder sorts keys: `{"changes":[…],"cursor":…}`.
        let arrayStart = try #require(compact.range(of: #"{"changes":"#)).upperBound
        let arrayEnd = try #require(compact.range(of: #","cursor":"#, options: .backwards)).lowerBound
        let arrayText = String(compact[arrayStart..<arrayEnd])
        let texts: [(String, hasLayout: Bool)] = [
            (String(decoding: try pretty.encode(page), as: UTF8.self), true),
            (#"{ "cursor" : 300, "reset" : true, "changes" : "# + arrayText + #" , "has_more" : false }"#, true),
            (#"{"ch\u0061nges":[],"cursor":300,"has_more":false,"reset":true,"changes":"# + arrayText + "}", false),
            (#"{"changes":[],"cursor":300,"has_more":false,"reset":true,"changes":"# + arrayText + "}", false),
            (compact.replacingOccurrences(of: #""row":{"amount_cents":7,"#, with: #""row":{"amount_cents":7},"row":{"amount_cents":8,"#), false),
        ]
        for (text, hasLayout) in texts {
            let data = Data(text.utf8)
            #expect((JSONSlicer.layout(of: "changes", member: "row", in: Array(data)) != nil) == hasLayout)
            let plain = try? WireJSON.decoder().decode(SyncPage.self, from: data)
            let parts = try? await SyncPage.decode(data, decoder: WireJSON.decoder(), cores: 2)
            #expect(parts == plain)
            if hasLayout {
                #expect(parts == page)
                for change in try #require(parts).changes {
                    guard case .expense(let expense) = change.row else { continue }
                    #expect(try WireJSON.decoder().decode(Expense.self, from: Data(try #require(change.rawRow).utf8)) == expense)
                }
            }
        }
    }
}
