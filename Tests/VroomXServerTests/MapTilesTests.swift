import Foundation
import Testing
import VroomXModels
@testable import VroomXServer

/// Tiles behind the console's map: a configured template, checked; the
/// tiles that cover the drawn area at a sensible zoom.
@Suite("Map tiles")
struct MapTilesTests {
    @Test("only an http(s) template with {z}, {x} and {y} and nothing that breaks out of an attribute is taken")
    func templates() throws {
        for bad in ["ftp://tiles.example/{z}/{x}/{y}.png", "https://tiles.example/{z}/{x}.png", "tiles.example/{z}/{x}/{y}.png",
                    "https://tiles.example/{z}/{x}/{y}.png\"onload=x", "https://tiles example/{z}/{x}/{y}.png",
                    "https://tiles.example/{z}/{x}/{y}.png; script-src *"] {
            #expect(MapTiles(template: bad) == nil, "\(bad)")
            #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(["VROOMX_MAP_TILE_URL": bad]) }
        }
        let tiles = try #require(MapTiles(template: "https://tile.example.com:8443/osm/{z}/{x}/{y}.png"))
        #expect(tiles.origin == "https://tile.example.com:8443")
        #expect(try ServerConfiguration.fromEnvironment(["VROOMX_MAP_TILE_URL": tiles.template]).mapTiles == tiles)
        #expect(try ServerConfiguration.fromEnvironment([:]).mapTiles == nil)
    }

    @Test("a stop ahead and every driver are always on the map; only a trail's outermost stray fixes are left out")
    func stopsStayOnTheMap() {
        // A long trail around Savannah (one fix far off, a GPS glitch), a driver there, and a delivery fence in Miami.
        var trail = (0..<200).map { GeoPoint(latitude: 32.0 + Double($0) * 0.001, longitude: -81.1 + Double($0) * 0.001) }
        trail.append(GeoPoint(latitude: 45.0, longitude: -60.0))
        let driver = GeoPoint(latitude: 32.2, longitude: -80.9)
        let miami = GeoPoint(latitude: 25.76, longitude: -80.19)
        let canvas = MapCanvas(points: [driver, miami], tracks: trail)
        for point in [driver, miami, trail[0], trail[199]] {
            let (x, y) = canvas.xy(point)
            #expect((0...MapCanvas.width).contains(x) && (0...MapCanvas.height).contains(y), "\(point) drawn at \(x), \(y)")
        }
        let (x, y) = canvas.xy(trail[200])
        #expect(!(0...MapCanvas.width).contains(x) || !(0...MapCanvas.height).contains(y), "the stray fix set the view")
    }

    @Test("the tiles cover the drawn area, at most 64, at the zoom of the drawing", arguments: [
        [GeoPoint(latitude: 32.08, longitude: -81.09), GeoPoint(latitude: 32.6, longitude: -82.3)],     // a few dozen kilometres
        [GeoPoint(latitude: 47.6, longitude: -122.3), GeoPoint(latitude: 25.76, longitude: -80.19)],     // the whole country
        [GeoPoint(latitude: 32.08, longitude: -81.09)],                                                 // one point
    ])
    func cover(_ points: [GeoPoint]) throws {
        let canvas = MapCanvas(points: points)
        let tiles = try #require(MapTiles(template: "https://t.example/{z}/{x}/{y}.png")).tiles(for: canvas)
        #expect(!tiles.isEmpty && tiles.count <= 64)
        let size = try #require(tiles.first?.size)
        #expect(size >= 128 && size <= 512, "a tile is drawn near its own size, not stretched: \(size)")
        let xs = tiles.map(\.x), ys = tiles.map(\.y)
        #expect(xs.min()! <= 0 && xs.max()! + size >= MapCanvas.width)
        #expect(ys.min()! <= 0 || ys.min()! <= MapCanvas.padding)
        #expect(ys.max()! + size >= MapCanvas.height - MapCanvas.padding)
        for tile in tiles {
            let parts = tile.href.split(separator: "/").suffix(3).map { Int($0.split(separator: ".")[0]) ?? -1 }
            let zoom = parts[0]
            #expect((0...19).contains(zoom) && (0..<(1 << zoom)).contains(parts[1]) && (0..<(1 << zoom)).contains(parts[2]), "\(tile)")
        }
    }

