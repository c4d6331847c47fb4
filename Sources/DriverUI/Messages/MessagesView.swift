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
