import ArgumentParser
import Foundation
import Hummingbird
import LocalAPNs
import Logging
import VroomXModels
import VroomXServer

/// Pushes per second from the durable queue to a local server speaking the
/// APNs provider API (HTTP/2 over TLS, token checked on every request),
/// through the server's real push service: claim from the database, send
/// over one multiplexed connection, record the outcome.
struct PushBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "Pushes/s through one HTTP/2 connection to a local APNs-protocol server.")

    @Option(help: "Messages per run (each goes to every device).") var messages = 1000
    @Option(help: "iOS devices of the driver.") var devices = 5
    @Option(help: "Runs (the median is reported).") var runs = 3
    @Option(help: "PostgreSQL URL (default: SQLite).") var postgres: String?

    func run() async throws {
        let apns = try await LocalAPNsServer.started()
        defer { Task { await apns.stop() } }
        var configuration = try await BenchScratch.configuration(postgres: postgres)
        configuration.apns = APNsConfiguration(privateKeyPEM: apns.providerKeyPEM, keyID: apns.keyID, teamID: apns.teamID, topic: apns.topic,
                                               baseURL: apns.baseURL, extraRootCertificatePEM: apns.certificatePEM)
        let setup = try await ServerServices.make(configuration)
        let (tenant, _) = try await setup.store.people.createTenant(name: "Push Bench", dispatcherEmail: "dispatch@push.bench.example")
        // A driver holds at most 500 unread messages (the store refuses more): each run writes to drivers of its own,
        // 400 messages each, every driver with `devices` phones.
        func drivers(run: Int) async throws -> [ID<Driver>] {
            var made: [ID<Driver>] = []
            for index in 0..<max(1, (messages + 399) / 400) {
                let driver = try await setup.store.people.createDriver(tenant: tenant.id, .init(
                    email: "driver-\(run)-\(index)@push.bench.example", name: "Bench Driver \(run)-\(index)", payType: .percentage, payRate: 2500))
                for device in 0..<devices {
                    let token = String(repeating: "ab", count: 20) + String(format: "%024x", run * 1_000_000 + index * 1_000 + device)
                    _ = try await setup.store.people.registerDeviceToken(.init(token: token, platform: .ios), user: driver.userID, tenant: tenant.id)
                }
                made.append(driver.id)
            }
            return made
        }
        let pushes = messages * devices
        print("push on \(postgres == nil ? "sqlite" : "postgres"): \(messages) messages × \(devices) devices = \(pushes) pushes per run")
        var rates: [Double] = []
        for run in 1...runs {
            // Fill the queue while no push service runs, as after an outage.
            let recipients = try await drivers(run: run)
            let queued = ContinuousClock.now
            for index in 0..<messages {
                _ = try await setup.store.notifications.send(.init(driverID: recipients[index % recipients.count], type: .dispatchMessage, title: "Load \(index)",
                                                            body: "Pickup moved to 7:30 at dock \(index % 12)"), tenant: tenant.id)
            }
            let enqueueSeconds = seconds(ContinuousClock.now - queued)
            let before = apns.deliveredCount
            let receivedBefore = apns.received.count
            let services = try await ServerServices.make(configuration)
            let started = ContinuousClock.now
            let app = buildApplication(services)
            let task = Task { try await app.runService(gracefulShutdownSignals: []) }
            while apns.deliveredCount == before { try await Task.sleep(for: .milliseconds(1)) }
            let firstDelivered = ContinuousClock.now
            while apns.deliveredCount < before + pushes {
                try await Task.sleep(for: .milliseconds(2))
            }
            while try await setup.store.pendingPushCount() > 0 {
                try await Task.sleep(for: .milliseconds(2))
            }
            let elapsed = seconds(ContinuousClock.now - started)
            let delivering = seconds(ContinuousClock.now - firstDelivered)
            task.cancel()
            _ = await task.result
            let round = apns.received.dropFirst(receivedBefore)
            let connections = Set(round.map(\.connection)).count
            let rate = Double(pushes) / delivering
            rates.append(rate)
            print(String(format: "run %d: %d pushes in %.2f s from the server's start, the first after %.2f s; from then %.0f pushes/s over %d connection%@ "
                         + "(%d refused by the protocol checks); queued in %.2f s",
                         run, pushes, elapsed, seconds(firstDelivered - started), rate, connections, connections == 1 ? "" : "s",
                         apns.violations.count, enqueueSeconds))
        }
        print(String(format: "median: %.0f pushes/s", rates.sorted()[rates.count / 2]))
    }

    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
