import Foundation
import VroomXModels

/// Where the phone's positions come from: Core Location on Apple platforms
/// (`CoreLocationProvider`), a recorded track replayed on Linux and in tests
/// (`ReplayLocationProvider`).
public protocol LocationProvider: Sendable {
    /// Positions as they are fixed, until the stream ends or is cancelled.
    func positions() -> AsyncStream<GeoPosition>
}

/// One position now, to say where a photo was taken when no recent fix is
/// at hand (before the trip is under way, say): Core Location on a phone.
public protocol PositionFinder: Sendable {
    /// The phone's position, or nil if none comes within `limit` (no
    /// permission, no sky).
    func currentPosition(within limit: Duration) async -> GeoPosition?
}

/// A recorded route: points with their offset from the start.
public struct Track: Sendable, Hashable {
    public struct Point: Sendable, Hashable {
        public var offset: TimeInterval
        public var latitude: Double
        public var longitude: Double
        public var accuracyMeters: Double
    }

    public var points: [Point]
    public var duration: TimeInterval { points.last?.offset ?? 0 }

    /// Points without times are this far apart.
    static let untimedSpacing: TimeInterval = 5
    static let maxPoints = 200_000

    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    /// A GPX file's track points (`<trkpt lat lon>` with `<time>` and
    /// optionally `<hdop>`), or a CSV of `time,latitude,longitude[,accuracy]`
    /// where time is ISO 8601 or seconds from the start.
    public static func parse(_ text: String) throws(Problem) -> Track {
        let track = text.contains("<trkpt") ? try gpx(text) : try csv(text)
        guard track.points.count >= 2 else { throw Problem(description: "The track has fewer than two points.") }
        return track
    }

    static func gpx(_ text: String) throws(Problem) -> Track {
        var points: [Point] = []
        var start: Date?
        for (index, chunk) in text.components(separatedBy: "<trkpt").dropFirst().enumerated() {
            guard points.count < maxPoints else { throw Problem(description: "The track has more than \(maxPoints) points.") }
            let element = chunk.components(separatedBy: "</trkpt>")[0]
            guard let latitude = attribute("lat", in: element).flatMap(Double.init),
                  let longitude = attribute("lon", in: element).flatMap(Double.init),
                  GeoPoint(latitude: latitude, longitude: longitude).isValid else {
                throw Problem(description: "Track point \(index + 1) has no valid lat and lon.")
            }
            var offset = Double(index) * untimedSpacing
            if let time = child("time", in: element) {
                guard let date = WireTime.parse(time) else { throw Problem(description: "Track point \(index + 1) has an unreadable time \(time).") }
                start = start ?? date
                offset = date.timeIntervalSince(start ?? date)
            }
            let hdop = child("hdop", in: element).flatMap(Double.init)
            points.append(Point(offset: offset, latitude: latitude, longitude: longitude, accuracyMeters: hdop.map { $0 * 5 } ?? 5))
        }
        return try ordered(points)
    }

    static func csv(_ text: String) throws(Problem) -> Track {
        var points: [Point] = []
        var start: Date?
        for (index, line) in text.split(whereSeparator: \.isNewline).enumerated() {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if index == 0, fields.first.map({ Double($0) == nil && WireTime.parse($0) == nil }) == true { continue }  // a header
            guard points.count < maxPoints else { throw Problem(description: "The track has more than \(maxPoints) lines.") }
            guard fields.count >= 3, let latitude = Double(fields[1]), let longitude = Double(fields[2]),
                  GeoPoint(latitude: latitude, longitude: longitude).isValid else {
                throw Problem(description: "Line \(index + 1) is not time,latitude,longitude[,accuracy].")
            }
            let offset: TimeInterval
            if let seconds = Double(fields[0]), seconds.isFinite {
                offset = seconds
            } else if let date = WireTime.parse(fields[0]) {
                start = start ?? date
                offset = date.timeIntervalSince(start ?? date)
            } else {
                throw Problem(description: "Line \(index + 1) has an unreadable time \(fields[0]).")
            }
            let accuracy = fields.count > 3 ? Double(fields[3]) ?? 5 : 5
            points.append(Point(offset: offset, latitude: latitude, longitude: longitude, accuracyMeters: accuracy))
        }
        return try ordered(points)
    }

