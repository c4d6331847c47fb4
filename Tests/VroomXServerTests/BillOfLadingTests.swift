import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The bill of lading as a PDF a real reader opens: `pdftotext` reads the
/// carrier's numbers and terms, the customer, the VIN, both conditions with
/// the damage first seen at delivery marked new; `pdfimages` finds the
/// photos embedded as the JPEGs they were, and the signatures.
@Suite("Bill of lading PDF")
struct BillOfLadingTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

    @Test("the PDF carries the carrier, customer, vehicle, both conditions (new damage marked), photos as taken and signatures",
          arguments: TestBackend.available)
    func billOfLading(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let (dispatch, driver) = (alpha.dispatcher.accessToken, alpha.driver.accessToken)
        let photo = Array(try Data(contentsOf: Self.fixtures.appendingPathComponent("vehicle-photo.jpg")))
        let signature = Array(try Data(contentsOf: Self.fixtures.appendingPathComponent("signature.png")))
        try await server.run { api in
            _ = try await api.call(.dispatchUpdateCarrierProfile, json: UpdateCarrierProfileRequest(
                legalName: "Alpha Car Carriers LLC", mcNumber: "MC-123456", dotNumber: "3456789", address: "1 Depot Rd, Joliet, IL 60431",
                phone: "815-555-0100", bolTerms: "Carrier is not liable for personal items left in the vehicle."), token: dispatch)
            let customer = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(
                name: "Midwest Auto Brokers", email: "billing@midwestauto.example"), token: dispatch).decode(Customer.self)
            let order = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "BOL-1", tripID: alpha.trips[0][0].id, vehicle: Vehicle(year: 2021, make: "Toyota", model: "Camry", vin: "4T1B11HK4MU123456"),
                pickup: Stop(name: "Harbor Lot", address: "1 Harbor Rd, Savannah, GA"), delivery: Stop(address: "9 Main St, Orlando, FL"),
                revenueCents: 90_000, customerID: customer.id, externalLoadID: "LB-88213"), token: dispatch).decode(Order.self)
            for (kind, damages) in [(Inspection.Kind.pickup, [Damage(location: "rear_bumper", type: .scratch, severity: .minor, note: "5 cm")]),
                                    (.delivery, [Damage(location: "rear_bumper", type: .scratch, severity: .minor, note: "5 cm"),
                                                 Damage(location: "left_front_door", type: .dent, severity: .moderate)])] {
                let id = ID<Inspection>()
                let saved = try await api.call(.saveInspection, id.rawValue, json: SaveInspectionRequest(
                    orderID: order.id, kind: kind, odometer: kind == .pickup ? 41_250 : 41_730, damages: damages, customerUnavailable: false,
                    signerName: kind == .pickup ? "  Pat  Gate " : "Morgan Lee"), token: driver)
                #expect(saved.status == 200, "\(saved.text)")
                for slot in MediaSlot.requiredPhotos {
                    #expect(try await api.call(.putInspectionMedia, id.rawValue, slot.rawValue, bytes: photo, token: driver).status == 200)
                }
                #expect(try await api.call(.putInspectionMedia, id.rawValue, MediaSlot.signature.rawValue, bytes: signature, token: driver).status == 200)
                let completed = try await api.call(.completeInspection, id.rawValue, json: CompleteInspectionRequest(), token: driver)
                #expect(completed.status == 200, "\(completed.text)")
            }

            let answer = try await api.call(.dispatchBillOfLading, order.id.rawValue, token: dispatch)
            #expect(answer.status == 200 && answer.headers[.contentType] == "application/pdf", "\(answer.status)")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("bol-\(UUID()).pdf")
            defer { try? FileManager.default.removeItem(at: file) }
            try answer.body.write(to: file)
            // A copy to look at (pdftoppm it), beside the console's screenshots.
            let samples = Self.fixtures.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/documents")
            try? FileManager.default.createDirectory(at: samples, withIntermediateDirectories: true)
            try? answer.body.write(to: samples.appendingPathComponent("bill-of-lading-\(backend).pdf"))
            let text = try await ChildProcess.run("/usr/bin/pdftotext", ["-layout", file.path, "-"])
            #expect(text.status == 0, "\(text.text)")
            // Read as words: the layout's columns are runs of spaces.
            let words = text.text.split(whereSeparator: { $0 == " " }).joined(separator: " ")
            for expected in ["Alpha Car Carriers LLC", "MC 123456", "USDOT 3456789", "BILL OF LADING", "Order BOL-1", "Load ID LB-88213",
                             "Midwest Auto Brokers", "2021 Toyota Camry", "VIN 4T1B11HK4MU123456", "Harbor Lot", "CONDITION AT PICKUP",
                             "CONDITION AT DELIVERY", "odometer 41,250 mi", "Rear bumper: scratch, minor (5 cm)", "NEW Left front door: dent, moderate",
                             "Carrier is not liable for personal items", "Page 1 of", alpha.driver.driver!.name,
                             "Signed by Pat Gate", "Signed by Morgan Lee"] {
                #expect(words.contains(expected), "\(expected) is not in:\n\(text.text)")
            }
            #expect(!words.contains("NEW Rear bumper"), "damage seen at pickup is not new")
            // Every photo of both inspections as the JPEG it was (pdfimages names the encoding), and both signatures.
            let images = try await ChildProcess.run("/usr/bin/pdfimages", ["-list", file.path])
            let rows = images.text.split(separator: "\n").dropFirst(2)
            #expect(rows.filter { $0.contains(" jpeg ") }.count == MediaSlot.requiredPhotos.count * 2, "\(images.text)")
            #expect(rows.filter { $0.contains(" image ") && !$0.contains(" jpeg ") }.count == 2, "\(images.text)")
            let jpegs = answer.body.range(of: Data(photo)) != nil
            #expect(jpegs, "the photo's own bytes are in the file, not re-encoded")

            // Another carrier's dispatcher finds no such order; a driver is no dispatcher.
            #expect(try await api.call(.dispatchBillOfLading, order.id.rawValue, token: beta.dispatcher.accessToken).status == 404)
            #expect(try await api.call(.dispatchBillOfLading, order.id.rawValue, token: driver).status == 403)
        }
    }

    @Test("each completed pickup and delivery mails the customer one bill of lading PDF over SMTP, with a tracking link; a replayed completion mails nothing more",
          .enabled(if: SMTPTestServer.isAvailable || ProcessInfo.processInfo.environment["CI"] == "true"))
    func mailedToTheCustomer() async throws {
        let smtp = try await SMTPTestServer.start()
        let server = try await TestServer.make(.sqlite) {
            $0.mailer = nil
            $0.smtpURL = "smtp://127.0.0.1:\(smtp.port)"
            $0.publicURL = "https://dispatch.alpha.example"
        }
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let (dispatch, driver) = (alpha.dispatcher.accessToken, alpha.driver.accessToken)
        let photo = Array(try Data(contentsOf: Self.fixtures.appendingPathComponent("vehicle-photo.jpg")))
        try await server.run { api in
            _ = try await api.call(.dispatchUpdateCarrierProfile, json: UpdateCarrierProfileRequest(
                legalName: "Alpha Car Carriers LLC", phone: "815-555-0100", email: "dispatch@alpha.example"), token: dispatch)
            let customer = try await api.call(.dispatchCreateCustomer, json: CreateCustomerRequest(
                name: "Midwest Auto Brokers", email: "billing@midwestauto.example"), token: dispatch).decode(Customer.self)
            let order = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "MAIL-1", tripID: alpha.trips[0][0].id, vehicle: Vehicle(year: 2021, make: "Toyota", model: "Camry", vin: "4T1B11HK4MU123456"),
                pickup: Stop(address: "1 Harbor Rd, Savannah, GA"), delivery: Stop(address: "9 Main St, Orlando, FL"), revenueCents: 90_000,
                customerID: customer.id), token: dispatch).decode(Order.self)
            let id = ID<Inspection>()
            _ = try await api.call(.saveInspection, id.rawValue, json: SaveInspectionRequest(
                orderID: order.id, kind: .pickup, odometer: 41_250, damages: [Damage(location: "hood", type: .chip, severity: .minor)],
                customerUnavailable: true), token: driver)
            for slot in MediaSlot.requiredPhotos {
                _ = try await api.call(.putInspectionMedia, id.rawValue, slot.rawValue, bytes: photo, token: driver)
            }
            for _ in 0..<2 {  // a phone that lost the answer completes again
                #expect(try await api.call(.completeInspection, id.rawValue, json: CompleteInspectionRequest(), token: driver).status == 200)
            }
            let raw = try #require(try await smtp.waitForMessages(1, timeout: .seconds(30)).first)
            let mail = Self.mime(raw)
            #expect(mail.headers["to"] == "<billing@midwestauto.example>" && mail.headers["reply-to"] == "<dispatch@alpha.example>")
            #expect(mail.headers["subject"] == "Bill of lading: order MAIL-1 picked up")
            #expect(mail.text.contains("Alpha Car Carriers LLC picked up 2021 Toyota Camry, VIN 4T1B11HK4MU123456 of order MAIL-1"), "\(mail.text)")
            #expect(mail.text.contains("https://dispatch.alpha.example/track/"), "\(mail.text)")
            let pdf = try #require(mail.attachment)
            #expect(pdf.prefix(5).elementsEqual(Array("%PDF-".utf8)))
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("mailed-\(UUID()).pdf")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(pdf).write(to: file)
            let text = try await ChildProcess.run("/usr/bin/pdftotext", ["-layout", file.path, "-"])
            let words = text.text.split(whereSeparator: { $0 == " " }).joined(separator: " ")
            for expected in ["Alpha Car Carriers LLC", "VIN 4T1B11HK4MU123456", "Hood: chip, minor", "Customer not available to sign"] {
                #expect(words.contains(expected), "\(expected) not in \(text.text)")
            }
            // The send is on the order's history; nothing more went out for the repeated completion.
            try await Task.sleep(for: .seconds(3))
            #expect(try smtp.messages().count == 1)
            let page = try await server.store.read { try await DocumentMailRepository.of(order.id, tenant: alpha.tenant.id, $0) }
            #expect(page.map(\.state) == [.sent] && page.first?.sentAt != nil)

            // A link the dispatcher revoked is not brought back by an email.
            let second = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "MAIL-2", tripID: alpha.trips[0][0].id, vehicle: Vehicle(make: "Honda"), pickup: Stop(address: "1 Harbor Rd, Savannah, GA"),
                delivery: Stop(address: "9 Main St, Orlando, FL"), revenueCents: 1, customerID: customer.id), token: dispatch).decode(Order.self)
            _ = try await api.call(.dispatchCreateTrackingLink, second.id.rawValue, token: dispatch)
            #expect(try await api.call(.dispatchRevokeTrackingLink, second.id.rawValue, token: dispatch).status == 204)
            try await api.completeInspection(of: second.id, .pickup, token: driver)
            let both = try await smtp.waitForMessages(2, timeout: .seconds(30)).map(Self.mime)
            let revoked = try #require(both.first { $0.headers["subject"]?.contains("MAIL-2") == true })
            #expect(!revoked.text.contains("/track/"), "\(revoked.text)")
        }
        await smtp.stop()
    }

    /// A received multipart message: headers, its text, its first attachment's bytes.
    static func mime(_ raw: String) -> (headers: [String: String], text: String, attachment: [UInt8]?) {
        let message = raw.replacingOccurrences(of: "\r\n", with: "\n")
        let (head, rest) = message.components(separatedBy: "\n\n").first.map { ($0, String(message.dropFirst($0.count + 2))) } ?? ("", "")
        var headers: [String: String] = [:]
        for line in head.split(separator: "\n") {
            if let colon = line.firstIndex(of: ":") { headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces) }
        }
        guard let boundary = headers["content-type"]?.components(separatedBy: "boundary=\"").last?.split(separator: "\"").first else {
            return (headers, "", nil)
        }
        var text = "", attachment: [UInt8]?
        for part in rest.components(separatedBy: "--\(boundary)").dropFirst() where !part.hasPrefix("--") {
            let pieces = part.trimmingCharacters(in: .newlines).components(separatedBy: "\n\n")
            let body = Data(base64Encoded: pieces.dropFirst().joined().replacingOccurrences(of: "\n", with: "")) ?? Data()
            if pieces[0].contains("text/plain") { text = String(decoding: body, as: UTF8.self) } else if attachment == nil { attachment = Array(body) }
        }
        return (headers, text, attachment)
    }
}
