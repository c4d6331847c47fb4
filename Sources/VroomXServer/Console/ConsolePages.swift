import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The console's templates and static files, shipped as package resources
/// and loaded once at start.
struct ConsolePages: Sendable {
    let templates: PageTemplates
    /// Static files by name, with their content types.
    let assets: [String: (body: ByteBuffer, type: String)]

    /// Where the templates are shipped.
    static var templateFolder: URL? { Bundle.module.url(forResource: "Templates", withExtension: nil) }

    static func load() async throws -> ConsolePages {
        guard let templateFolder,
              let statics = Bundle.module.url(forResource: "Static", withExtension: nil) else {
            throw ConsoleResourceError(description: "the console's templates are missing from the bundle")
        }
        let templates = try PageTemplates.load(directory: templateFolder)
        var assets: [String: (ByteBuffer, String)] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: statics.path) {
            let type = name.hasSuffix(".css") ? "text/css; charset=utf-8" : name.hasSuffix(".js") ? "text/javascript; charset=utf-8"
                : name.hasSuffix(".svg") ? "image/svg+xml" : "application/octet-stream"
            assets[name] = (ByteBuffer(data: try Data(contentsOf: statics.appendingPathComponent(name))), type)
        }
        return ConsolePages(templates: templates, assets: assets)
    }

    /// A page inside the console's frame (navigation, the signed-in
    /// dispatcher, the CSRF token for forms and scripts).
    func page(_ template: String, title: String, session: ConsoleSession?, section: String = "", _ view: some ConsoleView,
              status: HTTPResponse.Status = .ok) -> Response {
        render(template, title: title, session: session, section: section, view, status: status)
    }

    private func render(_ template: String, title: String, session: ConsoleSession?, section: String, _ body: some ConsoleView,
                        status: HTTPResponse.Status) -> Response {
        let frame = ConsoleFrame(template: template, title: title, section: section, session: session, body: body)
        let html = templates.render(frame, template: template) ?? "<!doctype html><title>VroomX</title><p>Page \(template) is missing.</p>"
        return Self.html(html, status: status)
    }

    static func html(_ html: String, status: HTTPResponse.Status = .ok, headers extra: HTTPFields = [:]) -> Response {
        var headers = securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// Text as a query value in an address the console writes: all but ASCII letters, digits and `-._~` escaped,
    /// so an address (a `Location` header, a link) stays ASCII whatever the text ("José", "東京", "&", "#").
    static func queryValue(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// After a form: see the result at `location` (a reload never re-posts).
    static func redirect(_ location: String, headers extra: HTTPFields = [:]) -> Response {
        var headers = securityHeaders
        headers[.location] = location
        headers.append(contentsOf: extra)
        return Response(status: .seeOther, headers: headers)
    }

    /// No inline script or style anywhere; nothing framed; forms post here only.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; "
            + "connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        .xContentTypeOptions: "nosniff",
        .init("Referrer-Policy")!: "same-origin",
        .init("X-Frame-Options")!: "DENY",
    ]

    func asset(_ name: String) throws -> Response {
        guard let asset = assets[name] else { throw AppError.notFound("File") }
        var headers = Self.securityHeaders
        headers[.contentType] = asset.type
        headers[.cacheControl] = "public, max-age=300"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: asset.body))
    }
}

struct ConsoleResourceError: Error, CustomStringConvertible {
    let description: String
}

extension HTTPField.Name {
    static let contentSecurityPolicy = HTTPField.Name("Content-Security-Policy")!
    static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
}
