import Foundation
import VroomXModels

/// What a bill of lading says: the carrier, the customer, the stops, the
/// vehicle, and its condition at each end with photos and signatures.
struct BillOfLading: Sendable {
    typealias Photo = (label: String, image: PDFImage, captured: MediaCapture?)

    struct Condition: Sendable {
        let inspection: Inspection
        /// The photos, in slot order, with what each shows and when and where the phone took it.
        let photos: [Photo]
        let signature: PDFImage?
        /// Photos the document could not hold (too large, past its budget, or not a JPEG): they stay on the inspection's page.
        var photosLeftOut = 0
        /// A signature in a form the document cannot draw.
        var signatureLeftOut = false
    }

    let carrierName: String
    let profile: CarrierProfile
    let order: Order
    let customer: Customer?
    let driver: String
    let trip: String?
    let conditions: [Condition]
    let now: Date
}

/// Lays a bill of lading out on Letter pages.
struct BillOfLadingPDF: PDFPageLayout {
    var pdf = PDFWriter()
    var y = 0.0

    static func make(_ bill: BillOfLading) throws -> [UInt8] {
        var layout = BillOfLadingPDF()
        layout.draw(bill)
        let footer = "Order \(bill.order.number) · bill of lading made by VroomX \(Self.time(bill.now))"
        layout.footers(footer)
        return try layout.pdf.bytes(title: "Bill of lading \(bill.order.number)", now: bill.now)
    }

    private mutating func draw(_ bill: BillOfLading) {
        let order = bill.order
        y = 48
        // The carrier, as its authority names it; the document's name and numbers on the right.
        let carrier = bill.profile.legalName.isEmpty ? bill.carrierName : bill.profile.legalName
        pdf.text(PDFText.fitted(carrier, width: width - 250, size: 15, bold: true), x: left, y: y + 15, size: 15, bold: true)
        y += 18
        let numbers = [bill.profile.mcNumber.isEmpty ? nil : "MC \(bill.profile.mcNumber)",
                       bill.profile.dotNumber.isEmpty ? nil : "USDOT \(bill.profile.dotNumber)"].compactMap { $0 }.joined(separator: " · ")
        var top = y + 4
        for line in [bill.profile.address, [bill.profile.phone, bill.profile.email].filter { !$0.isEmpty }.joined(separator: " · "), numbers]
        where !line.isEmpty {
            pdf.text(PDFText.fitted(line, width: width - 250, size: 9), x: left, y: top + 12, size: 9, gray: 0.25)
            top += 12
        }
        rightAligned("BILL OF LADING", y: y, size: 15, bold: true)
        rightAligned("Order \(order.number)", y: y + 16, size: 10, bold: true)
        if let load = order.externalLoadID { rightAligned("Load ID \(load)", y: y + 28, size: 9) }
        rightAligned("Status: \(order.status.title)", y: y + (order.externalLoadID == nil ? 28 : 40), size: 9)
        y = max(top, y + 40) + 14
        rule()

        // Who the load is for, and who carries it.
        let customer = bill.customer.map { customer in
            [customer.name, customer.billingContact, [customer.phone, customer.email].filter { !$0.isEmpty }.joined(separator: " · "),
             customer.address].filter { !$0.isEmpty }
        } ?? ["Not named"]
        let carried = ["Driver: \(bill.driver)", bill.trip.map { "Trip \($0)" } ?? "", order.paymentTerms.isEmpty ? "" : "Terms: \(order.paymentTerms)"]
            .filter { !$0.isEmpty }
        columns(("CUSTOMER", customer), ("CARRIED BY", carried), plain: ["CARRIED BY"])
        // Each stop as it went: the truck arrived, the vehicle was picked up (delivered), the truck left.
        columns(("PICKUP", stopLines(order.pickup, done: nil) + visitLines(order, .pickup, done: order.actualPickupDate.map { "Picked up \(Self.time($0))" },
                                                                           terms: bill.profile.stopChargeTerms)),
                ("DELIVERY", stopLines(order.delivery, done: nil) + visitLines(order, .delivery,
                                                                              done: order.actualDeliveryDate.map { "Delivered \(Self.time($0))" },
                                                                              terms: bill.profile.stopChargeTerms)))

        // The vehicles, each with what identifies it at the lot.
        heading(order.vehicles.count == 1 ? "VEHICLE" : "VEHICLES (\(order.vehicles.count))")
        for (index, vehicle) in order.vehicles.enumerated() {
            let name = [vehicle.summary.isEmpty ? "Vehicle" : vehicle.summary, vehicle.color, vehicle.type?.label ?? ""].filter { !$0.isEmpty }
                .joined(separator: ", ")
            text((order.vehicles.count == 1 ? "" : "\(index + 1). ") + name, x: left, size: 10, bold: true)
            let marks = ["VIN \(vehicle.vin.isEmpty ? "not recorded" : vehicle.vin)", vehicle.lotNumber.map { "Lot \($0)" } ?? "",
                         vehicle.operable ? "" : "Inoperable"].filter { !$0.isEmpty }
            text(marks.joined(separator: " · "), x: left, size: 10)
        }
        y += 6

        // Each vehicle's condition at each end, vehicle by vehicle: damages (those first seen at delivery
        // marked new against the same vehicle's pickup), photos, signatures.
        let position = { (condition: BillOfLading.Condition) in InspectionRules.position(of: condition.inspection, in: order) }
        // A vehicle dispatch took off the order (not ready, gone) is not on its bill of lading.
        let ordered = bill.conditions.filter { position($0) < order.vehicles.count }.sorted {
            (position($0), $0.inspection.kind == .pickup ? 0 : 1) < (position($1), $1.inspection.kind == .pickup ? 0 : 1)
        }
        var atPickup: [Int: Set<String>] = [:]
        for condition in ordered where condition.inspection.kind == .pickup {
            atPickup[position(condition)] = Set(condition.inspection.damages.map { "\($0.location)|\($0.type)" })
        }
        for condition in ordered {
            let index = position(condition)
            let vehicle = order.vehicles.count > 1 && order.vehicles.indices.contains(index)
                ? "VEHICLE \(index + 1)" + (order.vehicles[index].summary.isEmpty ? "" : " (\(order.vehicles[index].summary))") + ": " : ""
            draw(condition, atPickup: atPickup[index] ?? [], driver: bill.driver, vehicle: vehicle,
                 stop: condition.inspection.kind == .pickup ? order.pickup : order.delivery)
        }
        if ordered.isEmpty {
            heading("CONDITION")
            text("No inspection recorded yet.", x: left, size: 10, gray: 0.3)
        }

        if !bill.profile.bolTerms.isEmpty {
            heading("TERMS")
            paragraph(bill.profile.bolTerms, size: 8.5, gray: 0.2)
        }
    }

