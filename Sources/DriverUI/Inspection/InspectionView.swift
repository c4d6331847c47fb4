#if canImport(SwiftUI)
import DriverKit
import VroomXModels
import SwiftUI

/// The pickup or delivery inspection (seed 002): a camera per photo slot
/// with what to frame, the walkthrough video, damages with their close-ups,
/// the odometer, and the customer's signature or "customer not available".
/// Everything is kept on the phone and uploads when there is signal.
struct InspectionView: View {
    @State var model: InspectionViewModel
    @State private var capturing: MediaSlot?
    @State private var signing = false
    @State private var addingDamage = false
    @State private var odometer = ""
    @State private var signerName = ""
    @State private var notes = ""
    @State private var closeUpNext: MediaSlot?
    @Environment(\.dismiss) private var dismiss

    var body: some View {
        List {
            if let state = model.state {
                if let vehicle = state.vehicleTitle {
                    Section { Text(vehicle).font(.headline) }
                }
                Section {
                    ForEach(state.photos) { slot in slotRow(slot) }
                    if !state.optionalAngles.isEmpty {
                        Menu {
                            ForEach(state.optionalAngles, id: \.self) { angle in
                                Button(angle.title) { capturing = angle }
                            }
                        } label: {
                            Label("Add another angle", systemImage: "plus")
                        }
                    }
                } header: {
                    Text("Photos")
                } footer: {
                    Text("Each photo shows an outline of what to frame.")
                }
                Section("Walkthrough video") { slotRow(state.walkthrough) }
                Section("Damages") {
                    ForEach(Array(state.inspection.damages.enumerated()), id: \.offset) { index, damage in
                        VStack(alignment: .leading) {
                            Text("\(damage.type.rawValue.capitalized) · \(damage.severity.rawValue)").font(.headline)
                            Text(damage.locationLabel)
                            if !damage.note.isEmpty { Text(damage.note).font(.caption) }
                        }
                        .accessibilityElement(children: .combine)
                        .swipeActions { Button("Remove", role: .destructive) { model.removeDamage(at: index) } }
                    }
                    if state.nextDamageSlot != nil, !state.isCompleted {
                        Button("Mark a damage", systemImage: "exclamationmark.triangle") { addingDamage = true }
                    }
                }
                Section("Odometer") {
                    HStack {
                        TextField(state.inspection.odometer.map { "\($0) mi" } ?? "Miles, e.g. 48,210", text: $odometer)
                            #if os(iOS)
                            .keyboardType(.numberPad)
                            #endif
                            .onSubmit { model.setOdometer(odometer) }
                            .accessibilityLabel("Odometer reading in miles")
                        // A number pad has no Return key: saved here, and again on Complete.
                        Button("Save") { model.setOdometer(odometer) }.disabled(odometer.isEmpty)
                    }
                }
                Section("Notes") {
                    // On the bill of lading: what the photos cannot say ("keys left with the gate", "no spare").
                    TextField("Anything dispatch and the customer should know", text: $notes, axis: .vertical)
                        .lineLimit(2...6)
                        .onAppear { notes = state.inspection.notes }
                        .onSubmit { model.setNotes(notes) }
                    if notes != state.inspection.notes {
                        Button("Save notes") { model.setNotes(notes) }
                    }
                }
                Section("Customer") {
                    slotRow(state.signature)
                    if !state.inspection.customerUnavailable {
                        TextField("Signer's name in print", text: $signerName)
                            .textContentType(.name)
                            .onSubmit { model.setSignerName(signerName) }
                            .onAppear { signerName = state.inspection.signerName ?? "" }
                    }
                    Toggle("Customer not available to sign", isOn: Binding(
                        get: { state.inspection.customerUnavailable }, set: { model.setCustomerUnavailable($0) }))
                }
                Section {
                    if let reason = state.blockedReason, !state.isCompleted {
                        Label(reason, systemImage: "info.circle").foregroundStyle(.secondary)
                    }
                    Button(state.inspection.kind == .pickup ? "Complete pickup" : "Complete delivery") {
                        model.setOdometer(odometer)
                        // A name typed without Return is kept too.
                        if !signerName.isEmpty, signerName != state.inspection.signerName { model.setSignerName(signerName) }
                        if notes != state.inspection.notes { model.setNotes(notes) }
                        model.complete()
                        guard model.lastError == nil else { return }
                        // A dealer load is inspected in one pass: the stop's next vehicle follows, the signer's name kept.
                        if let next = try? model.nextVehicle() {
                            model = next
                            odometer = ""
                            notes = ""
                        } else {
                            dismiss()
                        }
                    }
                    .buttonStyle(.borderedProminent)
                    .disabled(!state.canComplete)
                }
                if let error = model.lastError { ErrorText(error) }
            }
        }
        .navigationTitle(model.state?.title ?? "Inspection")
        .toolbar { ToolbarItem(placement: .cancellationAction) { Button("Close") { dismiss() } } }
        .sheet(item: Binding(get: { capturing.map(SlotCapture.init) }, set: { capturing = $0?.slot })) { capture in
            CameraCaptureView(slot: capture.slot) { file, justTaken in
                capturing = nil
                if let file { Task { await model.attach(file, to: capture.slot, justTaken: justTaken) } }
            }
        }
        .sheet(isPresented: $signing) {
            SignaturePadView { file in
                signing = false
                if let file { Task { await model.attach(file, to: .signature) } }
            }
        }
        .sheet(isPresented: $addingDamage, onDismiss: {
            // The close-up's camera opens once the damage sheet has gone (two sheets cannot show at once).
            if let slot = closeUpNext { closeUpNext = nil; capturing = slot }
        }) {
            if let slot = model.state?.nextDamageSlot {
                DamageForm(photoSlot: slot) { damage in
                    if let damage {
                        model.addDamage(damage)
                        closeUpNext = slot
                    }
                    addingDamage = false
                }
            } else {
                VStack {
                    Text("This inspection holds \(Inspection.maxDamages) damages already.")
                    Button("Close") { addingDamage = false }
                }
                .padding()
            }
        }
    }

