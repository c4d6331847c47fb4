import ArgumentParser
import Foundation
import VroomXModels
import VroomXServer

/// `vroomx backup` and `vroomx restore` for a carrier of a given size: a
/// first backup (every file copied), the next one (unchanged files hard
/// linked), and a restore with its checks.
struct BackupBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "backup", abstract: "Backup and restore times for a carrier's database and media.")

    @Option(help: "Orders in the database.") var orders = 50_000
    @Option(help: "Media in MB (files of 2.5 MB, as a phone's photo).") var mediaMB = 5_000
    @Option(help: "Also back up to this existing bucket (s3://bucket/prefix; endpoint and keys from VROOMX_BACKUP_S3_*), e.g. a local moto_server's.")
    var bucket: String?

    func run() async throws {
        var configuration = try await BenchScratch.configuration(postgres: nil)
        configuration.databaseTimeout = .seconds(600)
        let services = try await ServerServices.make(configuration)
        let store = services.store
        let (tenant, _) = try await store.people.createTenant(name: "Backup Bench", dispatcherEmail: "dispatch@backup.bench.example")
        let seeding = ContinuousClock.now
        // Orders in batches (the CSV import's path: many in one transaction).
        var made = 0
        while made < orders {
            let batch = (made..<min(orders, made + 500)).map { index in
                CreateOrderRequest(number: "O-\(index)", vehicle: Vehicle(year: 2020, make: "Toyota", model: "Camry", vin: ""),
                                   pickup: Stop(name: "Lot \(index % 97)", address: "\(index) Harbor Rd, Savannah, GA"),
                                   delivery: Stop(name: "Dealer \(index % 89)", address: "\(index) Main St, Orlando, FL"), revenueCents: 90_000)
            }
            _ = try await store.orders.createMany(batch, tenant: tenant.id)
            made += batch.count
        }
        // Media: files named as stored keys are, 2.5 MB each.
        let media = configuration.resolvedMediaDirectory
        let file = [UInt8](repeating: 0x5A, count: 2_500 << 10)
        let files = max(1, mediaMB * 1024 / 2_500)
        for index in 0..<files {
            let folder = media.appendingPathComponent("\(tenant.id)/inspections/\(index / 100)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(file).write(to: folder.appendingPathComponent("photo-\(index).jpg"))
        }
        let databaseBytes = (try FileManager.default.attributesOfItem(atPath: configuration.sqlitePath)[.size] as? NSNumber)?.int64Value ?? 0
        print(String(format: "%d orders (database %.0f MB), %d media files (%.1f GB); seeded in %.0f s", orders, Double(databaseBytes) / 1_048_576,
                     files, Double(files * file.count) / 1_073_741_824, SettlementBench.seconds(ContinuousClock.now - seeding)))
        let root = configuration.dataDirectory.deletingLastPathComponent().appendingPathComponent("backups")
        func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
            let began = ContinuousClock.now
            let value = try body()
            return (value, SettlementBench.seconds(ContinuousClock.now - began))
        }
        let ((_, first), firstSeconds) = try timed { try Backup.create(configuration, into: root, now: Date()) }
        let ((folder, second), secondSeconds) = try timed { try Backup.create(configuration, into: root, now: Date().addingTimeInterval(1)) }
        var restored = configuration
        restored.dataDirectory = root.appendingPathComponent("restored")
        restored.mediaDirectory = nil
        let (_, restoreSeconds) = try timed { try Backup.restore(folder, into: restored) }
        print(String(format: "first backup: %.1f s (%d files copied); next backup: %.1f s (%d of %d linked); restore with checks: %.1f s",
                     firstSeconds, first.mediaFiles - first.mediaLinked, secondSeconds, second.mediaLinked, second.mediaFiles, restoreSeconds))
        if let bucket {
            let target = try BackupTarget.parse(bucket, environment: ProcessInfo.processInfo.environment)
            func timed<T>(_ body: () async throws -> T) async rethrows -> (T, Double) {
                let began = ContinuousClock.now
                let value = try await body()
                return (value, SettlementBench.seconds(ContinuousClock.now - began))
            }
            let ((_, first), firstSeconds) = try await timed { try await target.backUp(configuration, keep: nil, now: Date().addingTimeInterval(2)) }
            let ((location, second), secondSeconds) = try await timed { try await target.backUp(configuration, keep: nil, now: Date().addingTimeInterval(3)) }
            var restored = configuration
            restored.dataDirectory = root.appendingPathComponent("restored-from-bucket")
            restored.mediaDirectory = nil
            let (_, restoreSeconds) = try await timed { try await BackupTarget.restore(location, environment: ProcessInfo.processInfo.environment, into: restored) }
            print(String(format: "to %@: first backup: %.1f s (%d files sent); next backup: %.1f s (%d of %d already there); restore with checks: %.1f s",
                         bucket, firstSeconds, first.mediaFiles - first.mediaLinked, secondSeconds, second.mediaLinked, second.mediaFiles, restoreSeconds))
        }
        await services.database.close()
    }
}