    private mutating func draw(_ condition: BillOfLading.Condition, atPickup: Set<String>, driver: String, vehicle: String, stop: Stop) {
        let inspection = condition.inspection
        let isDelivery = inspection.kind == .delivery
        // A vehicle's heading starts a page with at least its first row of photos, never alone at a page's foot.
        ensure(condition.photos.isEmpty ? 80 : 80 + (width - 24) / 4 * 0.75 + 36)
        heading(vehicle + (isDelivery ? "CONDITION AT DELIVERY" : "CONDITION AT PICKUP"))
        let done = inspection.completedAt.map { "Inspected \(Self.time($0))" } ?? "Inspection not completed"
        text([done, inspection.odometer.map { "odometer \(NumberText.grouped($0)) mi" }].compactMap { $0 }.joined(separator: " · "), x: left, size: 9.5)
        if !inspection.notes.isEmpty { paragraph("Notes: " + inspection.notes, size: 9.5) }
        if inspection.damages.isEmpty {
            text("No damage noted.", x: left, size: 9.5)
        } else {
            for damage in inspection.damages {
                let new = isDelivery && !atPickup.contains("\(damage.location)|\(damage.type)")
                let line = "\(new ? "NEW  " : "")\(damage.locationLabel): \(damage.type.rawValue), \(damage.severity.rawValue)"
                    + (damage.note.isEmpty ? "" : " (\(damage.note))")
                ensure(13)
                text(line, x: left + 8, size: 9.5, bold: new)
            }
        }
        // Photos four to a row.
        let gap = 8.0, cell = (width - gap * 3) / 4, pictureHeight = cell * 0.75
        for row in stride(from: 0, to: condition.photos.count, by: 4) {
            let photos = condition.photos[row..<min(row + 4, condition.photos.count)]
            // Under each photo: what it shows, then when and where it was taken (two small lines).
            let where_ = { (photo: BillOfLading.Photo) in photo.captured.flatMap { Self.place($0, stop: stop, kind: condition.inspection.kind) } }
            let captionLines = photos.map { ($0.captured == nil ? 0 : 1) + (where_($0) == nil ? 0 : 1) }.max() ?? 0
            ensure(pictureHeight + 20 + Double(captionLines) * 8)
            y += 4
            for (column, photo) in photos.enumerated() {
                let x = left + Double(column) * (cell + gap)
                pdf.fill(x: x, y: y, width: cell, height: pictureHeight, gray: 0.95)
                pdf.image(photo.image, x: x, y: y, width: cell, height: pictureHeight)
                pdf.text(photo.label, x: x, y: y + pictureHeight + 10, size: 7.5, gray: 0.35)
                let stamp = [photo.captured.map { "Taken \(Self.time($0.takenAt))" }, where_(photo)].compactMap { $0 }
                for (line, words) in stamp.enumerated() {
                    pdf.text(words, x: x, y: y + pictureHeight + 18 + Double(line) * 8, size: 6.5, gray: 0.45)
                }
            }
            y += pictureHeight + 14 + Double(captionLines) * 8
        }
        if condition.photosLeftOut > 0 {
            text("\(condition.photosLeftOut) more photo\(condition.photosLeftOut == 1 ? " is" : "s are") on the inspection's page (the order's tracking link): "
                 + "too large for this document, or in a format it cannot hold.", x: left, size: 8.5, gray: 0.35)
        }
        // Who signed, and the driver.
        ensure(84)
        y += 6
        let signer = inspection.customerUnavailable ? "Customer not available to sign" : "Customer's signature"
        pdf.text(signer, x: left, y: y + 9, size: 8.5, bold: true, gray: 0.3)
        pdf.text("Driver", x: left + width / 2 + 10, y: y + 9, size: 8.5, bold: true, gray: 0.3)
        if let signature = condition.signature {
            pdf.image(signature, x: left, y: y + 14, width: width / 2 - 20, height: 50)
        } else if condition.signatureLeftOut {
            pdf.text("Signed: the signature is on the inspection's page.", x: left, y: y + 44, size: 8.5, gray: 0.35)
        }
        pdf.line(from: (left, y + 68), to: (left + width / 2 - 20, y + 68))
        if let name = inspection.signerName, !inspection.customerUnavailable {
            pdf.text(PDFText.fitted("Signed by \(name)", width: width / 2 - 20, size: 9), x: left, y: y + 78, size: 9)
        }
        pdf.text(PDFText.fitted(driver, width: width / 2 - 10, size: 10), x: left + width / 2 + 10, y: y + 50, size: 10)
        pdf.line(from: (left + width / 2 + 10, y + 68), to: (right, y + 68))
        y += 88
    }

