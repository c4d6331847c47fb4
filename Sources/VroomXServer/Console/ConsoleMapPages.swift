import Foundation
import Hummingbird
import VroomXModels

/// The live map: each driver's last position, the tracks of trips under
/// way and the fences of stops still to reach, drawn as SVG by the server
/// (no map library, no tiles: the shapes stand on their own), with the same
/// facts in a table for keyboards and screen readers. The page polls every
/// 30 s; arrivals also come through the live feed.
struct ConsoleMapPages {
    let console: ConsoleController
    var store: Store { console.store }

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/map") { request in try await map(request) }
        console.get(router, "/map/base.svg") { request in try baseMap(request) }
    }

    /// The base map of one view, for the page's image: the same view always
    /// draws the same, so the browser keeps it (the version in the address
    /// changes with the data).
    private func baseMap(_ request: ConsoleRequest) throws -> Response {
        guard let map = BaseMap.shipped else { throw AppError.notFound("Base map") }
        guard let canvas = MapCanvas(left: request.query("left"), top: request.query("top"), scale: request.query("scale")) else {
            throw AppError(400, .invalidParameter, "left, top and scale must name a view of the map.", field: "scale")
        }
        var response = Response(status: .ok, headers: ConsolePages.securityHeaders, body: .init(byteBuffer: ByteBuffer(string: map.svg(for: canvas))))
        // The drawing's own style sheet is inline; nothing else may load.
        response.headers[.contentSecurityPolicy] = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
        response.headers[.contentType] = "image/svg+xml; charset=utf-8"
        response.headers[.cacheControl] = "private, max-age=86400"
        return response
    }

    private func map(_ request: ConsoleRequest) async throws -> Response {
        let tenant = request.tenant
        let positions = try await store.location.positions(tenant: tenant)
        let trips = try await store.trips.list(.dispatch(tenant: tenant), status: .inProgress)
        var tracks: [(Trip, [GeoPosition])] = []
        let since = store.now.addingTimeInterval(-24 * 3600)
        // One read finds the trips with a track (a read a trip cost 50 round trips on PostgreSQL, most of them empty).
        let drawn = trips.prefix(50)
        let tracked = try await store.location.tripsWithFixes(drawn.map(\.id), since: since, tenant: tenant)
        for trip in drawn where tracked.contains(trip.id) {
            let track = try await store.location.track(of: trip.id, tenant: tenant, since: since)
            if !track.isEmpty { tracks.append((trip, track)) }
        }
        // The stops still ahead on trips under way (a planned trip's stops would only crowd the map).
        let open = try await store.orders.ahead(tenant: tenant)
        var stops: [(OrderAhead, StopKind, GeoPoint, Double)] = []
        for order in open.prefix(500) {
            let ahead: [StopKind] = order.status == .assigned ? [.pickup, .delivery] : [.delivery]
            for kind in ahead {
                if let fence = Geofence(order.stop(kind)) { stops.append((order, kind, fence.center, fence.radiusMeters)) }
            }
        }
        let canvas = MapCanvas(points: positions.map(\.fix.point) + stops.map(\.2), tracks: tracks.flatMap { $0.1.map(\.point) })
        var rows: [MapView.Row] = []
        let today = LocalDate(store.now)
        for position in positions {
            // The stop the driver's app names as next (the same rule), on the trip the position was shared for.
            let onTrip = open.filter { $0.driverID == position.driverID && position.tripID != nil && $0.tripID == position.tripID }
            let next = Order.nextStop(among: onTrip, today: today)
            var nextStop: MapView.Next?
            if let (order, kind) = next {
                let progress = try await store.location.progress(of: order.id, tenant: tenant)
                nextStop = .init(order: order.number, orderID: order.id.rawValue, stop: kind.rawValue,
                                 arrived: ConsoleFormat.time(order.arrived(at: kind)),
                                 distance: order.stop(kind).location.map { LocationRules.distanceText(position.fix.point.distance(to: $0)) } ?? "—",
                                 eta: ConsoleFormat.time(progress.computedETA), driverETA: ConsoleFormat.time(progress.driverETA))
            }
            rows.append(.init(name: position.driverName, seen: ConsoleFormat.time(position.fix.recordedAt), point: position.fix.point.text,
                              trip: trips.first { $0.id == position.tripID }?.number ?? "—", next: nextStop))
        }
        let tiles = console.mapTiles.map { $0.tiles(for: canvas) } ?? []
        // Stops at the same place (two deliveries to one dealer) share one fence and one label.
        let fences = Dictionary(grouping: stops) { _, kind, point, _ in "\(kind.rawValue) \(point.text)" }.values
            .sorted { $0[0].0.number < $1[0].0.number }.map { group in
                let (_, kind, point, radius) = group[0]
                let (x, y) = canvas.xy(point)
                return (group: group, kind: kind, x: x, y: y, r: max(canvas.pixels(metres: radius, at: point), 5))
            }
        let drivers = positions.map { position in
            let (x, y) = canvas.xy(position.fix.point)
            return (position: position, x: x, y: y, r: 7.0)
        }
        // Without a tile server, the shipped base map; its cities are named where no driver or stop is.
        let base = console.mapTiles == nil ? BaseMap.shipped : nil
        let cities = base?.cities(on: canvas) ?? []
        // Drivers' names are placed first: they matter most. No name covers an interstate's number.
        let shields = base?.shields(on: canvas).map { ($0.x, $0.y, 8.0) } ?? []
        var labels = MapLabels(marks: drivers.map { ($0.x, $0.y, $0.r) } + fences.map { ($0.x, $0.y, $0.r) } + shields)
        let driverViews = drivers.map { driver in
            let stale = store.now.timeIntervalSince(driver.position.fix.recordedAt) > 3600
            let label = labels.place(driver.position.driverName, x: driver.x, y: driver.y, r: driver.r)
            return MapView.Driver(x: driver.x, y: driver.y, label: .init(label), name: driver.position.driverName, stale: stale)
        }
        let fenceViews = fences.map { fence in
            let numbers = fence.group.map(\.0.number).joined(separator: ", ")
            let text = "\(numbers) \(fence.kind.rawValue)"
            let label = labels.placeIfFree(text, x: fence.x, y: fence.y, r: fence.r)
            return MapView.Fence(x: fence.x, y: fence.y, r: fence.r, kind: fence.kind.rawValue,
                                 title: "\(fence.kind == .pickup ? "Pickup" : "Delivery") of \(numbers): \(fence.group[0].0.stop(fence.kind).address)",
                                 number: text, label: label.map(MapView.Label.init))
        }
        let cityViews = cities.prefix(40).compactMap { city, x, y in
            labels.placeIfFree(city.name, x: x, y: y, r: 2.5).map { MapView.City(x: x, y: y, name: city.name, label: .init($0)) }
        }
        var response = console.pages.page("map", title: "Map", session: request.session, section: "map", MapView(
            width: MapCanvas.width, height: MapCanvas.height, tiles: tiles, tileSource: console.mapTiles.map(\.origin),
            baseMap: base.map { canvas.baseMapPath(version: $0.version) }, cities: cityViews,
            drivers: driverViews,
            tracks: tracks.map { trip, fixes in
                .init(number: trip.number, points: fixes.map { canvas.xy($0.point) }.map { "\($0.0),\($0.1)" }.joined(separator: " "))
            },
            fences: fenceViews,
            rows: rows, empty: positions.isEmpty))
        if let origin = console.mapTiles?.origin, let policy = response.headers[.contentSecurityPolicy] {
            response.headers[.contentSecurityPolicy] = policy.replacingOccurrences(of: "img-src 'self' data:", with: "img-src 'self' data: \(origin)")
        }
        return response
    }
}

