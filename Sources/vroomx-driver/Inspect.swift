import ArgumentParser
import DriverKit
import Foundation
import VroomXModels

struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect a vehicle at pickup or delivery: photos, walkthrough video, damages, signature.",
        discussion: """
            vroomx-driver inspect O-5004 --pickup \\
                --photo front=front.jpg --photo rear=rear.jpg --photo left_side=left.jpg --photo right_side=right.jpg \\
                --photo odometer=odo.jpg --photo vin_plate=vin.jpg --video walk.mp4 \\
                --damage rear_bumper:dent:moderate:"fist-sized" --odometer 48210 --customer-unavailable
            Photos are JPEG, PNG or HEIC; the video MP4 or MOV; the signature a PNG or JPEG. Files upload with \
            resumable uploads (a dropped connection continues where it stopped); offline, everything is kept on \
            this device and sent by `vroomx-driver sync`. The inspection completes once its files are uploaded; \
            completing the pickup inspection picks the vehicle up, the delivery inspection delivers it.
            A damage is location:type:severity[:note][@photo_slot], e.g. front_bumper:scratch:minor:"10 cm"@damage_1.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Order number (O-5004) or id.") var order: String
    @Flag(help: "The pickup inspection.") var pickup = false
    @Flag(help: "The delivery inspection.") var delivery = false
    @Option(help: "Which of the order's vehicles (1 for the first); by default the next one not inspected at this stop.") var vehicle: Int?
    @Option(help: "slot=PATH: front, rear, left_side, right_side, odometer, vin_plate; optional front_left, front_right, rear_left, rear_right, interior, roof, wheels, keys; damage_1 … damage_30.") var photo: [String] = []
    @Option(help: "The walkthrough video.") var video: String?
    @Option(help: "location:type:severity[:note][@photo_slot].") var damage: [String] = []
    @Option(help: "The customer's signature image.") var signature: String?
    @Flag(help: "Nobody was there to sign.") var customerUnavailable = false
    @Option(help: "The signer's name in print, as on the bill of lading.") var signer: String?
    @Option(help: "Odometer reading.") var odometer: Int?
    @Option(help: "Notes.") var notes: String?
    @Flag(help: "Keep the inspection open (add more later) instead of completing it.") var draft = false

    func validate() throws {
        guard pickup != delivery else { throw ValidationError("Give --pickup or --delivery.") }
        guard signature == nil || !customerUnavailable else { throw ValidationError("Give --signature or --customer-unavailable, not both.") }
        guard signer == nil || !customerUnavailable else { throw ValidationError("Give --signer with a signature, not with --customer-unavailable.") }
    }

    func run() async throws {
        let attachments = try parseAttachments()
        let damages = try damage.map(Self.parseDamage)
        try await withSession(global) { session in
            try session.requireUnlocked()
            let app = session.app
            await session.syncIfPossible(quiet: true)
            let mark = try session.outboxMark()
            let found = try Lookup.order(order, in: app)
            let kind: Inspection.Kind = pickup ? .pickup : .delivery
            let target = try Self.vehicle(vehicle, of: found, kind, inspections: try app.database.inspections(order: found.id))
            let inspection = try app.startInspection(order: found.id, vehicle: target.id, kind: kind)
            if odometer != nil || notes != nil || !damages.isEmpty || customerUnavailable || signer != nil {
                try app.updateInspection(inspection, odometer: odometer, notes: notes, damages: damages.isEmpty ? nil : damages,
                                         customerUnavailable: customerUnavailable ? true : nil, signerName: signer)
            }
            for (slot, file) in attachments { try await app.attach(file, to: inspection, slot: slot) }
            if !draft { try app.completeInspection(inspection) }
            let which = found.vehicles.count == 1 ? found.number
                : "\(found.number), vehicle \((found.vehicles.firstIndex(of: target) ?? 0) + 1) of \(found.vehicles.count)"
                    + (target.summary.isEmpty ? "" : " (\(target.summary))")
            // This vehicle is done even while its completion waits on the phone for its files to upload.
            let left = InspectionRules.remaining(found, kind, completed: try app.database.inspections(order: found.id))
                .filter { $0 != target }.count
            let title = pickup ? "Pickup" : "Delivery"
            let done = draft ? "\(title) inspection of \(which) saved."
                : left > 0 ? "\(title) inspection of \(which) complete: \(left) more \(left == 1 ? "vehicle" : "vehicles") to inspect."
                : "\(title) inspection of \(which) complete: \(pickup ? "picked up" : "delivered")."
            // The inspection reaches the server first, then its files, then the completion.
            await session.syncIfPossible(quiet: true)
            try await session.sendUploads(of: inspection)
            try await session.finishChange(done, since: mark, files: inspection)
        }
    }

    /// The vehicle asked for (1-based), or the first not inspected yet at this stop.
    static func vehicle(_ position: Int?, of order: Order, _ kind: Inspection.Kind, inspections: [Inspection]) throws -> Vehicle {
        if let position {
            guard position >= 1, position <= order.vehicles.count else {
                throw CLIError(.usage, "Order \(order.number) has \(order.vehicles.count) \(order.vehicles.count == 1 ? "vehicle" : "vehicles"): give --vehicle 1"
                               + (order.vehicles.count > 1 ? " to \(order.vehicles.count)." : "."))
            }
            return order.vehicles[position - 1]
        }
        return InspectionRules.remaining(order, kind, completed: inspections).first ?? order.vehicle
    }

    private func parseAttachments() throws -> [(MediaSlot, URL)] {
        var attachments: [(MediaSlot, URL)] = []
        for entry in photo {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, MediaSlot(parts[0]).isValid, MediaSlot(parts[0]).kind == .photo else {
                throw CLIError(.usage, "--photo takes slot=PATH with a photo slot (see --help), e.g. front=front.jpg.")
            }
            attachments.append((MediaSlot(parts[0]), try Self.file(parts[1])))
        }
        if let video { attachments.append((.walkthrough, try Self.file(video))) }
        if let signature { attachments.append((.signature, try Self.file(signature))) }
        return attachments
    }

    static func file(_ path: String) throws -> URL {
        let url = URL(fileURLWithPath: (path as NSString).expandingTildeInPath)
        guard FileManager.default.isReadableFile(atPath: url.path) else { throw CLIError(.usage, "Cannot read \(path).") }
        return url
    }

    /// `front_bumper:scratch:minor:"10 cm"@damage_1`
    static func parseDamage(_ text: String) throws -> Damage {
        var body = text
        var slot: MediaSlot?
        if let at = text.lastIndex(of: "@") {
            slot = MediaSlot(String(text[text.index(after: at)...]))
            body = String(text[..<at])
        }
        let parts = body.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 3, let type = Damage.Kind(rawValue: parts[1]), let severity = Damage.Severity(rawValue: parts[2]) else {
            throw CLIError(.usage, """
                A damage is location:type:severity[:note][@photo_slot]; types: \(Damage.Kind.allCases.map(\.rawValue).joined(separator: ", ")); \
                severities: minor, moderate, severe.
                """)
        }
        return Damage(location: parts[0], type: type, severity: severity, note: parts.count > 3 ? parts[3] : "", photoSlot: slot)
    }
}

extension Session {
    /// Sends queued files now, with a progress bar per file on a terminal
    /// (nothing is written when `quiet`: the caller prints JSON). Stops
    /// when the network is down; what is left waits on the device.
    func sendUploads(of inspection: ID<Inspection>? = nil, quiet: Bool = false) async throws {
        let app = self.app
        let bars = terminal.colors && !quiet
        let watcher = Task { @MainActor in
            guard bars else { return }
            var shown: [String: Int] = [:]
            while !Task.isCancelled {
                // Only files on their way: a failed one (kept as evidence, say) shows no frozen bar.
                for item in (try? app.database.uploads(inspection: inspection)) ?? [] where [.pending, .uploading].contains(item.status) {
                    let percent = Int(item.progress * 100)
                    guard bars, shown[item.id] != percent else { continue }
                    shown[item.id] = percent
                    Terminal.write("\r\(Self.progressLine(item))\(Self.clearToEnd)", to: STDERR_FILENO)
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { watcher.cancel() }
        // Files sent before this command are not news: only what it sends (or fails to) is shown.
        var reported = Set(try app.database.uploads(inspection: inspection).filter { $0.status != .pending && $0.status != .uploading }.map(\.id))
        while await app.uploads.processDue() {
            if quiet { continue }
            for item in try app.database.uploads(inspection: inspection) where !reported.contains(item.id) {
                switch item.status {
                case .completed:
                    reported.insert(item.id)
                    terminal.note((bars ? "\r" : "") + Self.progressLine(item) + (bars ? Self.clearToEnd : ""))
                case .failed:
                    reported.insert(item.id)
                    terminal.note(terminal.style("\(item.about): \(item.lastError ?? "refused")", .red))
                case .pending, .uploading:
                    break
                }
            }
        }
    }

    /// Erases what a longer line before left on the screen ("1 MBBB").
    static let clearToEnd = "\u{1B}[K"

    static func progressLine(_ item: UploadItem) -> String {
        let width = 24
        let filled = min(width, max(0, Int(item.progress * Double(width))))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let name = item.about.padding(toLength: 14, withPad: " ", startingAt: 0)
        return "\(name) \(bar) \(String(format: "%3d", Int(item.progress * 100)))%  \(ByteCountFormatter.string(fromByteCount: item.size, countStyle: .file))"
    }
}
