#if canImport(SwiftUI)
import DriverKit
import SwiftUI

/// "Not sent yet": each change, file and kept inspection that has not
/// reached dispatch, why, and Retry, Drop (after saying what is lost) or
/// Export to the share sheet.
struct NotSentView: View {
    let model: NotSentViewModel
    @State private var dropping: NotSentViewModel.Row?
    @State private var sharing: SharedFiles?

    var body: some View {
        List {
            if model.rows.isEmpty { Text(model.emptyMessage) }
            ForEach(model.rows) { row in
                VStack(alignment: .leading, spacing: 6) {
                    Text(row.title).font(.headline)
                    if row.failed { ErrorText(row.why) } else { Text(row.why).foregroundStyle(.secondary) }
                    HStack(spacing: 16) {
                        ForEach(Array(row.actions.enumerated()), id: \.offset) { _, action in
                            switch action {
                            case .retry:
                                Button("Retry") { model.retry(row) }
                            case .export:
                                Button("Export", systemImage: "square.and.arrow.up") {
                                    let files = model.export(row)
                                    if !files.isEmpty { sharing = SharedFiles(urls: files) }
                                }
                            case .discard:
                                Button("Drop", role: .destructive) { dropping = row }
                            }
                        }
                    }
                    .buttonStyle(.bordered)
                }
            }
            if let error = model.lastError { ErrorText(error) }
        }
        .navigationTitle("Not sent yet")
        .confirmationDialog(warning(dropping), isPresented: Binding(get: { dropping != nil }, set: { if !$0 { dropping = nil } }),
                            titleVisibility: .visible) {
            Button("Drop", role: .destructive) {
                if let row = dropping { Task { await model.discard(row) } }
            }
            Button("Keep", role: .cancel) {}
        }
        .sheet(item: $sharing) { files in ShareSheet(items: files.urls) }
    }

    private func warning(_ row: NotSentViewModel.Row?) -> String {
        for case .discard(let warning) in row?.actions ?? [] { return warning }
        return ""
    }
}

/// Files handed to the share sheet.
struct SharedFiles: Identifiable {
    let id = UUID()
    let urls: [URL]
}

#if canImport(UIKit)
import UIKit

/// The system share sheet (AirDrop, Mail, Save to Files) for files.
struct ShareSheet: UIViewControllerRepresentable {
    let items: [URL]
    func makeUIViewController(context: Context) -> UIActivityViewController {
        UIActivityViewController(activityItems: items, applicationActivities: nil)
    }
    func updateUIViewController(_ controller: UIActivityViewController, context: Context) {}
}
#else
/// On a Mac the share link's menu does the same.
struct ShareSheet: View {
    let items: [URL]
    var body: some View { ShareLink(items: items) { Label("Share", systemImage: "square.and.arrow.up") }.padding() }
}
#endif
#endif
