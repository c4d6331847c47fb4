#if canImport(SwiftUI)
import DriverKit
import VroomXModels
import SwiftUI

/// Trips: the list, newest first; a push or message opens a trip or an
/// order on top of it.
struct TripsView: View {
    let app: DriverApp
    let shell: TabShellViewModel
    @State private var model: TripsViewModel
    @State private var path = NavigationPath()

    init(app: DriverApp, shell: TabShellViewModel) {
        self.app = app
        self.shell = shell
        _model = State(initialValue: TripsViewModel(app: app))
    }

    var body: some View {
        NavigationStack(path: $path) {
            List(model.list) { trip in
                NavigationLink(value: trip.id) { TripRow(trip: trip) }
            }
            .overlay { if model.list.isEmpty { ContentUnavailableView("No trips yet", systemImage: "shippingbox") } }
            .navigationTitle("Trips")
            .navigationDestination(for: ID<Trip>.self) { TripDetailView(app: app, model: TripDetailViewModel(app: app, trip: $0)) }
            .navigationDestination(for: ID<Order>.self) { OrderDetailView(app: app, model: OrderDetailViewModel(app: app, order: $0)) }
            .refreshable { await app.syncNow() }
        }
        .onChange(of: shell.opened, initial: true) { open() }
    }

    private func open() {
        switch shell.opened {
        case .trip(let trip)?: path = NavigationPath([trip])
        case .order(let order)?: path = NavigationPath([order])
        case nil: return
        }
        shell.opened = nil
    }
}

/// A trip's orders, expenses and totals.
struct TripDetailView: View {
    let app: DriverApp
    @State var model: TripDetailViewModel
    @State private var addingExpense = false
    @State private var photographingReceipt: ReceiptTarget?

    var body: some View {
        List {
            if let state = model.state {
                Section {
                    LabeledContent("Route", value: state.route)
                    LabeledContent("Status", value: state.trip.status.title)
                    LabeledContent("Miles", value: "\(state.trip.miles)")
                    LabeledContent("Your pay", value: MoneyFormat.dollars(state.trip.driverPayCents))
                    LabeledContent("Delivered", value: "\(state.deliveredCount) of \(state.orders.count)")
                    if let note = state.progressNote { Text(note).font(.footnote).foregroundStyle(.secondary) }
                    if state.canStart { Button("Start trip") { model.startTrip() } }
                }
                Section("Orders") {
                    ForEach(state.orders) { order in
                        NavigationLink(value: order.id) {
                            VStack(alignment: .leading) {
                                HStack {
                                    Text(order.number).font(.headline)
                                    Spacer()
                                    Text(order.status.title).font(.caption)
                                    if let standing = order.timeliness(today: LocalDate(Date())) {
                                        Text(standing.label).font(.caption).foregroundStyle(standing.isLate ? .red : .orange)
                                    }
                                }
                                Text(order.vehiclesSummary).font(.subheadline)
                                Text("\(order.pickup.address) → \(order.delivery.address)").font(.caption).foregroundStyle(.secondary)
                            }
                            .accessibilityElement(children: .combine)
                        }
                    }
                }
                Section {
                    ForEach(state.expenses) { expense in
                        LabeledContent(expense.category.label) {
                            VStack(alignment: .trailing) {
                                Text(MoneyFormat.dollars(expense.amountCents))
                                Text(model.receiptsLabel(expense)).font(.caption).foregroundStyle(.secondary)
                            }
                        }
                        .swipeActions {
                            Button("Delete", role: .destructive) { model.deleteExpense(expense.id) }
                            Button("Receipt", systemImage: "camera") { photographingReceipt = ReceiptTarget(id: expense.id) }
                        }
                    }
                    Button("Add expense", systemImage: "plus") { addingExpense = true }
                } header: {
                    Text("Expenses · \(MoneyFormat.dollars(state.expensesTotalCents))")
                }
                if let error = model.lastError { ErrorText(error) }
            }
        }
        .navigationTitle(model.state?.trip.number ?? "Trip")
        .sheet(isPresented: $addingExpense) { ExpenseForm(model: model) }
        .sheet(item: $photographingReceipt) { target in
            CameraCaptureView(slot: MediaSlot("receipt")) { file, _ in
                photographingReceipt = nil
                if let file { Task { await model.addReceipt(file, to: target.id) } }
            }
        }
    }
}

/// The expense a receipt is being photographed for (the camera sheet's item).
private struct ReceiptTarget: Identifiable {
    let id: ID<Expense>
}

/// An expense on a trip: category, amount as typed, a note.
struct ExpenseForm: View {
    let model: TripDetailViewModel
    @Environment(\.dismiss) private var dismiss
    @State private var category: ExpenseCategory = .fuel
    @State private var amount = ""
    @State private var notes = ""

