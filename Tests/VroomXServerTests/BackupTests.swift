import Foundation
import GRDB
import NIOCore
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Backups of the embedded deployment: taken while drivers keep writing,
/// restored into an empty data directory and checked; every row of the
/// restored database is a row the server had (one consistent moment: the
/// gap-free change log has no hole and covers each expense), and every
/// media file comes back byte for byte.
@Suite("Backups")
struct BackupTests {
    @Test("a backup taken under write load restores to one consistent moment, every row and file intact; retention keeps the newest")
    func underWriteLoad() async throws {
        let server = try await TestServer.make(.sqlite)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let configuration = server.services.configuration
        let root = Self.backupsFolder(beside: configuration)
        let trip = alpha.trips[0][0].id
        let owner = Scope.driver(tenant: alpha.tenant.id, driver: alpha.driverID(0))
        try await server.run { api in
            // Photos on disk: receipts of the fixture's expense.
            let expense = alpha.expenses[trip]![0].id
            for size in [40_000, 90_000] {
                #expect(try await api.call(.addExpenseReceipt, expense.rawValue, bytes: MediaSamples.jpeg(size: size),
                                           token: alpha.driver.accessToken).status == 201)
            }
            // Drivers keep recording expenses while the backups are taken.
            let writing = Task {
                var written = 0
                while !Task.isCancelled {
                    _ = try await server.store.expenses.create(CreateExpenseRequest(id: ID(), tripID: trip, category: .tolls,
                                                                                    amountCents: 100 + written, date: LocalDate(Date())), owner)
                    written += 1
                }
                return written
            }
            try await waitUntil("writes under way") { try await server.store.expenses.list(trip: trip, owner).count > 20 }
            var taken: [(URL, Backup.Manifest)] = []
            for second in 0..<3 {
                taken.append(try await Task.detached {
                    try Backup.create(configuration, into: root, keep: 2, now: Date(timeIntervalSince1970: 1_800_000_000 + Double(second)))
                }.value)
            }
            writing.cancel()
            _ = await writing.result
            #expect(try Backup.backups(in: root).map(\.lastPathComponent) == taken.suffix(2).map(\.0.lastPathComponent), "keeps the newest 2")
            let (backup, manifest) = try #require(taken.last)
            #expect(manifest.mediaFiles == 2 && manifest.mediaLinked == 2, "the photos unchanged since the backup before: linked")

            // Restored into an empty data directory, and checked.
            var restored = configuration
            restored.dataDirectory = root.appendingPathComponent("restored")
            restored.mediaDirectory = nil
            #expect(try Backup.restore(backup, into: restored) == manifest)
            #expect(throws: Backup.Failure.self) { try Backup.restore(backup, into: restored) }  // never over a database

