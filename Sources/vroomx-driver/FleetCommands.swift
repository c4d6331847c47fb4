import ArgumentParser
import DriverKit
import Foundation
import VroomXModels

struct Units: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The truck and trailer assigned to you, with their papers and odometer.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            await session.syncIfPossible(quiet: output.json)
            let units = try session.app.units()
            if output.json { try printJSON(Items(units)) } else { Render(terminal: session.terminal).units(units, today: LocalDate(Date(), in: .current)) }
        }
    }
}

struct Odometer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Record what your truck's (or a unit's) odometer reads.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Miles, e.g. 412350.") var miles: String
    @Option(help: "Unit number (default: your truck).") var unit: String?

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let found = try Lookup.unit(unit, kind: .truck, in: session.app)
            let reading = try Input.miles(miles)
            let mark = try session.outboxMark()
            try session.app.recordOdometer(found.id, miles: reading)
            try await session.finishChange("Recorded \(NumberText.grouped(reading)) mi on \(found.unitNumber).", since: mark)
        }
    }
}

struct UnitPhoto: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unit-photo",
                                                    abstract: "Add a photo of your truck (or trailer): a dent, the tyres, the plate.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The photo (JPEG, PNG or HEIC).", completion: .file()) var file: String
    @Option(help: "Unit number (default: your truck).") var unit: String?

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let found = try Lookup.unit(unit, kind: .truck, in: session.app)
            let mark = try session.outboxMark()
            let queued = try await session.app.addUnitPhoto(URL(fileURLWithPath: file), to: found.id)
            // Sent now when the server answers (with a progress bar); otherwise it waits on the device.
            if await session.syncIfPossible(quiet: true) { try await session.sendUploads() }
            try await session.finishChange("Added a photo of \(found.unitNumber).", since: mark, uploads: [queued.id])
        }
    }
}

extension Render {
    func units(_ units: [Equipment], today: LocalDate) {
        guard !units.isEmpty else { return terminal.line("No truck or trailer is assigned to you.") }
        for unit in units {
            let status = unit.status == .active ? "" : "  " + terminal.style(unit.status.label, .yellow)
            terminal.line(terminal.style("\(unit.kind.rawValue.capitalized) \(unit.unitNumber)", .bold) + status)
            let vehicle = [[unit.year.map(String.init), unit.make, unit.model].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " "),
                           unit.vin].filter { !$0.isEmpty }.joined(separator: " · ")
            if !vehicle.isEmpty { terminal.line("  \(vehicle)") }
            if !unit.plate.isEmpty { terminal.line("  Plate \(unit.plate)\(unit.plateState.isEmpty ? "" : " (\(unit.plateState))")") }
            if let trailer = unit.specs.trailerType {
                terminal.line("  \(trailer.rawValue.capitalized) trailer\(unit.specs.capacityCars.map { ", \($0) cars" } ?? "")")
            }
            if let miles = unit.odometerMiles { terminal.line("  Odometer \(NumberText.grouped(miles)) mi (\(time(unit.odometerAt)))") }
            if !unit.photos.isEmpty { terminal.line("  \(unit.photos.count) photo\(unit.photos.count == 1 ? "" : "s"), the last \(time(unit.photos.last?.uploadedAt))") }
            for paper in unit.documents {
                var line = "  \(paper.kind.label.capitalized)\(paper.number.isEmpty ? "" : " \(paper.number)")"
                if let expires = paper.expiresOn.map(DayFormat.day) {
                    switch paper.standing(on: today) {
                    case .expired: line += ": " + terminal.style("expired \(expires)", .red)
                    case .due(let left): line += ": " + terminal.style("expires \(expires) (in \(left) days)", .yellow)
                    case .valid, .noExpiry: line += ": expires \(expires)"
                    }
                }
                terminal.line(line)
            }
        }
    }
}