    var body: some View {
        NavigationStack {
            Form {
                Picker("Category", selection: $category) {
                    ForEach(ExpenseCategory.allCases, id: \.self) { Text($0.label).tag($0) }
                }
                TextField("Amount, e.g. 84.20", text: $amount)
                    #if os(iOS)
                    .keyboardType(.decimalPad)
                    #endif
                    .accessibilityLabel("Amount in dollars")
                TextField("Note", text: $notes)
                if !amount.isEmpty && DriverInput.cents(amount) == nil {
                    Text("An amount looks like 84.20.").foregroundStyle(.red)
                }
            }
            .navigationTitle("New expense")
            .toolbar {
                ToolbarItem(placement: .cancellationAction) { Button("Cancel") { dismiss() } }
                ToolbarItem(placement: .confirmationAction) {
                    Button("Save") {
                        guard let cents = DriverInput.cents(amount) else { return }
                        model.addExpense(category, amountCents: cents, notes: notes.isEmpty ? nil : notes)
                        dismiss()
                    }
                    .disabled(DriverInput.cents(amount) == nil)
                }
            }
        }
    }
}

/// One order: the vehicle, both stops, the ETAs, and the inspection that moves it.
struct OrderDetailView: View {
    let app: DriverApp
    @State var model: OrderDetailViewModel
    @State private var inspection: InspectionViewModel?
    @State private var editingETA: ETAEdit?
    @State private var eta = Date()
    @State private var openError: String?
    @State private var collecting = false
    @State private var reportingProblem = false

    var body: some View {
        List {
            if let order = model.order {
                Section(order.vehicles.count == 1 ? "Vehicle" : "\(order.vehicles.count) vehicles") {
                    ForEach(Array(order.vehicles.enumerated()), id: \.offset) { _, vehicle in
                        VStack(alignment: .leading, spacing: 2) {
                            Text(vehicle.summary.isEmpty ? "Vehicle" : vehicle.summary).font(.headline)
                            if !vehicle.vin.isEmpty { Text(vehicle.vin).font(.body.monospaced()) }
                            let marks = [vehicle.lotNumber.map { "Lot \($0)" }, vehicle.operable ? nil : "Inoperable"].compactMap { $0 }
                            if !marks.isEmpty { Text(marks.joined(separator: " · ")).font(.subheadline).foregroundStyle(.secondary) }
                        }
                    }
                    LabeledContent("Status", value: order.status.title)
                    if let load = order.externalLoadID { LabeledContent("Load ID", value: load).font(.body.monospaced()) }
                }
                stopSection("Pickup", order.pickup, eta: order.pickupETA, kind: .pickup)
                stopSection("Delivery", order.delivery, eta: order.deliveryETA, kind: .delivery)
                if let title = model.nextInspectionTitle {
                    Section {
                        Button(title, systemImage: "camera") {
                            do { inspection = try model.inspection() } catch { openError = "\(error)" }
                        }
                    }
                }
                if model.canCollect {
                    Section {
                        Button("Record money collected", systemImage: "banknote") { collecting = true }
                    } footer: {
                        Text("A check or cash the customer handed you (COD, COP): dispatch sees the invoice paid.")
                    }
                }
                if model.problemStop != nil || !model.reportedProblems.isEmpty {
                    Section("Problems") {
                        ForEach(model.reportedProblems, id: \.self) { Text($0) }
                        if model.problemStop != nil {
                            Button("Report a problem", systemImage: "exclamationmark.triangle") { reportingProblem = true }
                        }
                    }
                }
                if let error = model.lastError ?? openError { ErrorText(error) }
            }
        }
        .navigationTitle(model.order?.number ?? "Order")
        .sheet(isPresented: $reportingProblem) { ReportProblemForm(model: model) }
        .sheet(item: Binding(get: { inspection.map { InspectionSheet(model: $0, id: $0.inspectionID) } }, set: { inspection = $0?.model })) { sheet in
            NavigationStack { InspectionView(model: sheet.model) }
        }
        .sheet(isPresented: $collecting) { CollectPaymentForm(model: model) }
        .sheet(item: $editingETA) { edit in
            let kind = edit.kind
            NavigationStack {
                Form {
                    DatePicker("ETA", selection: $eta, in: Date()...)
                }
                .navigationTitle(kind == .pickup ? "Pickup ETA" : "Delivery ETA")
                .toolbar {
                    ToolbarItem(placement: .confirmationAction) {
                        Button("Save") { model.setETA(kind, eta); editingETA = nil }
                    }
                    ToolbarItem(placement: .cancellationAction) { Button("Cancel") { editingETA = nil } }
                }
            }
        }
    }

