import Crypto
import Foundation
import VroomXModels

/// The map under the console's positions when the carrier has no tile
/// server: land and water, state and country borders, the interstates and
/// the cities, from `MapData/basemap.json` (public-domain sources, made by
/// `scripts/basemap/build.py`). Read once, kept projected; a view is drawn
/// by scaling, keeping points a pixel or more apart.
struct BaseMap: Sendable {
    /// A point in the canvas's projection (`MapCanvas.project`).
    struct Projected: Sendable {
        let x: Double
        let y: Double
    }

    struct Bounds: Sendable {
        let minX: Double, minY: Double, maxX: Double, maxY: Double

        init(_ points: [Projected]) {
            minX = points.map(\.x).min() ?? 0
            maxX = points.map(\.x).max() ?? 0
            minY = points.map(\.y).min() ?? 0
            maxY = points.map(\.y).max() ?? 0
        }

        init(minX: Double, minY: Double, maxX: Double, maxY: Double) {
            (self.minX, self.minY, self.maxX, self.maxY) = (minX, minY, maxX, maxY)
        }

        func meets(_ other: Bounds) -> Bool {
            minX <= other.maxX && other.minX <= maxX && minY <= other.maxY && other.minY <= maxY
        }
    }

    struct Line: Sendable {
        let points: [Projected]
        let bounds: Bounds

        init(_ points: [GeoPoint]) {
            self.points = points.map { let (x, y) = MapCanvas.project($0); return Projected(x: x, y: y) }
            bounds = Bounds(self.points)
        }
    }

    struct Road: Sendable {
        let name: String
        let line: Line
    }

    struct City: Sendable {
        let name: String
        let region: String
        /// 1: named on a map of the whole country; 2: of a region; 3: closer in.
        let tier: Int
        let point: GeoPoint
    }

    let states: [Line]
    let countries: [Line]
    let roads: [Road]
    let cities: [City]
    let sources: String
    /// Changes with the data, so browsers never keep a drawing of older data.
    let version: String

    /// The map shipped with the server; nil only if the package lost its resource.
    static let shipped: BaseMap? = {
        guard let folder = Bundle.module.url(forResource: "MapData", withExtension: nil),
              let data = try? Data(contentsOf: folder.appendingPathComponent("basemap.json")) else { return nil }
        return try? BaseMap(json: data)
    }()

    init(json data: Data) throws {
        let file = try JSONDecoder().decode(File.self, from: data)
        states = file.states.flatMap { $0.rings.map { Line(Self.points($0)) } }
        countries = file.countries.flatMap { $0.rings.map { Line(Self.points($0)) } }
        roads = file.interstates.map { Road(name: $0.name, line: Line(Self.points($0.points))) }
        cities = file.cities.map { City(name: $0.name, region: $0.region, tier: $0.tier, point: GeoPoint(latitude: $0.latitude, longitude: $0.longitude)) }
        sources = file.sources
        version = SHA256.hash(data: data).prefix(6).map { String(format: "%02x", $0) }.joined()
    }

    private struct File: Decodable {
        struct Area: Decodable {
            let rings: [[Int]]
        }
        struct Road: Decodable {
            let name: String
            let points: [Int]
        }
        struct City: Decodable {
            let name: String
            let region: String
            let latitude: Double
            let longitude: Double
            let tier: Int
        }
        let sources: String
        let states: [Area]
        let countries: [Area]
        let interstates: [Road]
        let cities: [City]
    }

    /// Thousandths of a degree, longitude then latitude, each pair after the
    /// first as the difference from the one before.
    private static func points(_ deltas: [Int]) -> [GeoPoint] {
        var (longitude, latitude) = (0, 0)
        return stride(from: 0, to: deltas.count - 1, by: 2).map { index in
            longitude += deltas[index]
            latitude += deltas[index + 1]
            return GeoPoint(latitude: Double(latitude) / 1000, longitude: Double(longitude) / 1000)
        }
    }

    // MARK: Drawing

    /// The cities to name on a canvas, most important first: the largest on
    /// a map of the country, more as it comes closer.
    func cities(on canvas: MapCanvas) -> [(city: City, x: Double, y: Double)] {
        let tiers = canvas.scale >= 3000 ? 3 : canvas.scale >= 1200 ? 2 : 1
        return cities.filter { $0.tier <= tiers }.compactMap { city in
            let (x, y) = canvas.xy(city.point)
            guard (8...(MapCanvas.width - 8)).contains(x), (8...(MapCanvas.height - 8)).contains(y) else { return nil }
            return (city, x, y)
        }
    }

