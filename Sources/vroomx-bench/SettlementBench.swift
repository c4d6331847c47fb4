import ArgumentParser
import Foundation
import VroomXModels
import VroomXServer

/// Driver settlements for a carrier with history: how long the Pay page's
/// figuring of every driver's open week takes, one driver's week, and an
/// approval, after `weeks` weeks of trips and expenses were settled.
struct SettlementBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "settlements",
                                                    abstract: "Figuring and approving weekly driver settlements after months of history.")

    @Option(help: "Drivers.") var drivers = 50
    @Option(help: "Weeks of settled history.") var weeks = 26
    @Option(help: "Completed trips per driver per week.") var trips = 3
    @Option(help: "Expenses per driver per week.") var expenses = 4
    @Option(help: "Runs (the median is reported).") var runs = 9
    @Option(help: "PostgreSQL admin URL (default: SQLite).") var postgres: String?

    func run() async throws {
        var configuration = try await BenchScratch.configuration(postgres: postgres)
        let start = SettlementRules.week(of: LocalDate(Date())).start.adding(days: -7 * weeks)
        let clock = ManualClock(start.startOfDay.addingTimeInterval(10 * 3600))
        configuration.clock = clock.clock
        let services = try await ServerServices.make(configuration)
        let store = services.store
        let (tenant, _) = try await store.people.createTenant(name: "Settlement Bench", dispatcherEmail: "dispatch@settlements.bench.example")
        var driverIDs: [ID<Driver>] = []
        for index in 0..<drivers {
            driverIDs.append(try await store.people.createDriver(tenant: tenant.id, .init(
                email: "driver\(index)@settlements.bench.example", name: "Driver \(index)", payType: .percentage, payRate: 2500)).id)
        }
        let seeding = ContinuousClock.now
        var number = 0
        // Each week: the drivers' trips completed and expenses recorded, an advance, then every week approved and paid.
        for week in 0...weeks {
            for driver in driverIDs {
                var last: ID<Trip>?
                for _ in 0..<trips {
                    number += 1
                    let trip = try await store.trips.create(.init(number: "T-\(number)", driverID: driver, origin: "Houston, TX",
                                                                  destination: "Atlanta, GA", revenueCents: 300_000 + number, miles: 790), tenant: tenant.id)
                    _ = try await store.trips.update(trip.id, .init(status: .inProgress), tenant: tenant.id)
                    last = try await store.trips.update(trip.id, .init(status: .completed), tenant: tenant.id).id
                }
                for _ in 0..<expenses {
                    guard let trip = last else { break }
                    _ = try await store.expenses.create(.init(id: ID(), tripID: trip, category: .fuel, amountCents: 41_237,
                                                              date: LocalDate(clock.now)), .driver(tenant: tenant.id, driver: driver))
                }
                _ = try await store.settlements.addItem(driver: driver, .init(kind: .advance, description: "Advance", amountCents: 20_000),
                                                        tenant: tenant.id)
                if week < weeks {
                    let settled = try await store.settlements.approve(driver: driver, .init(week: LocalDate(clock.now), email: false), tenant: tenant.id)
                    if let id = settled.id, settled.netCents >= 0 { _ = try await store.settlements.markPaid(id, .init(), tenant: tenant.id) }
                }
            }
            if week < weeks { clock.advance(by: 7 * 86_400) }
        }
        let backend = postgres == nil ? "SQLite" : "PostgreSQL"
        print("\(drivers) drivers × \(weeks) settled weeks of \(trips) trips and ~\(expenses) expenses each (\(number) trips), \(backend); "
              + String(format: "seeded in %.0f s", Self.seconds(ContinuousClock.now - seeding)))
        let today = LocalDate(clock.now)
        func median(_ body: () async throws -> Void) async throws -> (Double, Double) {
            var times: [Double] = []
            for _ in 0..<runs {
                let began = ContinuousClock.now
                try await body()
                times.append(Self.seconds(ContinuousClock.now - began) * 1000)
            }
            times.sort()
            return (times[times.count / 2], times[0])
        }
        let (page, pageFastest) = try await median { _ = try await store.settlements.week(today, tenant: tenant.id) }
        let (one, oneFastest) = try await median { _ = try await store.settlements.setup(driver: driverIDs[0], week: today, tenant: tenant.id) }
        var approvals: [Double] = []
        for driver in driverIDs.prefix(runs) {
            let began = ContinuousClock.now
            _ = try await store.settlements.approve(driver: driver, .init(week: today, email: false), tenant: tenant.id)
            approvals.append(Self.seconds(ContinuousClock.now - began) * 1000)
        }
        approvals.sort()
        print(String(format: "every driver's open week (the Pay page): %.1f ms median (fastest %.1f), %.2f ms a driver", page, pageFastest,
                     page / Double(drivers)))
        print(String(format: "one driver's week with entries and deductions: %.2f ms median (fastest %.2f)", one, oneFastest))
        print(String(format: "approving a driver's week: %.2f ms median of %d", approvals[approvals.count / 2], approvals.count))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