/// Where each label of the map goes: beside its mark, on the first side
/// (right, left, above, below) where it covers no mark, no label placed
/// before it and nothing off the map. A name that must be shown takes the
/// side that covers least when every side is taken; an optional label (a
/// fence's) is left out then, since it would only hide others. Text width
/// is estimated (12 px bold: about 7.2 px a character). What is placed is
/// kept by 64-pixel cells, so a label is checked only against what is near
/// it: a map of a thousand marks places its labels in milliseconds.
struct MapLabels {
    struct Placement: Equatable {
        let x: Double, y: Double, anchor: String
    }

    private struct Box {
        var minX, minY, maxX, maxY: Double
        func overlap(_ other: Box) -> Double {
            max(0, min(maxX, other.maxX) - max(minX, other.minX)) * max(0, min(maxY, other.maxY) - max(minY, other.minY))
        }
        var area: Double { (maxX - minX) * (maxY - minY) }
    }

    private static let cellSize = 64.0
    private var boxes: [Box] = []
    private var cells: [Int: [Int]] = [:]

    /// - Parameter marks: every circle drawn (centre and radius). No label
    ///   covers a mark's centre; a large fence's inside may hold labels.
    init(marks: [(x: Double, y: Double, r: Double)]) {
        for mark in marks {
            let r = min(mark.r, 12)
            insert(Box(minX: mark.x - r, minY: mark.y - r, maxX: mark.x + r, maxY: mark.y + r))
        }
    }