    // MARK: Blocks

    private func stopLines(_ stop: Stop, done: String?) -> [String] {
        [stop.name, stop.address, [stop.contactName, stop.contactPhone].filter { !$0.isEmpty }.joined(separator: " · "),
         DayFormat.span(stop.windowStart, stop.windowEnd).map { "Window \($0)" } ?? "", done ?? ""].filter { !$0.isEmpty }
    }

    /// The truck's time at the stop and its detention, as the fence saw it.
    private func visitLines(_ order: Order, _ kind: StopKind, done: String?, terms: StopChargeTerms) -> [String] {
        let visit = order.visit(kind)
        var lines: [String] = []
        if let arrived = visit.arrivedAt { lines.append("Arrived \(Self.time(arrived))") }
        if let done { lines.append(done) }
        if let left = visit.departedAt, let onSite = visit.onSite {
            lines.append((visit.endsAtStatusMark ? "" : "Left \(Self.time(left)) · ") + "\(StopTimes.duration(onSite)) on site")
        }
        let minutes = order.detentionMinutes(at: kind, terms: terms)
        if minutes > 0 { lines.append("Detention \(StopTimes.duration(TimeInterval(minutes * 60))) (\(StopTimes.duration(TimeInterval(terms.freeMinutes * 60))) free)") }
        return lines
    }

    /// Where a photo was taken, as the customer may read it: at the stop, or
    /// how far from it — never the coordinates (the customer sees a city,
    /// never a driver's position; dispatch sees them on the console).
    static func place(_ captured: MediaCapture, stop: Stop, kind: Inspection.Kind) -> String? {
        guard let position = captured.position, let point = stop.location, point.isValid, position.isValid else { return nil }
        let meters = position.distance(to: point)
        let radius = Double(stop.geofenceRadiusMeters ?? LocationRules.defaultRadiusMeters) + (captured.accuracyMeters ?? 0)
        let which = kind == .pickup ? "pickup" : "delivery"
        guard meters > radius else { return "At the \(which)" }
        return String(format: "%.1f", meters / 1609.344) + " mi from the \(which)"
    }

    static func time(_ date: Date) -> String {
        let text = ConsoleFormat.time(date)?.text ?? ""
        return text
    }
}