    @Test("labels go where they cover no mark, no other label and nothing outside the map")
    func labelsKeepApart() {
        // The demo's crowd: a driver 30 px left of the pickup fence he is heading for, another fence below.
        let driver = (x: 500.0, y: 100.0, r: 7.0), pickup = (x: 530.0, y: 114.0, r: 6.0), below = (x: 530.0, y: 140.0, r: 6.0)
        var labels = MapLabels(marks: [driver, pickup, below])
        let name = labels.place("Alex Rivera", x: driver.x, y: driver.y, r: driver.r)
        let fence = labels.place("O-5004 pickup", x: pickup.x, y: pickup.y, r: pickup.r)
        let other = labels.place("O-5005 pickup", x: below.x, y: below.y, r: below.r)
        func box(_ label: MapLabels.Placement, _ text: String) -> (Double, Double, Double, Double) {
            let width = Double(text.count) * 7.2
            let minX = label.anchor == "start" ? label.x : label.anchor == "end" ? label.x - width : label.x - width / 2
            return (minX, label.y - 10, minX + width, label.y + 3)
        }
        func apart(_ a: (Double, Double, Double, Double), _ b: (Double, Double, Double, Double)) -> Bool {
            a.2 <= b.0 || b.2 <= a.0 || a.3 <= b.1 || b.3 <= a.1
        }
        let boxes = [box(name, "Alex Rivera"), box(fence, "O-5004 pickup"), box(other, "O-5005 pickup")]
        for (i, a) in boxes.enumerated() {
            for b in boxes[(i + 1)...] { #expect(apart(a, b), "\(a) and \(b) overlap") }
            for mark in [driver, pickup, below] {
                #expect(apart(a, (mark.x - mark.r, mark.y - mark.r, mark.x + mark.r, mark.y + mark.r)), "\(a) covers the mark at \(mark)")
            }
        }
        // At the right edge a name goes to the left of its mark rather than off the map.
        var edge = MapLabels(marks: [(MapCanvas.width - 10, 50, 7)])
        #expect(edge.place("Jordan Lee", x: MapCanvas.width - 10, y: 50, r: 7).anchor == "end")
        // A crowd: a thousand fences on one spot. Names are always shown; a fence's label only where it is free.
        var crowd: [(x: Double, y: Double, r: Double)] = []
        for index in 0..<1000 { crowd.append((x: 480 + Double(index % 10), y: 270 + Double(index / 100), r: 6)) }
        var crowded = MapLabels(marks: crowd)
        var placed = 0
        for mark in crowd where crowded.placeIfFree("O-9999 pickup", x: mark.x, y: mark.y, r: mark.r) != nil { placed += 1 }
        #expect(placed <= 8, "\(placed) labels placed around one spot")
        let shown = crowded.place("Alex Rivera", x: 480, y: 270, r: 7)
        #expect(["start", "end", "middle"].contains(shown.anchor))
    }
}

/// The base map shipped for carriers without a tile server: land, borders,
/// interstates and cities drawn for the view, small, and the same for a view
/// that has not moved.
@Suite("Base map")
struct BaseMapTests {
    static let dallas = GeoPoint(latitude: 32.777, longitude: -96.797)
    static let houston = GeoPoint(latitude: 29.760, longitude: -95.370)
    static let sanAntonio = GeoPoint(latitude: 29.424, longitude: -98.494)

    @Test("a view of Texas draws its land, borders and interstates, names its cities, and stays put as drivers creep along")
    func texas() throws {
        let map = try #require(BaseMap.shipped)
        let canvas = MapCanvas(points: [Self.dallas, Self.houston, Self.sanAntonio])
        let svg = map.svg(for: canvas)
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.hasSuffix("</svg>"))
        for layer in ["id=\"states\"", "id=\"countries\"", "class=\"road\""] {
            let start = try #require(svg.range(of: "<path \(layer) d=\""), "no \(layer) layer")
            #expect(svg[start.upperBound...].prefix(2).first == "M", "the \(layer) layer is empty")
        }
        for use in ["<use href=\"#countries\" class=\"land\"/>", "<use href=\"#states\" class=\"state\"/>"] { #expect(svg.contains(use)) }
        // I-35, I-45 and I-10 run through this triangle; each gets its number once.
        let shields = svg.components(separatedBy: "<g class=\"shield\">").dropFirst().map { $0.components(separatedBy: "\">").last?.components(separatedBy: "<").first ?? "" }
        #expect(Set(shields).isSuperset(of: ["35", "45", "10"]), "\(shields)")
        #expect(shields.count == Set(shields).count)
        #expect(svg.utf8.count < 150_000, "\(svg.utf8.count) bytes")
        let named = map.cities(on: canvas).map(\.city.name)
        #expect(Set(named).isSuperset(of: ["Dallas", "Houston", "San Antonio", "Austin", "Waco"]), "\(named)")
        #expect(!named.contains("Chicago"))
        // Everyone moved 300 m: the view, and so the drawing the browser keeps, is the same.
        let later = MapCanvas(points: [Self.dallas, Self.houston, Self.sanAntonio].map { GeoPoint(latitude: $0.latitude + 0.0027, longitude: $0.longitude) })
        #expect(later == canvas)
        // The address names the view exactly.
        let query = canvas.baseMapPath(version: map.version).split(separator: "?").last.map(String.init) ?? ""
        let values = Dictionary(uniqueKeysWithValues: query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            return (parts[0], parts.count > 1 ? parts[1] : "")
        })
        #expect(MapCanvas(left: values["left"], top: values["top"], scale: values["scale"]) == canvas)
    }