    /// A label that is always shown.
    mutating func place(_ text: String, x: Double, y: Double, r: Double) -> Placement {
        let (sides, covered) = candidates(text, x: x, y: y, r: r)
        let best = covered.indices.first { covered[$0] == 0 } ?? covered.indices.min { covered[$0] < covered[$1] } ?? 0
        insert(sides[best].box)
        return sides[best].placement
    }

    /// A label shown only where it covers nothing.
    mutating func placeIfFree(_ text: String, x: Double, y: Double, r: Double) -> Placement? {
        let (sides, covered) = candidates(text, x: x, y: y, r: r)
        guard let free = covered.indices.first(where: { covered[$0] == 0 }) else { return nil }
        insert(sides[free].box)
        return sides[free].placement
    }

    private func candidates(_ text: String, x: Double, y: Double, r: Double)
        -> (sides: [(placement: Placement, box: Box)], covered: [Double]) {
        let width = Double(text.count) * 7.2, ascent = 10.0, descent = 3.0, gap = 4.0
        let r = min(r, 12)
        let sides: [(placement: Placement, box: Box)] = [
            (Placement(x: x + r + gap, y: y + 4, anchor: "start"),
             Box(minX: x + r + gap, minY: y + 4 - ascent, maxX: x + r + gap + width, maxY: y + 4 + descent)),
            (Placement(x: x - r - gap, y: y + 4, anchor: "end"),
             Box(minX: x - r - gap - width, minY: y + 4 - ascent, maxX: x - r - gap, maxY: y + 4 + descent)),
            (Placement(x: x, y: y - r - gap - descent, anchor: "middle"),
             Box(minX: x - width / 2, minY: y - r - gap - descent - ascent, maxX: x + width / 2, maxY: y - r - gap)),
            (Placement(x: x, y: y + r + gap + ascent, anchor: "middle"),
             Box(minX: x - width / 2, minY: y + r + gap, maxX: x + width / 2, maxY: y + r + gap + ascent + descent)),
        ]
        return (sides.map { ($0.placement.rounded, $0.box) }, sides.map { covered($0.box) })
    }

    /// How much of `box` lies on something placed or off the map.
    private func covered(_ box: Box) -> Double {
        let map = Box(minX: 0, minY: 0, maxX: MapCanvas.width, maxY: MapCanvas.height)
        var total = box.area - box.overlap(map)
        var seen = Set<Int>()
        for key in Self.keys(box) {
            for index in cells[key] ?? [] where seen.insert(index).inserted {
                total += boxes[index].overlap(box)
            }
        }
        return total
    }

