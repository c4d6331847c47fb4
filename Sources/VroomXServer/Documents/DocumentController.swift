import Hummingbird
import NIOCore
import VroomXModels

/// The documents an order has (its bill of lading), as files.
struct DocumentController {
    let bills: BillOfLadingService

    func register(_ routes: Routes) {
        routes.onResponse(.dispatchBillOfLading) { _, context in
            let (number, bytes) = try await bills.pdf(of: try context.id(), tenant: try context.caller().tenant)
            return Self.pdf(bytes, named: "bill-of-lading-\(number).pdf")
        }
    }

    /// A PDF answer, opened in the browser and saved under `name`.
    static func pdf(_ bytes: [UInt8], named name: String) -> Response {
        var headers = ConsolePages.securityHeaders
        headers[.contentType] = "application/pdf"
        headers[.cacheControl] = "no-store"
        // Order numbers are the carrier's words: only safe characters reach the header.
        let safe = String(name.unicodeScalars.map { $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || "-_.".unicodeScalars.contains($0)) ? Character($0) : "_" })
        headers[.contentDisposition] = "inline; filename=\"\(safe)\""
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