    private static func ordered(_ points: [Point]) throws(Problem) -> Track {
        for (index, point) in points.enumerated() where !point.offset.isFinite || abs(point.offset) > 1e10 {
            throw Problem(description: "Point \(index + 1) has a time out of range.")
        }
        for (a, b) in zip(points, points.dropFirst()) where b.offset < a.offset {
            throw Problem(description: "The track's times go backwards at \(b.latitude), \(b.longitude).")
        }
        guard let first = points.first else { return Track(points: []) }
        if let last = points.last, last.offset - first.offset > LocationRules.maxTrackDuration {
            throw Problem(description: "The track lasts more than \(Int(LocationRules.maxTrackDuration / 86_400)) days.")
        }
        return Track(points: points.map { Point(offset: $0.offset - first.offset, latitude: $0.latitude, longitude: $0.longitude,
                                                accuracyMeters: $0.accuracyMeters) })
    }

    private static func attribute(_ name: String, in element: String) -> String? {
        for quote in ["\"", "'"] {
            if let range = element.range(of: " \(name)=\(quote)"),
               let end = element[range.upperBound...].firstIndex(of: Character(quote)) {
                return String(element[range.upperBound..<end])
            }
        }
        return nil
    }

    private static func child(_ name: String, in element: String) -> String? {
        guard let open = element.range(of: "<\(name)>"), let close = element.range(of: "</\(name)>", range: open.upperBound..<element.endIndex) else {
            return nil
        }
        return element[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Drives a recorded track: each point becomes a position, `speed` times
/// faster than it was recorded. Times keep the track's own spacing (a
/// 3-minute stop is 3 minutes of positions however fast it is replayed),
/// placed so that the last point is stamped when the replay ends: no
/// position is ever from the future.
public struct ReplayLocationProvider: LocationProvider {
    public let track: Track
    public let speed: Double
    public let clock: @Sendable () -> Date

    public init(track: Track, speed: Double, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.track = track
        self.speed = max(speed, 1)
        self.clock = clock
    }

    public func positions() -> AsyncStream<GeoPosition> {
        let (track, speed, clock) = (track, speed, clock)
        return AsyncStream { continuation in
            let task = Task {
                let startedAt = clock()
                let origin = startedAt.addingTimeInterval(-track.duration * (1 - 1 / speed))
                for point in track.points {
                    let due = startedAt.addingTimeInterval(point.offset / speed)
                    let wait = due.timeIntervalSince(clock())
                    if wait > 0 { try? await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
                    if Task.isCancelled { break }
                    continuation.yield(GeoPosition(latitude: point.latitude, longitude: point.longitude, accuracyMeters: point.accuracyMeters,
                                                   recordedAt: min(origin.addingTimeInterval(point.offset), clock())))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

#if canImport(CoreLocation)
import CoreLocation

/// The phone's own positions (Apple platforms; compiled on a Mac, not on
/// Linux). `LocationRecorder.follow` asks for them only once a trip is under
/// way, so the "when in use" permission prompt comes then, at the first
/// trip, not at launch. While they flow, a background activity session keeps
/// them coming with the app in the background (the app declares the
/// `location` background mode; the status bar shows the location
/// indicator). Letting go of the stream ends both.
public struct CoreLocationProvider: LocationProvider {
    public init() {}

    public func positions() -> AsyncStream<GeoPosition> {
        AsyncStream { continuation in
            let task = Task { @MainActor in
                let manager = CLLocationManager()
                if manager.authorizationStatus == .notDetermined { manager.requestWhenInUseAuthorization() }
                let background = CLBackgroundActivitySession()
                defer { background.invalidate() }
                do {
                    for try await update in CLLocationUpdate.liveUpdates(.automotiveNavigation) {
                        guard let location = update.location else { continue }
                        continuation.yield(GeoPosition(
                            latitude: location.coordinate.latitude, longitude: location.coordinate.longitude,
                            accuracyMeters: location.horizontalAccuracy >= 0 ? location.horizontalAccuracy : nil,
                            recordedAt: location.timestamp,
                            speedMetersPerSecond: location.speed >= 0 ? location.speed : nil,
                            heading: location.course >= 0 ? location.course : nil))
                    }
                } catch {}
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

extension CoreLocationProvider: PositionFinder {
    /// The first fix of a stream of positions, or nil at `limit`.
    public func currentPosition(within limit: Duration) async -> GeoPosition? {
        await withTaskGroup(of: GeoPosition?.self) { group in
            group.addTask { for await fix in positions() { return fix }; return nil }
            group.addTask { try? await Task.sleep(for: limit); return nil }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
#endif