    private mutating func insert(_ box: Box) {
        boxes.append(box)
        for key in Self.keys(box) { cells[key, default: []].append(boxes.count - 1) }
    }

    /// The cells a box touches (those beyond the map's edges clamped to a
    /// margin of cells around it, so any box has a few keys at most).
    private static func keys(_ box: Box) -> [Int] {
        func cell(_ value: Double) -> Int { Int(min(max(value / cellSize, -2), 20).rounded(.down)) }
        var keys: [Int] = []
        for row in cell(box.minY)...cell(box.maxY) {
            for column in cell(box.minX)...cell(box.maxX) { keys.append((row + 2) * 32 + (column + 2)) }
        }
        return keys
    }
}

extension MapLabels.Placement {
    fileprivate var rounded: Self { Self(x: x.rounded(toPlaces: 1), y: y.rounded(toPlaces: 1), anchor: anchor) }
}

/// Web Mercator (the projection map tiles use), fitted to the points shown.
struct MapCanvas: Equatable, Sendable {
    static let width = 960.0
    static let height = 540.0
    static let padding = 48.0
    /// The projected position at the canvas's top left corner, and pixels per projected unit.
    let left: Double, top: Double, scale: Double

    /// - Parameters:
    ///   - points: what must be on the map (drivers, stops ahead).
    ///   - tracks: the fixes of the trails behind; their outermost 2 % on
    ///     each side do not set the view, so that one stray fix does not
    ///     shrink everyone else to a dot.
    init(points: [GeoPoint], tracks: [GeoPoint] = []) {
        let trail = tracks.map(Self.project)
        let trim = trail.count >= 20 ? trail.count / 50 : 0
        let shown = points.map(Self.project)
        let xs = (trail.map(\.0).sorted().dropFirst(trim).dropLast(trim) + shown.map(\.0)).sorted()
        let ys = (trail.map(\.1).sorted().dropFirst(trim).dropLast(trim) + shown.map(\.1)).sorted()
        var (minX, maxX) = (xs.first ?? -1.5, xs.last ?? -1.3)
        var (minY, maxY) = (ys.first ?? 0.6, ys.last ?? 0.8)
        // At least a few kilometres across, so one point is not infinitely zoomed.
        let least = 0.002
        if maxX - minX < least { (minX, maxX) = ((minX + maxX - least) / 2, (minX + maxX + least) / 2) }
        if maxY - minY < least { (minY, maxY) = ((minY + maxY - least) / 2, (minY + maxY + least) / 2) }
        let fit = min((Self.width - 2 * Self.padding) / (maxX - minX), (Self.height - 2 * Self.padding) / (maxY - minY))
        // Zoom in steps of a quarter power of two and move in steps of 32 px (within the padding): as
        // drivers creep along, the view stays put, and so does the base map the browser keeps.
        let scale = exp2((log2(fit) * 4).rounded(.down) / 4)
        let step = 32 / scale
        self.init(left: (((minX + maxX) / 2 - Self.width / 2 / scale) / step).rounded(.down) * step,
                  top: (((minY + maxY) / 2 - Self.height / 2 / scale) / step).rounded(.down) * step, scale: scale)
    }

    init(left: Double, top: Double, scale: Double) {
        (self.left, self.top, self.scale) = (left, top, scale)
    }

    /// A canvas named by a base map address, checked: nil for numbers that
    /// are not a view any map would show.
    init?(left: String?, top: String?, scale: String?) {
        guard let left = left.flatMap(Double.init), let top = top.flatMap(Double.init), let scale = scale.flatMap(Double.init),
              (-8...8).contains(left), (-8...8).contains(top), (20...5_000_000).contains(scale) else { return nil }
        self.init(left: left, top: top, scale: scale)
    }

    /// Longitude and latitude in radians, y growing southwards as on screen.
    static func project(_ point: GeoPoint) -> (Double, Double) {
        let latitude = max(min(point.latitude, 85), -85) * .pi / 180
        return (point.longitude * .pi / 180, -log(tan(.pi / 4 + latitude / 2)))
    }

