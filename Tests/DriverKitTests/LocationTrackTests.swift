import DriverKit
import Foundation
import Testing
import VroomXModels

/// Recorded routes for the replay provider: GPX and CSV, their limits, and
/// how a fast replay stamps its positions.
@Suite("Location tracks")
struct LocationTrackTests {
    @Test("a GPX track keeps its spacing and accuracy; points without times are 5 s apart")
    func gpx() throws {
        let track = try Track.parse("""
            <gpx><trk><trkseg>
            <trkpt lat="32.0" lon="-81.0"><time>2026-11-01T14:00:00Z</time><hdop>2</hdop></trkpt>
            <trkpt lat='32.001' lon='-81.0'><time>2026-11-01T14:00:30Z</time></trkpt>
            </trkseg></trk></gpx>
            """)
        #expect(track.points.map(\.offset) == [0, 30])
        #expect(track.points.map(\.accuracyMeters) == [10, 5])
        let untimed = try Track.parse(#"<gpx><trkpt lat="1" lon="2"></trkpt><trkpt lat="1.1" lon="2"></trkpt><trkpt lat="1.2" lon="2"/></gpx>"#)
        #expect(untimed.points.map(\.offset) == [0, 5, 10])
    }

    @Test("a CSV track takes seconds or ISO times, with or without a header")
    func csv() throws {
        #expect(try Track.parse("time,latitude,longitude,accuracy\n0,32,-81,7\n12.5,32.1,-81\n").points.map(\.offset) == [0, 12.5])
        #expect(try Track.parse("2026-11-01T14:00:00Z,32,-81\n2026-11-01T14:01:00Z,32.1,-81\n").duration == 60)
    }

    @Test("a bad track is refused with where it is wrong", arguments: [
        ("<gpx><trkpt lat=\"95\" lon=\"0\"></trkpt></gpx>", "Track point 1"),
        ("0,32,-81\n", "fewer than two"),
        ("10,32,-81\n5,32.1,-81\n", "backwards"),
        ("0,32,-81\n1e308,32.1,-81\n", "out of range"),
        ("0,32,-81\n700000,32.1,-81\n", "more than 7 days"),
        ("0,32,-81\nnoon,32.1,-81\n", "unreadable time"),
        ("0,32\n1,33\n", "Line 1"),
    ])
    func refused(_ text: String, _ says: String) {
        #expect(throws: Track.Problem.self) { try Track.parse(text) }
        do { _ = try Track.parse(text) } catch { #expect(error.description.contains(says), "\(error.description)") }
    }

    @Test("a replay 1,000 times faster keeps the track's spacing and never stamps the future")
    func replay() async throws {
        let track = try Track.parse("0,32,-81\n60,32.001,-81\n120,32.002,-81\n")
        let started = Date()
        var fixes: [GeoPosition] = []
        for await fix in ReplayLocationProvider(track: track, speed: 1_000).positions() { fixes.append(fix) }
        let ended = Date()
        #expect(fixes.count == 3)
        #expect(fixes.map { $0.recordedAt.timeIntervalSince(fixes[0].recordedAt).rounded() } == [0, 60, 120])
        // The last point is stamped as the replay ends: after it began, and not after it ended.
        #expect(fixes[2].recordedAt >= started && fixes[2].recordedAt <= ended, "\(started) \(fixes[2].recordedAt) \(ended)")
    }
}
