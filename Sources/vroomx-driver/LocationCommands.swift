import ArgumentParser
import DriverKit
import Foundation
import VroomXModels

struct LocationSharing: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "location", abstract: "Show, pause or resume sharing your position with dispatch (only ever during a trip).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "on or off (leave out to see where sharing stands).") var state: String?

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            switch state?.lowercased() {
            case nil: break
            case "on": try session.app.setLocationSharing(true)
            case "off": try session.app.setLocationSharing(false)
            case let other?: throw CLIError(.usage, "Say on or off, not \(other).")
            }
            await session.syncIfPossible(quiet: true)
            let trip = try session.app.database.trips().first { $0.status == .inProgress }
            let sharing = session.app.locationSharing
            session.terminal.line("Sharing your location: " + (sharing ? session.terminal.style("on", .green) : session.terminal.style("paused", .yellow)))
            let explanation = switch (sharing, trip) {
            case (true, let trip?): "Dispatch sees where you are while trip \(trip.number) is under way."
            case (true, nil): "Nothing is recorded now: no trip is under way."
            case (false, _): "Nothing is recorded. Resume with: vroomx-driver location on"
            }
            session.terminal.line(explanation)
        }
    }
}

/// Drives a recorded route as if the phone were on the truck: its positions
/// are recorded and synced like the app's, and arrivals at stops are shown
/// as the server marks them.
struct Drive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Drive a recorded route (GPX or CSV): your positions go to dispatch as on the road.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "A GPX file (track points with times) or CSV of time,latitude,longitude[,accuracy].") var track: String
    @Option(help: "How much faster than recorded, e.g. 20x.") var speed: String = "1x"

    static let maxTrackBytes = 64 << 20

    func run() async throws {
        let factor = try Self.speedFactor(speed)
        let route = try Self.load(track)
        try await withSession(global) { session in
            try session.requireUnlocked()
            await session.syncIfPossible(quiet: true)
            let app = session.app
            guard app.locationSharing else { throw CLIError(.failed, "Location sharing is paused. Resume with: vroomx-driver location on") }
            guard let trip = try app.database.trips().first(where: { $0.status == .inProgress }) else {
                throw CLIError(.failed, "No trip is under way: positions are recorded only while dispatch has one of your trips in progress. "
                               + "Ask dispatch to start it (vroomx-driver trips shows where yours stand).")
            }
            let terminal = session.terminal
            let minutes = Int((route.duration / 60).rounded())
            terminal.line("Driving \(route.points.count) points (\(minutes) min) of trip \(trip.number) at \(Self.label(factor))…")
            var arrived = Set(try Self.arrivals(app))
            var batches = 0
            try await app.location.run(ReplayLocationProvider(track: route, speed: factor)) { fix, _ in
                guard app.location.counts.batches > batches else { return }
                batches = app.location.counts.batches
                await session.syncIfPossible(quiet: true)
                // An arrival the server found in these fixes comes first: it happened at or before this position.
                for arrival in try Self.arrivals(app) where !arrived.contains(arrival) {
                    arrived.insert(arrival)
                    terminal.line(terminal.style("Arrived at \(arrival.stop.rawValue) of \(arrival.number) at \(Self.clock(arrival.at))", .green))
                }
                // By the server-corrected clock, as the arrivals are (the phone's own may be wrong).
                terminal.line("\(Self.clock(app.serverClock.corrected(fix.recordedAt)))  \(fix.point.text)\(Self.nextStop(from: fix, app))")
            }
            await session.syncIfPossible(quiet: true)
            for arrival in try Self.arrivals(app) where !arrived.contains(arrival) {
                terminal.line(terminal.style("Arrived at \(arrival.stop.rawValue) of \(arrival.number) at \(Self.clock(arrival.at))", .green))
            }
            let counts = app.location.counts
            terminal.line("Recorded \(NumberText.count(counts.kept, "position")) in \(NumberText.count(counts.batches, "batch", plural: "batches"))"
                          + (counts.dropped > 0 ? " (\(NumberText.grouped(counts.dropped)) left out: inaccurate or seconds apart)" : "") + ".")
            try session.requireSessionStillActive()
            // What reached dispatch is what the server said of each batch, not what the phone recorded.
            let report = try app.database.positionReport(for: counts.batchIDs)
            let entries = try app.database.outbox().filter { counts.batchIDs.contains($0.id) }
            let waiting = entries.filter(\.isUnsynced).reduce(0) { total, entry in
                if case .recordLocations(let batch) = entry.mutation.payload { return total + batch.fixes.count }
                return total
            }
            let refused = entries.filter { $0.failure == .rejected }
            if report.batches > 0 { Render(terminal: terminal).positions(report) }
            for entry in refused { terminal.line(terminal.style(entry.refusal, .red)) }
            if waiting > 0 {
                terminal.line("\(NumberText.count(waiting, "position")) saved on this device; they reach dispatch when the server answers (vroomx-driver sync).")
                throw CLIError(.queuedOffline, "")
            }
            if !refused.isEmpty { throw CLIError(.failed, "") }
        }
    }

    struct Arrival: Hashable {
        let number: String
        let stop: StopKind
        let at: Date
    }

    /// The arrivals the phone knows of (from the feed).
    @MainActor
    static func arrivals(_ app: DriverApp) throws -> [Arrival] {
        try app.database.orders().flatMap { order in
            StopKind.allCases.compactMap { kind in order.arrived(at: kind).map { Arrival(number: order.number, stop: kind, at: $0) } }
        }
    }

    /// "· 1.5 mi to pickup of O-1001", for the nearest stop still to work
    /// (a pickup until the vehicle is on the truck, then its delivery).
    @MainActor
    static func nextStop(from fix: GeoPosition, _ app: DriverApp) -> String {
        let open = ((try? app.database.orders()) ?? []).compactMap { order -> (Order, StopKind, GeoPoint)? in
            guard let kind = order.nextStop, let point = order.stop(kind).location else { return nil }
            return (order, kind, point)
        }
        guard let (order, kind, point) = open.min(by: { fix.point.distance(to: $0.2) < fix.point.distance(to: $1.2) }) else { return "" }
        let distance = LocationRules.distanceText(fix.point.distance(to: point))
        return "  · \(distance) \(order.arrived(at: kind) == nil ? "to" : "from") \(kind.rawValue) of \(order.number)"
    }

    static func speedFactor(_ text: String) throws -> Double {
        let digits = text.lowercased().hasSuffix("x") ? String(text.dropLast()) : text
        guard digits.utf8.count <= 12, digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              let factor = Double(digits), factor.isFinite, (1...10_000).contains(factor) else {
            throw CLIError(.usage, "Give the speed as 1x to 10000x, e.g. 20x.")
        }
        return factor
    }

    static func label(_ factor: Double) -> String { factor == factor.rounded() ? "\(Int(factor))×" : "\(factor)×" }

    static func load(_ path: String) throws -> Track {
        let url = URL(fileURLWithPath: path)
        var directory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &directory) else { throw CLIError(.usage, "No track file at \(path).") }
        guard !directory.boolValue else { throw CLIError(.usage, "\(path) is a folder; give the GPX or CSV file in it.") }
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
        guard size <= maxTrackBytes else { throw CLIError(.usage, "\(path) is larger than \(maxTrackBytes >> 20) MB.") }
        do {
            return try Track.parse(String(decoding: try Data(contentsOf: url), as: UTF8.self))
        } catch let problem as Track.Problem {
            throw CLIError(.usage, "\(path): \(problem.description)")
        }
    }

    static func clock(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        return formatter.string(from: date)
    }
}
