import Foundation
import Testing

/// App Store Connect refuses a build that calls a required-reason API its
/// privacy manifest does not declare. The manifest is checked here against
/// what the app's code (DriverKit, DriverUI, the app) calls.
@Suite("iOS privacy manifest")
struct PrivacyManifestTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Each required-reason category, the calls that need it, and the reason this app gives.
    static let categories: [(category: String, calls: [String], reason: String)] = [
        ("NSPrivacyAccessedAPICategoryFileTimestamp",
         ["stat(", "attributesOfItem", ".creationDate", ".modificationDate", "contentModificationDateKey", "creationDateKey"], "C617.1"),
        ("NSPrivacyAccessedAPICategorySystemBootTime", ["systemUptime", "mach_absolute_time"], "35F9.1"),
        ("NSPrivacyAccessedAPICategoryUserDefaults", ["UserDefaults"], "CA92.1"),
        ("NSPrivacyAccessedAPICategoryDiskSpace", ["volumeAvailableCapacity", "statfs(", "systemFreeSize"], "E174.1"),
    ]

    @Test("the manifest is a valid plist, tracks nothing, and declares each required-reason API the app's code calls, with its reason")
    func declaresWhatTheCodeCalls() throws {
        let manifest = Self.root.appendingPathComponent("Apps/VroomXDriver/VroomXDriver/PrivacyInfo.xcprivacy")
        let plist = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: manifest), format: nil) as? [String: Any])
        #expect(plist["NSPrivacyTracking"] as? Bool == false)
        let declared = Dictionary((plist["NSPrivacyAccessedAPITypes"] as? [[String: Any]] ?? []).compactMap { entry -> (String, [String])? in
            guard let type = entry["NSPrivacyAccessedAPIType"] as? String else { return nil }
            return (type, entry["NSPrivacyAccessedAPITypeReasons"] as? [String] ?? [])
        }) { first, _ in first }
        let collected = (plist["NSPrivacyCollectedDataTypes"] as? [[String: Any]] ?? []).compactMap { $0["NSPrivacyCollectedDataType"] as? String }
        #expect(collected.contains("NSPrivacyCollectedDataTypePreciseLocation") && collected.contains("NSPrivacyCollectedDataTypePhotosorVideos"))

        let source = try ["Sources/DriverKit", "Sources/DriverUI", "Apps/VroomXDriver"].flatMap { folder -> [String] in
            let directory = Self.root.appendingPathComponent(folder)
            return try FileManager.default.subpathsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
                .map { try String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8) }
        }.joined(separator: "\n")
        for (category, calls, reason) in Self.categories {
            let used = calls.filter { source.contains($0) }
            if used.isEmpty {
                #expect(declared[category] == nil, "\(category) is declared but nothing calls it")
            } else {
                #expect(declared[category]?.contains(reason) == true, "the app calls \(used) and must declare \(category) (\(reason))")
            }
        }
        // What the app uses today: the upload queue's file times, the server clock's elapsed time.
        #expect(Set(declared.keys) == ["NSPrivacyAccessedAPICategoryFileTimestamp", "NSPrivacyAccessedAPICategorySystemBootTime"])
    }

    @Test("the icon is one opaque 1024-point PNG the asset catalog names")
    func icon() throws {
        let set = Self.root.appendingPathComponent("Apps/VroomXDriver/VroomXDriver/Assets.xcassets/AppIcon.appiconset")
        let contents = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: set.appendingPathComponent("Contents.json"))) as? [String: Any])
        let images = try #require(contents["images"] as? [[String: String]])
        #expect(images.count == 1 && images[0]["size"] == "1024x1024" && images[0]["idiom"] == "universal")
        let png = [UInt8](try Data(contentsOf: set.appendingPathComponent(try #require(images[0]["filename"]))))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
        // IHDR: width and height (big-endian) at 16 and 20, colour type at 25 (2 = RGB, no alpha channel).
        func be32(_ at: Int) -> Int { png[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        #expect(be32(16) == 1024 && be32(20) == 1024 && png[25] == 2, "1024 × 1024 without transparency")
    }
}
