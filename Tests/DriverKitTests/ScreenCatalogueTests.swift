import DriverKit
import Foundation
import Testing
import VroomXModels
import VroomXTestSupport

/// The iOS screens cannot compile on Linux, so this checks what can be
/// checked here: the screen catalogue in docs/ios.md names exactly the files of
/// `Sources/DriverUI`, and every view model a screen names or builds exists
/// in DriverKit (each is constructed below, so a missing one does not compile).
@Suite("iOS screen catalogue")
@MainActor
struct ScreenCatalogueTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Each view model a screen may use, built against a real app.
    static func viewModels(_ app: DriverApp) throws -> [String: Any] {
        let order = ID<Order>()
        return [
            "AppRouter": app.router,
            "LockScreenViewModel": LockScreenViewModel(app: app),
            "TabShellViewModel": TabShellViewModel(app: app),
            "BannersViewModel": BannersViewModel(app: app),
            "HomeViewModel": HomeViewModel(app: app),
            "TripsViewModel": TripsViewModel(app: app),
            "TripDetailViewModel": TripDetailViewModel(app: app, trip: ID()),
            "OrderDetailViewModel": OrderDetailViewModel(app: app, order: order),
            "InspectionViewModel": InspectionViewModel.self,
            "EarningsViewModel": EarningsViewModel(app: app),
            "MessagesViewModel": MessagesViewModel(app: app),
            "ProfileViewModel": ProfileViewModel(app: app),
            "UploadsViewModel": UploadsViewModel(app: app),
            "UnitsViewModel": UnitsViewModel(app: app),
            "NotSentViewModel": NotSentViewModel(app: app),
        ]
    }

    @Test("the screens in docs/ios.md are the files of Sources/DriverUI, and each view model they use exists in DriverKit")
    func catalogue() throws {
        let section = try String(contentsOf: Self.root.appendingPathComponent("docs/ios.md"), encoding: .utf8)
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| ") && $0.contains(".swift`") }
        let listed = Set(rows.compactMap { $0.firstMatch(of: /`([A-Za-z]+\/[A-Za-z]+\.swift)`/).map { String($0.1) } })
        // The third column ("| screen | file | model | seed |"): empty pieces kept, so the leading "|" is piece 0.
        let named = Set(rows.flatMap { row in
            let cells = row.split(separator: "|", omittingEmptySubsequences: false)
            return cells.count > 3 ? cells[3].matches(of: /`([A-Za-z]+)`/).map { String($0.1) } : []
        })
        #expect(named.contains("InspectionViewModel") && named.contains("NotSentViewModel"), "the model column was not read: \(named.sorted())")

        let folder = Self.root.appendingPathComponent("Sources/DriverUI")
        let files = Set(try FileManager.default.subpathsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") })
        #expect(listed == files, "docs/ios.md lists \(listed.subtracting(files).sorted()) that are not files; files not listed: \(files.subtracting(listed).sorted())")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("catalogue-\(UUID().uuidString.prefix(8))")
        let app = try DriverApp(DriverApp.Configuration(serverURL: "http://127.0.0.1:9", stateDirectory: directory))
        let known = try Self.viewModels(app)
        #expect(named.subtracting(known.keys).isEmpty, "docs/ios.md names models DriverKit lacks: \(named.subtracting(known.keys).sorted())")
        // Every view model a screen builds is one of them.
        for file in files {
            let source = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            let used = Set(source.matches(of: /([A-Z][A-Za-z]+ViewModel)\(/).map { String($0.1) })
            #expect(used.subtracting(known.keys).isEmpty, "\(file) builds \(used.subtracting(known.keys).sorted()), not in DriverKit")
        }
    }
}