    /// The base map of a canvas as an SVG document (an image the page puts
    /// under its shapes).
    func svg(for canvas: MapCanvas) -> String {
        let view = canvas.visible(margin: 0.5)
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(Int(MapCanvas.width)) \(Int(MapCanvas.height))" \
            width="\(Int(MapCanvas.width))" height="\(Int(MapCanvas.height))">\
            <style>.water{fill:#dfe9f2}.land{fill:#f8f6f0;stroke:none}.state{fill:none;stroke:#c3cad3;stroke-width:.8}\
            .country{fill:none;stroke:#97a3b1;stroke-width:1.2}.road{fill:none;stroke:#eab07a;stroke-width:1.4;stroke-linejoin:round}\
            .shield rect{fill:#fff;stroke:#c7843f;stroke-width:1}.shield text{font:600 9px system-ui,sans-serif;fill:#7a4a17;text-anchor:middle}</style>\
            <rect class="water" width="100%" height="100%"/>
            """
        // Each outline once, filled as land and stroked as a border.
        svg += "<defs><path id=\"states\" d=\"\(Self.path(states, canvas, view, closed: true))\"/>"
        svg += "<path id=\"countries\" d=\"\(Self.path(countries, canvas, view, closed: true))\"/></defs>"
        svg += "<use href=\"#countries\" class=\"land\"/><use href=\"#states\" class=\"land\"/>"
        svg += "<use href=\"#states\" class=\"state\"/><use href=\"#countries\" class=\"country\"/>"
        svg += "<path class=\"road\" d=\"\(Self.path(roads.map(\.line), canvas, view, closed: false))\"/>"
        for shield in shields(on: canvas) {
            let width = Double(shield.number.count) * 6 + 8
            svg += "<g class=\"shield\"><rect x=\"\(Self.text(shield.x - width / 2))\" y=\"\(Self.text(shield.y - 7))\" "
                + "width=\"\(Self.text(width))\" height=\"14\" rx=\"3\"/><text x=\"\(Self.text(shield.x))\" y=\"\(Self.text(shield.y + 3))\">"
                + "\(shield.number)</text></g>"
        }
        return svg + "</svg>"
    }

    /// One marker per interstate in view (its number), at the route's point
    /// nearest the middle of the canvas, none within 90 px of another.
    func shields(on canvas: MapCanvas) -> [(number: String, x: Double, y: Double)] {
        let view = canvas.visible(margin: 0.5)
        let middle = (x: MapCanvas.width / 2, y: MapCanvas.height / 2)
        var placed: [(number: String, x: Double, y: Double)] = []
        for road in roads where road.line.bounds.meets(view) {
            let inside = zip(road.line.points, road.line.points.dropFirst()).map { a, b in
                canvas.screen(Projected(x: (a.x + b.x) / 2, y: (a.y + b.y) / 2))
            }.filter { (24...(MapCanvas.width - 24)).contains($0.x) && (16...(MapCanvas.height - 16)).contains($0.y) }
            guard let spot = inside.min(by: { hypot($0.x - middle.x, $0.y - middle.y) < hypot($1.x - middle.x, $1.y - middle.y) }),
                  !placed.contains(where: { hypot($0.x - spot.x, $0.y - spot.y) < 90 }) else { continue }
            placed.append((String(road.name.dropFirst(2)), spot.x, spot.y))
        }
        return placed
    }

    /// SVG path data of the lines meeting the view, in canvas pixels,
    /// clipped to the canvas and a 16 px margin (an outline along the cut
    /// is out of sight): rings as polygons, so the land stays filled; routes
    /// segment by segment, so a long straight stretch keeps its course.
    /// Points closer than a pixel to the last one drawn are left out.
    private static func path(_ lines: [Line], _ canvas: MapCanvas, _ view: Bounds, closed: Bool) -> String {
        var data = ""
        let clip = Bounds(minX: -16, minY: -16, maxX: MapCanvas.width + 16, maxY: MapCanvas.height + 16)
        for line in lines where line.bounds.meets(view) {
            let corner = canvas.screen(Projected(x: line.bounds.maxX, y: line.bounds.maxY))
            let origin = canvas.screen(Projected(x: line.bounds.minX, y: line.bounds.minY))
            guard corner.x - origin.x >= 1.5 || corner.y - origin.y >= 1.5 else { continue }  // an island smaller than a dot
            let points = line.points.map { canvas.screen($0) }
            if closed {
                let ring = Clipping.polygon(points, to: clip)
                guard ring.count >= 3 else { continue }
                data += Self.drawn(ring) + "Z"
            } else {
                for run in Clipping.polyline(points, to: clip) { data += Self.drawn(run) }
            }
        }
        return data
    }

    /// "M x y L x y …", leaving out points within a pixel of the last one drawn (never the last).
    private static func drawn(_ points: [(x: Double, y: Double)]) -> String {
        var data = ""
        var last: (x: Double, y: Double)?
        for (index, point) in points.enumerated() {
            if let last, abs(point.x - last.x) < 1, abs(point.y - last.y) < 1, index != points.count - 1 { continue }
            data += (last == nil ? "M" : "L") + text(point.x) + " " + text(point.y)
            last = point
        }
        return data
    }

    /// A pixel position with one decimal, as cheaply as it can be written.
    private static func text(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        let whole = abs(tenths) / 10, tenth = abs(tenths) % 10
        return (tenths < 0 ? "-" : "") + (tenth == 0 ? "\(whole)" : "\(whole).\(tenth)")
    }
}

/// Cutting shapes to a rectangle: polygons by Sutherland–Hodgman (the cut
/// runs along the rectangle's edge), polylines by Liang–Barsky (a line
/// leaving and coming back is two runs).
enum Clipping {
    typealias Point = (x: Double, y: Double)

    static func polygon(_ points: [Point], to box: BaseMap.Bounds) -> [Point] {
        // Each edge keeps what is on its inner side: x ≥ minX, x ≤ maxX, y ≥ minY, y ≤ maxY.
        let edges: [(inside: (Point) -> Bool, cross: (Point, Point) -> Point)] = [
            ({ $0.x >= box.minX }, { at(x: box.minX, $0, $1) }), ({ $0.x <= box.maxX }, { at(x: box.maxX, $0, $1) }),
            ({ $0.y >= box.minY }, { at(y: box.minY, $0, $1) }), ({ $0.y <= box.maxY }, { at(y: box.maxY, $0, $1) }),
        ]
        var output = points
        for edge in edges {
            guard var previous = output.last else { return [] }
            let input = output
            output = []
            for current in input {
                switch (edge.inside(previous), edge.inside(current)) {
                case (true, true): output.append(current)
                case (true, false): output.append(edge.cross(previous, current))
                case (false, true): output += [edge.cross(previous, current), current]
                case (false, false): break
                }
                previous = current
            }
        }
        return output
    }

    static func polyline(_ points: [Point], to box: BaseMap.Bounds) -> [[Point]] {
        var runs: [[Point]] = []
        var run: [Point] = []
        for (a, b) in zip(points, points.dropFirst()) {
            guard let (from, to) = segment(a, b, to: box) else {
                if !run.isEmpty { runs.append(run); run = [] }
                continue
            }
            if let last = run.last, last.x == from.x, last.y == from.y {
                run.append(to)
            } else {
                if !run.isEmpty { runs.append(run) }
                run = [from, to]
            }
        }
        if !run.isEmpty { runs.append(run) }
        return runs
    }

    /// The part of segment a–b inside the box, or nil (Liang–Barsky).
    static func segment(_ a: Point, _ b: Point, to box: BaseMap.Bounds) -> (Point, Point)? {
        let dx = b.x - a.x, dy = b.y - a.y
        var enter = 0.0, leave = 1.0
        for (p, q) in [(-dx, a.x - box.minX), (dx, box.maxX - a.x), (-dy, a.y - box.minY), (dy, box.maxY - a.y)] {
            if p == 0 {
                if q < 0 { return nil }  // parallel to this edge and outside it
                continue
            }
            let t = q / p
            if p < 0 { enter = max(enter, t) } else { leave = min(leave, t) }
            if enter > leave { return nil }
        }
        let from = enter == 0 ? a : (x: a.x + enter * dx, y: a.y + enter * dy)
        let to = leave == 1 ? b : (x: a.x + leave * dx, y: a.y + leave * dy)
        return (from, to)
    }

    private static func at(x: Double, _ a: Point, _ b: Point) -> Point {
        (x, a.y + (x - a.x) / (b.x - a.x) * (b.y - a.y))
    }

    private static func at(y: Double, _ a: Point, _ b: Point) -> Point {
        (a.x + (y - a.y) / (b.y - a.y) * (b.x - a.x), y)
    }
}
