import Foundation
import Logging
import VroomXModels

/// One JSON object per line (`VROOMX_LOG_FORMAT=json`), for log pipelines:
/// `{"time":…,"level":…,"label":…,"message":…,"source":…, …metadata}`.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let label: String
    let output: @Sendable (String) -> Void

    public init(label: String, output: @escaping @Sendable (String) -> Void = { line in
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }) {
        self.label = label
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) { fields[key] = "\(value)" }
        fields["time"] = WireTime.string(from: Date())
        fields["level"] = event.level.rawValue
        fields["label"] = label
        fields["message"] = "\(event.message)"
        fields["source"] = event.source
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(fields) else { return }
        output(String(decoding: data, as: UTF8.self))
    }
}