            // Every row the backup holds is the server's row, word for word; the change log has no hole.
            let live = try DatabaseQueue(path: configuration.sqlitePath)
            let copy = try DatabaseQueue(path: restored.sqlitePath)
            let tables = try await copy.read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name") }
            #expect(tables.contains("trip_expenses") && tables.contains("change_log"))
            // Counters move with every write: the carrier's feed counter is checked against the log below, each
            // trip's count of expenses against the expenses.
            for table in tables where table != "tenants" && table != "trip_expense_counts" {
                let sql = "SELECT * FROM \(table.quotedDatabaseIdentifier)"
                let restoredRows = Set(try await copy.read { try Row.fetchAll($0, sql: sql).map(\.description) })
                let liveRows = Set(try await live.read { try Row.fetchAll($0, sql: sql).map(\.description) })
                let unknown = restoredRows.subtracting(liveRows)
                #expect(unknown.isEmpty, "\(table): \(unknown.count) rows the server never had, e.g. \(unknown.prefix(1))")
            }
            let (expenses, changes) = try await copy.read { db -> (Int, [Int]) in
                let row = try Row.fetchOne(db, sql: """
                    SELECT COUNT(*) AS n, MIN(seq) AS low, MAX(seq) AS high, (SELECT change_seq FROM tenants WHERE id = ?) AS counter
                    FROM change_log WHERE tenant_id = ?
                    """, arguments: [alpha.tenant.id.rawValue, alpha.tenant.id.rawValue])
                return (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM trip_expenses") ?? 0,
                        row.map { [$0["n"] as Int, $0["low"] as Int, $0["high"] as Int, $0["counter"] as Int] } ?? [])
            }
            let liveExpenses = try await live.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM trip_expenses") ?? 0 }
            #expect(expenses > 20 && expenses <= liveExpenses, "a moment during the writes: \(expenses) of \(liveExpenses)")
            let counted = try await copy.read { db in
                try Int.fetchOne(db, sql: "SELECT SUM(n) FROM trip_expense_counts") == expenses
                    && Int.fetchOne(db, sql: """
                        SELECT COUNT(*) FROM trip_expense_counts c
                        WHERE n <> (SELECT COUNT(*) FROM trip_expenses x WHERE x.tenant_id = c.tenant_id AND x.trip_id = c.trip_id)
                        """) == 0
            }
            #expect(counted, "each trip's kept count of expenses is its expenses at that moment")
            #expect(changes.count == 4 && changes[0] == changes[2] - changes[1] + 1 && changes[3] == changes[2],
                    "the change log of the moment has no hole and ends at the carrier's counter: \(changes)")
            // Every file, byte for byte.
            let original = configuration.resolvedMediaDirectory, back = restored.resolvedMediaDirectory
            for key in try await copy.read({ try String.fetchAll($0, sql: "SELECT storage_key FROM receipt_photos") }) {
                #expect(FileManager.default.contents(atPath: back.appendingPathComponent(key).path)
                        == FileManager.default.contents(atPath: original.appendingPathComponent(key).path), "\(key)")
            }
            // A damaged backup is refused before anything is written.
            let damaged = root.appendingPathComponent("damaged")
            try FileManager.default.copyItem(at: backup, to: damaged)
            let handle = try FileHandle(forWritingTo: damaged.appendingPathComponent("vroomx.sqlite"))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data([0]))
            try handle.close()
            var elsewhere = configuration
            elsewhere.dataDirectory = root.appendingPathComponent("elsewhere")
            elsewhere.mediaDirectory = nil
            #expect(throws: Backup.Failure.self) { try Backup.restore(damaged, into: elsewhere) }
            #expect(!FileManager.default.fileExists(atPath: elsewhere.sqlitePath))
        }
    }

    @Test("a backup to an S3 bucket sends each media file once, restores every row and file, and retention removes old backups and media none lists")
    func bucket() async throws {
        let server = try await TestServer.make(.sqlite)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let configuration = server.services.configuration
        let s3 = try await S3TestServer.shared.configuration()
        let client = S3Client(s3)
        try await client.createBucket()
        let target = BackupTarget.bucket(s3, prefix: "yard/nightly/")
        let expense = alpha.expenses[alpha.trips[0][0].id]![0].id
        try await server.run { api in
            for size in [40_000, 9_000_000] {
                #expect(try await api.call(.addExpenseReceipt, expense.rawValue, bytes: MediaSamples.jpeg(size: size),
                                           token: alpha.driver.accessToken).status == 201)
            }
            // Days ahead, so that retention finds the media nothing lists old enough to remove.
            let day = Date().addingTimeInterval(2 * 86_400)
            let first = try await target.backUp(configuration, keep: 2, now: day)
            #expect(first.manifest.mediaFiles == 2 && first.manifest.mediaLinked == 0, "\(first.manifest)")
            #expect(first.location.hasPrefix("s3://\(s3.bucket)/yard/nightly/vroomx-"))
            #expect(try await api.call(.addExpenseReceipt, expense.rawValue, bytes: MediaSamples.jpeg(size: 20_000),
                                       token: alpha.driver.accessToken).status == 201)
            let second = try await target.backUp(configuration, keep: 2, now: day.addingTimeInterval(60))
            #expect(second.manifest.mediaFiles == 3 && second.manifest.mediaLinked == 2, "only the new photo is sent: \(second.manifest)")

            // A file in the media pool no backup lists (a backup that died midway, long ago): removed by retention.
            try await client.putObject("yard/nightly/media/orphan.jpg", body: ByteBuffer(bytes: MediaSamples.jpeg(size: 1_000)))
            // And a backup that never finished (no manifest), holding a database and the key: removed too.
            for file in ["vroomx.sqlite", "jwt-secret.key"] {
                try await client.putObject("yard/nightly/vroomx-20200101-000000/\(file)", body: ByteBuffer(bytes: [1, 2, 3]))
            }
            let third = try await target.backUp(configuration, keep: 2, now: day.addingTimeInterval(120))
            #expect(try await target.backups().map(\.location) == [second.location, third.location], "keeps the newest 2")
            #expect(try await client.listAllObjects(prefix: first.location.replacingOccurrences(of: "s3://\(s3.bucket)/", with: "")).isEmpty)
            let pool = try await client.listAllObjects(prefix: "yard/nightly/media/").map(\.key)
            #expect(pool.count == 3 && !pool.contains("yard/nightly/media/orphan.jpg"), "\(pool)")
            #expect(try await client.listAllObjects(prefix: "yard/nightly/vroomx-20200101-000000/").isEmpty)

            // Restored from the bucket into an empty data directory: every receipt row and file as the server has them.
            var restored = configuration
            restored.dataDirectory = configuration.dataDirectory.deletingLastPathComponent().appendingPathComponent("restored-\(UUID().uuidString.prefix(6))")
            restored.mediaDirectory = nil
            let environment = ["VROOMX_BACKUP_S3_ENDPOINT": s3.endpoint.absoluteString, "VROOMX_BACKUP_S3_ACCESS_KEY_ID": s3.accessKeyID,
                               "VROOMX_BACKUP_S3_SECRET_ACCESS_KEY": s3.secretAccessKey]
            #expect(try await BackupTarget.restore(third.location, environment: environment, into: restored) == third.manifest)
            let live = try DatabaseQueue(path: configuration.sqlitePath)
            let copy = try DatabaseQueue(path: restored.sqlitePath)
            let sql = "SELECT * FROM receipt_photos ORDER BY id"
            let rows = try await copy.read { try Row.fetchAll($0, sql: sql).map(\.description) }
            let liveRows = try await live.read { try Row.fetchAll($0, sql: sql).map(\.description) }
            #expect(rows.count == 3 && rows == liveRows)
            for key in try await copy.read({ try String.fetchAll($0, sql: "SELECT storage_key FROM receipt_photos") }) {
                #expect(FileManager.default.contents(atPath: restored.resolvedMediaDirectory.appendingPathComponent(key).path)
                        == FileManager.default.contents(atPath: configuration.resolvedMediaDirectory.appendingPathComponent(key).path), "\(key)")
            }
            #expect(FileManager.default.contents(atPath: restored.keyFile.path) == FileManager.default.contents(atPath: configuration.keyFile.path),
                    "the sign-in key comes back: phones stay signed in")

            // A backup whose database was changed in the bucket: refused before anything is written.
            let name = second.location.replacingOccurrences(of: "s3://\(s3.bucket)/", with: "")
            try await client.putObject(name + "/vroomx.sqlite", body: ByteBuffer(bytes: [UInt8](repeating: 0, count: 4096)))
            var elsewhere = restored
            elsewhere.dataDirectory = restored.dataDirectory.appendingPathExtension("2")
            await #expect(throws: (any Error).self) { try await BackupTarget.restore(second.location, environment: environment, into: elsewhere) }
            #expect(!FileManager.default.fileExists(atPath: elsewhere.sqlitePath) && !FileManager.default.fileExists(atPath: elsewhere.keyFile.path))
        }
    }

    @Test("two backups at once, a backup dated ahead, a leftover journal, a key outside the media folder: refused cleanly, nothing half-restored")
    func refusals() async throws {
        let server = try await TestServer.make(.sqlite)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let configuration = server.services.configuration
        let root = Self.backupsFolder(beside: configuration)
        try await server.run { api in
            try await Self.addReceipt(api, alpha, size: 5_000)
            // Two at once, named by the same second: one is made whole, the other refused; neither removes the other's work.
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let results = await withTaskGroup(of: Result<(URL, Backup.Manifest), any Error>.self) { group in
                for _ in 0..<2 { group.addTask { Result { try Backup.create(configuration, into: root, now: now) } } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let made = results.compactMap { try? $0.get() }
            #expect(made.count == 1 && made[0].1.mediaFiles == 1, "\(results)")
            // One dated ahead (a clock that was wrong) does not push out the backup just made.
            _ = try Backup.create(configuration, into: root, now: Date(timeIntervalSince1970: 4_100_000_000))
            let (latest, _) = try Backup.create(configuration, into: root, keep: 1, now: now.addingTimeInterval(60))
            #expect(try Backup.backups(in: root).map(\.lastPathComponent) == [latest.lastPathComponent])

            // Into the data or media folder: it would copy itself, every backup holding the ones before.
            for inside in [configuration.dataDirectory.appendingPathComponent("backups"), configuration.resolvedMediaDirectory.appendingPathComponent("b")] {
                #expect(performing: { try Backup.create(configuration, into: inside) }, throws: { "\($0)".contains("outside") })
            }
            // A journal an earlier database left in the data directory: refused, it would be read into the restored one.
            var restored = configuration
            restored.dataDirectory = root.appendingPathComponent("restored")
            restored.mediaDirectory = nil
            try FileManager.default.createDirectory(at: restored.dataDirectory, withIntermediateDirectories: true)
            FileManager.default.createFile(atPath: restored.sqlitePath + "-wal", contents: Data(repeating: 1, count: 64))
            #expect(throws: Backup.Failure.self) { try Backup.restore(latest, into: restored) }
            try FileManager.default.removeItem(atPath: restored.sqlitePath + "-wal")

            // A stored key pointing outside the media folder (the manifest made to match): refused before anything is written.
            let forged = root.appendingPathComponent("forged")
            try FileManager.default.copyItem(at: latest, to: forged)
            let database = forged.appendingPathComponent("vroomx.sqlite")
            let queue = try DatabaseQueue(path: database.path)
            try await queue.write { try $0.execute(sql: "UPDATE receipt_photos SET storage_key = '../../../../etc/passwd'") }
            try queue.close()
            var manifest = try Backup.read(forged)
            manifest.databaseSHA256 = try Backup.sha256(database)
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            try encoder.encode(manifest).write(to: forged.appendingPathComponent("backup.json"))
            #expect(throws: Backup.Failure.self) { try Backup.restore(forged, into: restored) }
            #expect(!FileManager.default.fileExists(atPath: restored.sqlitePath), "nothing half-restored")
            // The real one restores into the same directory afterwards.
            #expect(try Backup.restore(latest, into: restored).mediaFiles == 1)
            for leftover in ["-wal", "-shm"] {
                #expect(!FileManager.default.fileExists(atPath: latest.appendingPathComponent("vroomx.sqlite" + leftover).path), "one file in the backup")
            }
        }
    }

    @Test("a photo damaged in a backup (shorter, or changed) is refused at restore, by the size and SHA-256 its row records")
    func damagedMedia() async throws {
        let server = try await TestServer.make(.sqlite)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let configuration = server.services.configuration
        let root = Self.backupsFolder(beside: configuration)
        try await server.run { api in
            try await Self.addReceipt(api, alpha, size: 6_000)
            let (backup, _) = try Backup.create(configuration, into: root)
            let live = try DatabaseQueue(path: configuration.sqlitePath)
            let key = try #require(try await live.read { try String.fetchOne($0, sql: "SELECT storage_key FROM receipt_photos") })
            let photo = backup.appendingPathComponent("media").appendingPathComponent(key)
            let original = try Data(contentsOf: photo)
            for damaged in [original.prefix(2), Data(original.reversed())] {
                try FileManager.default.removeItem(at: photo)  // a hard link to the live file: never write through it
                try damaged.write(to: photo)
                var restored = configuration
                restored.dataDirectory = root.appendingPathComponent("restored-\(UUID().uuidString.prefix(6))")
                restored.mediaDirectory = nil
                #expect(performing: { try Backup.restore(backup, into: restored) }, throws: { "\($0)".contains(key) })
                #expect(!FileManager.default.fileExists(atPath: restored.sqlitePath), "nothing restored")
            }
            #expect(try Data(contentsOf: configuration.resolvedMediaDirectory.appendingPathComponent(key)) == original, "the server's own file untouched")
        }
    }

    @Test("a stray file deep in the media folder (a path over 1,000 bytes) is left out; the others are backed up and linked")
    func deepStrayFile() async throws {
        let server = try await TestServer.make(.sqlite)
        let configuration = server.services.configuration
        let root = Self.backupsFolder(beside: configuration)
        var folder = configuration.resolvedMediaDirectory.appendingPathComponent("stray")
        for letter in ["D", "E", "F", "G", "H"] { folder.appendPathComponent(String(repeating: letter, count: 200)) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("deep".utf8).write(to: folder.appendingPathComponent("x.jpg"))
        try Data("near".utf8).write(to: configuration.resolvedMediaDirectory.appendingPathComponent("stray/near.jpg"))
        #expect(folder.path.utf8.count > 1_024)
        try await server.run { _ in
            for second in 0..<6 {
                // On a thread of its own, as the server's schedule runs it (a damaged heap shows when such a thread ends).
                let (_, manifest) = try await Backup.offThread {
                    try Backup.create(configuration, into: root, keep: 2, now: Date(timeIntervalSince1970: 1_800_000_000 + Double(second)))
                }
                #expect(manifest.mediaFiles == 1 && manifest.mediaLinked == (second == 0 ? 0 : 1), "\(manifest)")
            }
        }
    }

    static func backupsFolder(beside configuration: ServerConfiguration) -> URL {
        configuration.dataDirectory.deletingLastPathComponent().appendingPathComponent("backups-\(UUID().uuidString.prefix(8))")
    }

    /// A receipt photo on the fixture's first expense: a file in the media folder a row names.
    static func addReceipt(_ api: TestAPI, _ carrier: CarrierFixture, size: Int) async throws {
        let expense = try #require(carrier.expenses[carrier.trips[0][0].id]?.first).id
        #expect(try await api.call(.addExpenseReceipt, expense.rawValue, bytes: MediaSamples.jpeg(size: size), token: carrier.driver.accessToken).status == 201)
    }
}
