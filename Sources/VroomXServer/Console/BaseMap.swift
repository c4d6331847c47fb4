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
        for shield in shields(on: canvas, view) {
            let width = Double(shield.number.count) * 6 + 8
            svg += "<g class=\"shield\"><rect x=\"\(Self.text(shield.x - width / 2))\" y=\"\(Self.text(shield.y - 7))\" "
                + "width=\"\(Self.text(width))\" height=\"14\" rx=\"3\"/><text x=\"\(Self.text(shield.x))\" y=\"\(Self.text(shield.y + 3))\">"
                + "\(shield.number)</text></g>"
        }
        return svg + "</svg>"
    }

    /// One marker per interstate in view (its number), at the route's point
    /// nearest the middle of the canvas, none within 90 px of another.
    private func shields(on canvas: MapCanvas, _ view: Bounds) -> [(number: String, x: Double, y: Double)] {
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

    /// SVG path data of the lines meeting the view, in canvas pixels: points
    /// closer than a pixel to the last one drawn are left out, and far
    /// outside the canvas they are held at its margin (where they collapse
    /// into one), so the drawing stays small however far a shape reaches.
    private static func path(_ lines: [Line], _ canvas: MapCanvas, _ view: Bounds, closed: Bool) -> String {
        var data = ""
        let (width, height) = (MapCanvas.width, MapCanvas.height)
        for line in lines where line.bounds.meets(view) {
            let corner = canvas.screen(Projected(x: line.bounds.maxX, y: line.bounds.maxY))
            let origin = canvas.screen(Projected(x: line.bounds.minX, y: line.bounds.minY))
            guard corner.x - origin.x >= 1.5 || corner.y - origin.y >= 1.5 else { continue }  // an island smaller than a dot
            var last: (x: Double, y: Double)?
            for (index, point) in line.points.enumerated() {
                var (x, y) = canvas.screen(point)
                x = min(max(x, -width / 2), width * 1.5)
                y = min(max(y, -height / 2), height * 1.5)
                if let last, abs(x - last.x) < 1, abs(y - last.y) < 1, index != line.points.count - 1 { continue }
                data += (last == nil ? "M" : "L") + text(x) + " " + text(y)
                last = (x, y)
            }
            if closed { data += "Z" }
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