    private func slotRow(_ slot: InspectionSlotState) -> some View {
        HStack {
            Image(systemName: slot.symbol).accessibilityHidden(true)
            VStack(alignment: .leading) {
                Text(slot.title)
                Text(slot.statusText).font(.caption).foregroundStyle(.secondary)
            }
            Spacer()
            switch slot.status {
            case .failed(_, let upload):
                Button("Retry") { model.retry(upload) }
                    .accessibilityLabel("Send \(slot.title) again")
                Button("Retake") { Task { await model.discard(upload); capturing = slot.slot } }
                    .accessibilityLabel("Retake \(slot.title)")
            case .done:
                EmptyView()
            case .missing, .waiting:
                if model.state?.isCompleted == false {
                    Button(slot.status == .missing ? "Take" : "Retake") {
                        if slot.slot == .signature { signing = true } else { capturing = slot.slot }
                    }
                    .accessibilityLabel("\(slot.status == .missing ? "Take" : "Retake") \(slot.title)")
                }
            }
        }
        .accessibilityElement(children: .contain)
        .accessibilityLabel(slot.accessibilityLabel)
    }
}

private struct SlotCapture: Identifiable {
    let slot: MediaSlot
    var id: String { slot.rawValue }
}

/// A damage: where, what, how bad; its close-up is taken next.
struct DamageForm: View {
    let photoSlot: MediaSlot
    let done: (Damage?) -> Void
    @State private var location = "front_bumper"
    @State private var type: Damage.Kind = .scratch
    @State private var severity: Damage.Severity = .minor
    @State private var note = ""

    static let locations = ["front_bumper", "rear_bumper", "hood", "roof", "trunk", "left_front_door", "left_rear_door",
                            "right_front_door", "right_rear_door", "left_fender", "right_fender", "windshield", "wheels", "interior"]

    var body: some View {
        NavigationStack {
            Form {
                Picker("Where", selection: $location) {
                    ForEach(Self.locations, id: \.self) { Text($0.replacingOccurrences(of: "_", with: " ").capitalized).tag($0) }
                }
                Picker("What", selection: $type) {
                    ForEach(Damage.Kind.allCases, id: \.self) { Text($0.rawValue.capitalized).tag($0) }
                }
                Picker("How bad", selection: $severity) {
                    ForEach(Damage.Severity.allCases, id: \.self) { Text($0.rawValue.capitalized).tag($0) }
                }
                TextField("Note (size, where exactly)", text: $note)
            }
            .navigationTitle("Mark a damage")
            .toolbar {
                ToolbarItem(placement: .cancellationAction) { Button("Cancel") { done(nil) } }
                ToolbarItem(placement: .confirmationAction) {
                    Button("Take close-up") { done(Damage(location: location, type: type, severity: severity, note: note, photoSlot: photoSlot)) }
                }
            }
        }
    }
}
#endif