    @Test("a view of the country names only the largest cities and stays small; a view nobody would draw is refused")
    func country() throws {
        let map = try #require(BaseMap.shipped)
        let canvas = MapCanvas(points: [GeoPoint(latitude: 47.6, longitude: -122.3), GeoPoint(latitude: 25.8, longitude: -80.2),
                                        GeoPoint(latitude: 32.7, longitude: -117.2), GeoPoint(latitude: 42.4, longitude: -71.1)])
        let cities = map.cities(on: canvas)
        #expect(Set(cities.map(\.city.tier)) == [1])
        #expect(cities.map(\.city.name).contains("Chicago"))
        #expect(map.svg(for: canvas).utf8.count < 150_000)
        for (left, top, scale) in [("1", "1", "abc"), ("nan", "1", "900"), ("1", "inf", "900"), ("1", "1", "1e300"), ("99", "1", "900"),
                                   (nil, "1", "900"), ("1", "1", "0"), ("1", "1", "-900")] as [(String?, String?, String?)] {
            #expect(MapCanvas(left: left, top: top, scale: scale) == nil, "\(left ?? "nil") \(top ?? "nil") \(scale ?? "nil")")
        }
        // The farthest view allowed still draws, bounded.
        let world = try #require(MapCanvas(left: "-8", top: "-8", scale: "20"))
        #expect(map.svg(for: world).utf8.count < 150_000)
    }

    @Test("zoomed in, a road is drawn where it runs, on its course, and nowhere else")
    func clippedRoads() throws {
        let map = try #require(BaseMap.shipped)
        let macon = GeoPoint(latitude: 32.841, longitude: -83.632), savannah = GeoPoint(latitude: 32.081, longitude: -81.091)
        // A quarter of the way along I-16 (drawn Macon–Savannah), zoomed in as far as the map goes for one driver.
        let quarter = GeoPoint(latitude: macon.latitude + (savannah.latitude - macon.latitude) / 4,
                               longitude: macon.longitude + (savannah.longitude - macon.longitude) / 4)
        let canvas = MapCanvas(points: [quarter])
        let drawn = Self.roadPoints(map.svg(for: canvas))
        #expect(drawn.count >= 2)
        let (ax, ay) = canvas.xy(macon), (bx, by) = canvas.xy(savannah)
        for (x, y) in drawn {
            let off = abs((by - ay) * x - (bx - ax) * y + bx * ay - by * ax) / hypot(by - ay, bx - ax)
            #expect(off < 1, "(\(x), \(y)) is \(off) px off I-16")
        }
        // Between I-16 and I-95, near Statesboro: no road at all.
        #expect(Self.roadPoints(map.svg(for: MapCanvas(points: [GeoPoint(latitude: 32.80, longitude: -81.40)]))).isEmpty)
    }

    static func roadPoints(_ svg: String) -> [(Double, Double)] {
        guard let start = svg.range(of: "<path class=\"road\" d=\"") else { return [] }
        let data = svg[start.upperBound...].prefix { $0 != "\"" }
        let numbers = data.split(whereSeparator: { $0 == "M" || $0 == "L" || $0 == " " }).compactMap { Double($0) }
        return stride(from: 0, to: numbers.count - 1, by: 2).map { (numbers[$0], numbers[$0 + 1]) }
    }
}