    private func stopSection(_ title: String, _ stop: Stop, eta: Date?, kind: HomeState.NextStop.Kind) -> some View {
        Section(title) {
            if !stop.name.isEmpty { Text(stop.name).font(.headline) }
            // Tapping the address opens the route in Maps; the contact's number calls them.
            if let directions = StopLinks.directions(to: stop) {
                Link(destination: directions) { Label(stop.address, systemImage: "map") }
                    .accessibilityHint("Opens directions in Maps")
            } else {
                Text(stop.address)
            }
            if !stop.contactName.isEmpty || !stop.contactPhone.isEmpty {
                LabeledContent("Contact", value: [stop.contactName, stop.contactPhone].filter { !$0.isEmpty }.joined(separator: " · "))
            }
            if let call = StopLinks.call(stop.contactPhone) {
                Link(destination: call) { Label("Call \(stop.contactName.isEmpty ? stop.contactPhone : stop.contactName)", systemImage: "phone") }
            }
            if let window = DayFormat.span(stop.windowStart, stop.windowEnd) {
                LabeledContent("Window", value: window)
            }
            LabeledContent("Your ETA", value: eta?.formatted(date: .abbreviated, time: .shortened) ?? "Not set")
            if let onSite = model.timeOnSite(kind) { LabeledContent("At the stop", value: onSite) }
            if model.canSetETA(kind) {
                Button(eta == nil ? "Set ETA" : "Change ETA") { self.eta = eta ?? Date(); editingETA = ETAEdit(kind: kind) }
            }
        }
    }
}

/// A problem at the stop in a few taps: what, and a few words for dispatch.
struct ReportProblemForm: View {
    let model: OrderDetailViewModel
    @Environment(\.dismiss) private var dismiss
    @State private var kind: StopProblemKind?
    @State private var note = ""
    @State private var photos: [URL] = []
    @State private var photographing = false

    var body: some View {
        NavigationStack {
            Form {
                Section(model.problemStop == .delivery ? "At the delivery" : "At the pickup") {
                    ForEach(model.problemChoices, id: \.self) { choice in
                        Button { kind = choice } label: {
                            Label(choice.label, systemImage: kind == choice ? "checkmark.circle.fill" : "circle")
                        }
                    }
                }
                Section("For dispatch (optional)") {
                    TextField("What happened", text: $note, axis: .vertical)
                    Button(photos.isEmpty ? "Take a photo" : "\(NumberText.count(photos.count, "photo")) · add another", systemImage: "camera") {
                        photographing = true
                    }
                    .disabled(photos.count >= StopProblem.maxPhotos)
                }
                if let error = model.lastError { ErrorText(error) }
            }
            .navigationTitle("Report a problem")
            .toolbar {
                ToolbarItem(placement: .cancellationAction) { Button("Cancel") { dismiss() } }
                ToolbarItem(placement: .confirmationAction) {
                    Button("Send") {
                        Task { if let kind, await model.reportProblem(kind, note: note, photos: photos) { dismiss() } }
                    }
                    .disabled(kind == nil)
                }
            }
            .sheet(isPresented: $photographing) {
                CameraCaptureView(slot: MediaSlot("problem_photo")) { file, _ in
                    photographing = false
                    if let file { photos.append(file) }
                }
            }
        }
    }
}

/// Money collected for an order: amount, how, the check number, a photo of it.
struct CollectPaymentForm: View {
    let model: OrderDetailViewModel
    @Environment(\.dismiss) private var dismiss
    @State private var amount = ""
    @State private var method: PaymentMethod = .check
    @State private var reference = ""
    @State private var photos: [URL] = []
    @State private var photographing = false

    var body: some View {
        NavigationStack {
            Form {
                TextField("Amount, e.g. 1800.00", text: $amount)
                    #if os(iOS)
                    .keyboardType(.decimalPad)
                    #endif
                    .accessibilityLabel("Amount in dollars")
                Picker("How", selection: $method) {
                    ForEach(OrderDetailViewModel.collectionMethods, id: \.self) { Text($0.label).tag($0) }
                }
                TextField(method == .check ? "Check number" : "Receipt number (optional)", text: $reference)
                Button(photos.isEmpty ? "Photograph the \(method == .check ? "check" : "receipt")" : "\(NumberText.count(photos.count, "photo")) · add another",
                       systemImage: "camera") { photographing = true }
                if !amount.isEmpty && DriverInput.cents(amount) == nil {
                    Text("An amount looks like 1800.00.").foregroundStyle(.red)
                }
                if let error = model.lastError { ErrorText(error) }
            }
            .navigationTitle("Money collected")
            .toolbar {
                ToolbarItem(placement: .cancellationAction) { Button("Cancel") { dismiss() } }
                ToolbarItem(placement: .confirmationAction) {
                    Button("Save") {
                        Task {
                            if await model.collect(amount: amount, method: method, reference: reference, photos: photos) { dismiss() }
                        }
                    }
                    .disabled(DriverInput.cents(amount) == nil)
                }
            }
            .sheet(isPresented: $photographing) {
                CameraCaptureView(slot: MediaSlot("payment_photo")) { file, _ in
                    photographing = false
                    if let file { photos.append(file) }
                }
            }
        }
    }
}

private struct InspectionSheet: Identifiable {
    let model: InspectionViewModel
    let id: ID<Inspection>
}

/// A stop whose ETA is being edited (the sheet's item).
private struct ETAEdit: Identifiable {
    let kind: HomeState.NextStop.Kind
    var id: String { kind.rawValue }
}
#endif
