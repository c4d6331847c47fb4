#if canImport(SwiftUI)
import DriverKit
import VroomXModels
import SwiftUI

/// Messages (seed 003): Today / This Week / Earlier, filters, unread dots
/// (and the word "Unread" for VoiceOver), swipe to mark read, pull to refresh;
/// tapping opens what its push opens.
struct MessagesView: View {
    @State var model: MessagesViewModel
    let shell: TabShellViewModel
    @State private var expanded: Set<ID<DriverNotification>> = []
    @State private var writing = false

    var body: some View {
        @Bindable var bindable = model
        NavigationStack {
            List {
                Picker("Show", selection: $bindable.filter) {
                    ForEach(MessagesState.Filter.allCases, id: \.self) { Text($0.title).tag($0) }
                }
                ForEach(model.state.sections) { section in
                    Section(section.title) {
                        ForEach(section.rows) { row in
                            Button { tap(row) } label: { MessageRow(row: row, expanded: expanded.contains(row.id)) }
                                .buttonStyle(.plain)
                                .swipeActions {
                                    if row.isUnread { Button("Mark read") { _ = model.open(row.id) } }
                                }
                            if model.canAcknowledge(row.notification) {
                                Button("Got it") { model.acknowledge(row.id) }.buttonStyle(.borderedProminent)
                            }
                        }
                    }
                }
            }
            .overlay {
                if model.state.isEmpty {
                    ContentUnavailableView(MessagesState.emptyTitle, systemImage: "message", description: Text(MessagesState.emptyBody))
                }
            }
            .refreshable { await model.refresh() }
            .navigationTitle("Messages")
            .toolbar {
                ToolbarItem(placement: .primaryAction) {
                    Button { writing = true } label: { Label("Write to dispatch", systemImage: "square.and.pencil") }
                }
            }
            .sheet(isPresented: $writing) { ConversationView(model: model) }
        }
    }

    private func tap(_ row: MessagesState.Row) {
        guard let destination = model.open(row.id) else { return }
        if destination == .inline {
            if expanded.contains(row.id) { expanded.remove(row.id) } else { expanded.insert(row.id) }
        } else {
            shell.open(destination)
        }
    }
}

/// The conversation with dispatch, both ways, and a field to write.
struct ConversationView: View {
    let model: MessagesViewModel
    @State private var text = ""
    @State private var photos: [URL] = []
    @State private var photographing = false
    @Environment(\.dismiss) private var dismiss

    var body: some View {
        NavigationStack {
            List(model.conversation) { line in
                VStack(alignment: line.from == .driver ? .trailing : .leading, spacing: 2) {
                    if !line.title.isEmpty { Text(line.title).font(.headline) }
                    Text(line.body)
                    if !line.photos.isEmpty { Label(NumberText.count(line.photos.count, "photo"), systemImage: "photo").font(.caption) }
                    Text(line.readAt == nil ? "Sent" : "Read").font(.caption).foregroundStyle(.secondary)
                }
                .frame(maxWidth: .infinity, alignment: line.from == .driver ? .trailing : .leading)
            }
            .safeAreaInset(edge: .bottom) {
                VStack(alignment: .leading) {
                    if let error = model.lastError { Text(error).font(.footnote).foregroundStyle(.red) }
                    HStack {
                        Button { photographing = true } label: {
                            Label(photos.isEmpty ? "Add a photo" : NumberText.count(photos.count, "photo"), systemImage: "camera")
                        }
                        .labelStyle(.iconOnly)
                        .disabled(photos.count >= DriverMessage.maxPhotos)
                        TextField("Message to dispatch", text: $text, axis: .vertical)
                        Button("Send") {
                            Task { if await model.send(text, photos: photos) { (text, photos) = ("", []) } }
                        }.disabled(text.isEmpty)
                    }
                }
                .padding()
                .background(.bar)
            }
            .navigationTitle("Dispatch")
            .toolbar { ToolbarItem(placement: .cancellationAction) { Button("Done") { dismiss() } } }
            .sheet(isPresented: $photographing) {
                CameraCaptureView(slot: MediaSlot("message_photo")) { file, _ in
                    photographing = false
                    if let file { photos.append(file) }
                }
            }
        }
    }
}

struct MessageRow: View {
    let row: MessagesState.Row
    let expanded: Bool

    var body: some View {
        HStack(alignment: .top, spacing: 12) {
            Circle().fill(row.isUnread ? Color.accentColor : .clear).frame(width: 8, height: 8).padding(.top, 6)
                .accessibilityHidden(true)
            Image(systemName: row.symbol).accessibilityHidden(true)
            VStack(alignment: .leading, spacing: 4) {
                Text(row.notification.title).fontWeight(row.isUnread ? .bold : .regular)
                Text(row.notification.body).lineLimit(expanded ? nil : 2).font(.subheadline)
                Text(row.timeLabel).font(.caption).foregroundStyle(.secondary)
            }
        }
        .accessibilityElement(children: .combine)
        .accessibilityLabel("\(row.isUnread ? "Unread. " : "")\(row.notification.title). \(row.notification.body). \(row.timeLabel)")
    }
}
#endif
