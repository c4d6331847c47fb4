import AsyncHTTPClient
import Logging
import Foundation
import NIOCore
import VroomXModels

/// Finds where an address is. Off unless configured: stops without
/// coordinates then simply have none (dispatch can paste a map point).
public protocol Geocoder: Sendable {
    /// The address's point, or nil when the service does not know it.
    func locate(_ address: String) async throws -> GeoPoint?
}

/// The Nominatim search API (`GET {base}/search?q=…&format=jsonv2&limit=1`),
/// as OpenStreetMap's and self-hosted servers speak it. Answers are
/// remembered (a carrier repeats its yards), and requests are spaced one a
/// second, as the public service's usage policy asks.
public actor NominatimGeocoder: Geocoder {
    let baseURL: String
    let http: HTTPClient
    private var remembered: [String: GeoPoint?] = [:]
    private var nextRequest = ContinuousClock.now
    static let spacing: Duration = .seconds(1)
    static let longestWait: Duration = .seconds(3)
    static let memory = 5_000

    public static let sharedHTTP = HTTPClient(eventLoopGroupProvider: .singleton,
                                       configuration: .init(timeout: .init(connect: .seconds(3), read: .seconds(5))))

    public init(baseURL: String, http: HTTPClient = NominatimGeocoder.sharedHTTP) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.http = http
    }

    public func locate(_ address: String) async throws -> GeoPoint? {
        let query = address.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !query.isEmpty, query.count <= 500 else { return nil }
        let key = query.lowercased()
        if let known = remembered[key] { return known }
        // One request a second, in turn, for every carrier. A lookup whose turn is further off than
        // `longestWait` is not made: the stop is saved without a point rather than the request held.
        let slot = max(nextRequest, ContinuousClock.now)
        guard slot - ContinuousClock.now <= Self.longestWait else {
            throw GeocoderError("the geocoder is busy: this lookup's turn is more than \(Self.longestWait) away")
        }
        nextRequest = slot + Self.spacing
        try await Task.sleep(until: slot)
        var components = URLComponents(string: baseURL + "/search")
        components?.queryItems = [URLQueryItem(name: "q", value: query), URLQueryItem(name: "format", value: "jsonv2"),
                                  URLQueryItem(name: "limit", value: "1")]
        guard let url = components?.url?.absoluteString else { return nil }
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "User-Agent", value: "VroomX dispatch (stop coordinates)")
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await http.execute(request, timeout: .seconds(8))
        let body = try await response.body.collect(upTo: 256 << 10)
        guard response.status == .ok else { throw GeocoderError("the geocoder answered \(response.status.code)") }
        let point = try Self.firstPoint(Data(body.readableBytesView))
        if remembered.count >= Self.memory { remembered.removeAll(keepingCapacity: true) }
        remembered[key] = point
        return point
    }

    /// `[{"lat": "32.08", "lon": "-81.09", …}]`: the first result's point.
    static func firstPoint(_ data: Data) throws -> GeoPoint? {
        struct Place: Decodable { let lat: String; let lon: String }
        guard let place = try JSONDecoder().decode([Place].self, from: data).first,
              let latitude = Double(place.lat), let longitude = Double(place.lon) else { return nil }
        let point = GeoPoint(latitude: latitude, longitude: longitude)
        return point.isValid ? point : nil
    }
}

struct GeocoderError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Gives stops without coordinates the geocoder's point for their address,
/// before an order is saved. A lookup that fails leaves the stop as it was:
/// an order is never refused because the map service is down.
struct StopLocator: Sendable {
    let geocoder: (any Geocoder)?
    let logger: Logger

    func located(_ stop: Stop) async -> Stop {
        guard let geocoder, stop.location == nil, !stop.address.isEmpty else { return stop }
        var located = stop
        do {
            located.location = try await geocoder.locate(stop.address)
        } catch {
            logger.notice("address lookup failed; the stop has no map point", metadata: ["error": "\(error)"])
        }
        return located
    }

    func located(_ request: CreateOrderRequest) async -> CreateOrderRequest {
        var request = request
        request.pickup = await located(request.pickup)
        request.delivery = await located(request.delivery)
        return request
    }

    /// An edit of `saved`'s stops, located. A stop given a new address with
    /// the point it already had is that point left behind (it belonged to the
    /// old address, and so did its arrival fence): it goes, and the new
    /// address is looked up. A new point with the new address stays as given.
    func located(_ request: UpdateOrderRequest, editing saved: Order) async -> UpdateOrderRequest {
        // Addresses compared as words: line breaks and spacing are not a move.
        func words(_ address: String) -> [Substring] { address.split(whereSeparator: \.isWhitespace) }
        func current(_ stop: Stop, saved: Stop) -> Stop {
            guard words(stop.address) != words(saved.address), stop.location != nil, stop.location == saved.location else { return stop }
            var moved = stop
            moved.location = nil
            return moved
        }
        var request = request
        if let pickup = request.pickup { request.pickup = await located(current(pickup, saved: saved.pickup)) }
        if let delivery = request.delivery { request.delivery = await located(current(delivery, saved: saved.delivery)) }
        return request
    }
}
