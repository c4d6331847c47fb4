import ArgumentParser
import Foundation
import VroomXModels
import VroomXServer

/// The sweep that alerts dispatch of late and at-risk orders, for a carrier
/// with many open orders: the first sweep (alerting those already late) and
/// the sweeps after it (looking again at those due by tomorrow, on time).
struct AlertBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "alerts", abstract: "The late and at-risk sweep over a carrier's open orders.")

    @Option(help: "Open orders of the carrier.") var orders = 100_000
    @Option(help: "Days their windows spread over (a share already past).") var days = 100
    @Option(help: "Runs of the steady sweep (the median is reported).") var runs = 5
    @Option(help: "PostgreSQL admin URL (default: SQLite).") var postgres: String?

    func run() async throws {
        let services = try await ServerServices.make(try await BenchScratch.configuration(postgres: postgres))
        let store = services.store
        let (tenant, _) = try await store.people.createTenant(name: "Alert Bench", dispatcherEmail: "dispatch@alerts.bench.example")
        let today = LocalDate(Date())
        let seeding = ContinuousClock.now
        for first in stride(from: 0, to: orders, by: 1_000) {
            let batch = (first..<min(first + 1_000, orders)).map { index in
                // Windows from 5 days ago to `days - 5` days ahead: about 5 % late already, 2 % due by tomorrow.
                let day = today.adding(days: index % days - 5)
                return CreateOrderRequest(number: "A-\(index)", vehicle: Vehicle(year: 2022, make: "Kia", model: "Soul", vin: ""),
                                          pickup: Stop(address: "Joliet, IL", windowStart: day),
                                          delivery: Stop(address: "Gary, IN", windowStart: day.adding(days: 2)), revenueCents: 50_000)
            }
            _ = try await store.orders.createMany(batch, tenant: tenant.id)
        }
        print("\(orders) open orders, windows over \(days) days, \(postgres == nil ? "SQLite" : "PostgreSQL"); "
              + String(format: "seeded in %.0f s", SettlementBench.seconds(ContinuousClock.now - seeding)))
        var began = ContinuousClock.now
        let alerted = try await store.orderAlerts.sweep()
        print(String(format: "first sweep: %d alerted in %.0f ms", alerted, SettlementBench.seconds(ContinuousClock.now - began) * 1000))
        var times: [Double] = []
        for _ in 0..<runs {
            began = ContinuousClock.now
            let again = try await store.orderAlerts.sweep()
            times.append(SettlementBench.seconds(ContinuousClock.now - began) * 1000)
            guard again == 0 else { throw ValidationError("a steady sweep alerted \(again) again") }
        }
        times.sort()
        print(String(format: "steady sweep (nothing new, the orders due by tomorrow looked at again): %.1f ms median, fastest %.1f",
                     times[times.count / 2], times[0]))
    }
}
