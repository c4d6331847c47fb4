#if canImport(SwiftUI)
import DriverKit
import VroomXModels
import SwiftUI

/// The driver's truck and trailer (seed 002): details, papers with how soon
/// they run out (in words), an odometer reading, a fuel fill-up, a photo.
struct UnitsView: View {
    @State var model: UnitsViewModel
    @State private var odometer = ""
    @State private var fuelAmount = ""
    @State private var gallons = ""
    @State private var fuelOdometer = ""
    @State private var photographing: UnitPhotoTarget?

    var body: some View {
        List {
            if model.isEmpty { Text(UnitsViewModel.emptyMessage) }
            ForEach([model.truck, model.trailer].compactMap { $0 }) { unit in
                Section(unit.kind == .truck ? "Truck \(unit.unitNumber)" : "Trailer \(unit.unitNumber)") {
                    Text(unit.summary)
                    if !unit.plate.isEmpty { LabeledContent("Plate", value: "\(unit.plate) \(unit.plateState)") }
                    if let miles = unit.odometerMiles { LabeledContent("Odometer", value: "\(miles) mi") }
                    ForEach(model.papers(of: unit), id: \.paper.id) { line in
                        LabeledContent(line.paper.kind.label.capitalized) {
                            Label(line.note, systemImage: line.urgent ? "exclamationmark.triangle" : "checkmark")
                        }
                    }
                    LabeledContent("Photos", value: "\(unit.photos.count)")
                    Button("Add a photo of \(unit.unitNumber)", systemImage: "camera") { photographing = UnitPhotoTarget(id: unit.id) }
                }
            }
            if let truck = model.truck {
                Section("Odometer reading") {
                    TextField("Miles, e.g. 413,480", text: $odometer)
                        .accessibilityLabel("Odometer reading in miles")
                        #if os(iOS)
                        .keyboardType(.numberPad)
                        #endif
                    Button("Record") { model.recordOdometer(odometer, unit: truck.id) }
                }
                Section("Fuel") {
                    TextField("Amount paid, e.g. 412.80", text: $fuelAmount)
                    TextField("Gallons, e.g. 118.25", text: $gallons)
                    TextField("Odometer (optional)", text: $fuelOdometer)
                    Button("Log fill-up") { model.recordFuel(amount: fuelAmount, gallons: gallons, odometer: fuelOdometer) }
                }
            }
            if let error = model.lastError { ErrorText(error) }
            if let done = model.confirmation { Label(done, systemImage: "checkmark.circle") }
        }
        .navigationTitle("My truck and trailer")
        .sheet(item: $photographing) { target in
            CameraCaptureView(slot: MediaSlot("unit_photo")) { file, _ in
                photographing = nil
                if let file { Task { await model.addPhoto(file, to: target.id) } }
            }
        }
    }
}

/// The unit a photo is being taken of (the camera sheet's item).
private struct UnitPhotoTarget: Identifiable {
    let id: ID<Equipment>
}
#endif
