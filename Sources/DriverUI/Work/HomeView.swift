#if canImport(SwiftUI)
import DriverKit
import VroomXModels
import SwiftUI

/// Home: the trip on the road (or the next one) and the next stop.
struct HomeView: View {
    let app: DriverApp
    let model: HomeViewModel

    var body: some View {
        NavigationStack {
            List {
                let state = model.state
                if let trip = state.currentTrip {
                    Section("Current trip") {
                        NavigationLink(value: trip.id) { TripRow(trip: trip) }
                    }
                } else {
                    Section { Text("No trip assigned yet. Dispatch will send you one.") }
                }
                if let next = state.nextStop {
                    Section("Next stop") {
                        NavigationLink(value: next.order.id) {
                            VStack(alignment: .leading, spacing: 4) {
                                Text("\(next.kind == .pickup ? "Pick up" : "Deliver") \(next.order.number)").font(.headline)
                                Text(next.stop.name.isEmpty ? next.stop.address : "\(next.stop.name), \(next.stop.address)")
                                if let eta = next.eta {
                                    Text("Your ETA: \(eta.formatted(date: .abbreviated, time: .shortened))").foregroundStyle(.secondary)
                                }
                            }
                            .accessibilityElement(children: .combine)
                        }
                    }
                }
                if !state.upcomingTrips.isEmpty {
                    Section("Coming up") {
                        ForEach(state.upcomingTrips) { trip in NavigationLink(value: trip.id) { TripRow(trip: trip) } }
                    }
                }
            }
            .navigationTitle(title)
            .navigationDestination(for: ID<Trip>.self) { TripDetailView(app: app, model: TripDetailViewModel(app: app, trip: $0)) }
            .navigationDestination(for: ID<Order>.self) { OrderDetailView(app: app, model: OrderDetailViewModel(app: app, order: $0)) }
            .refreshable { await app.syncNow() }
        }
    }

    /// "Hi, Alex", or "Home" before the driver's name is known.
    private var title: String {
        guard let name = model.state.driverName, let first = name.split(separator: " ").first else { return "Home" }
        return "Hi, \(first)"
    }
}

struct TripRow: View {
    let trip: Trip

    var body: some View {
        VStack(alignment: .leading, spacing: 4) {
            HStack {
                Text(trip.number).font(.headline)
                Spacer()
                Text(trip.status.title).font(.caption).padding(4).background(.quaternary, in: Capsule())
            }
            Text("\(trip.origin) → \(trip.destination)").font(.subheadline)
            Text("\(trip.miles) mi · pay \(MoneyFormat.dollars(trip.driverPayCents))").font(.caption).foregroundStyle(.secondary)
        }
        .accessibilityElement(children: .combine)
    }
}
#endif