    func xy(_ point: GeoPoint) -> (Double, Double) {
        let (x, y) = Self.project(point)
        return (((x - left) * scale).rounded(toPlaces: 1), ((y - top) * scale).rounded(toPlaces: 1))
    }

    func screen(_ point: BaseMap.Projected) -> (x: Double, y: Double) {
        ((point.x - left) * scale, (point.y - top) * scale)
    }

    /// What the canvas shows in projected units, widened by `margin` of its size on each side.
    func visible(margin: Double) -> BaseMap.Bounds {
        let (width, height) = (Self.width / scale, Self.height / scale)
        return .init(minX: left - width * margin, minY: top - height * margin, maxX: left + width * (1 + margin), maxY: top + height * (1 + margin))
    }

    func pixels(metres: Double, at point: GeoPoint) -> Double {
        (metres / (6_371_008.8 * cos(point.latitude * .pi / 180)) * scale).rounded(toPlaces: 1)
    }

    /// The address of the base map drawn for this canvas.
    func baseMapPath(version: String) -> String {
        "/map/base.svg?v=\(version)&left=\(left)&top=\(top)&scale=\(scale)"
    }
}

extension Double {
    fileprivate func rounded(toPlaces places: Int) -> Double {
        let factor = Foundation.pow(10, Double(places))
        return (self * factor).rounded() / factor
    }
}

/// Map tiles behind the shapes, from a tile server the carrier configures
/// (`VROOMX_MAP_TILE_URL`, e.g. `https://tile.example.com/{z}/{x}/{y}.png`):
/// off by default, and the map draws the same without them.
public struct MapTiles: Sendable, Hashable {
    public let template: String
    /// Scheme, host and port: what the page's CSP lets images load from.
    public let origin: String
    static let maxTiles = 64

    /// Nil unless the template is an http(s) URL with {z}, {x} and {y} and
    /// nothing that could break out of an attribute or a CSP.
    public init?(template: String) {
        guard template.utf8.count <= 500, let url = URL(string: template.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")),
              let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", let host = url.host, !host.isEmpty,
              ["{z}", "{x}", "{y}"].allSatisfy(template.contains),
              !template.contains(where: { $0.isWhitespace || "\"'<>;,`\\".contains($0) }) else { return nil }
        self.template = template
        origin = "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    /// The tiles covering the canvas at the zoom closest to its scale (at most 64).
    func tiles(for canvas: MapCanvas) -> [MapView.Tile] {
        let world = canvas.scale * 2 * .pi
        var zoom = max(0, min(19, Int(log2(max(world / 256, 1)).rounded(.up))))
        while true {
            let count = Double(1 << zoom), size = world / count
            func index(_ canvasPosition: Double, _ start: Double) -> Int {
                Int(((canvasPosition / canvas.scale + start) + .pi) / (2 * .pi) * count)
            }
            let xs = index(0, canvas.left)...index(MapCanvas.width, canvas.left)
            let ys = max(0, index(0, canvas.top))...min(Int(count) - 1, index(MapCanvas.height, canvas.top))
            if xs.count * max(ys.count, 0) > Self.maxTiles, zoom > 0 { zoom -= 1; continue }
            return ys.flatMap { y in xs.map { x -> MapView.Tile in
                let wrapped = ((x % Int(count)) + Int(count)) % Int(count)
                let href = template.replacingOccurrences(of: "{z}", with: String(zoom)).replacingOccurrences(of: "{x}", with: String(wrapped))
                    .replacingOccurrences(of: "{y}", with: String(y))
                return MapView.Tile(href: href, size: (size * 1000).rounded() / 1000,
                                    x: ((Double(x) * 2 * .pi / count - .pi - canvas.left) * canvas.scale).rounded(),
                                    y: ((Double(y) * 2 * .pi / count - .pi - canvas.top) * canvas.scale).rounded())
            } }
        }
    }
}
