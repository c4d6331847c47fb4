// swift-tools-version:6.1
import PackageDescription

// Three tiers (shared models → server / client → executables). Server and
// client modules never depend on each other; both depend on VroomXModels.
let package = Package(
    name: "VroomX",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "VroomXModels", targets: ["VroomXModels"]),
        .library(name: "VroomXServer", targets: ["VroomXServer"]),
        .library(name: "DriverKit", targets: ["DriverKit"]),
        .library(name: "DriverUI", targets: ["DriverUI"]),
        .executable(name: "vroomx", targets: ["vroomx"]),
        .executable(name: "vroomx-driver", targets: ["vroomx-driver"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Request traces over OTLP/HTTP only (the gRPC exporter's packages would double the build).
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        // Wire and domain types shared by server and clients. Foundation only.
        .target(name: "VroomXModels"),
        // Hashing for secrets people choose (the PIN) and random tokens.
        .target(
            name: "VroomXSecurity",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),

        // The server: HTTP API, storage (SQLite or PostgreSQL), auth, mail.
        .target(
            name: "VroomXServer",
            dependencies: [
                "VroomXModels",
                "VroomXSecurity",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // zlib: PDF streams, and reading PNG signatures into them.
                .product(name: "CompressNIO", package: "compress-nio"),
                // Numbers an operator watches, served in Prometheus's text format.
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            resources: [.copy("Console/Templates"), .copy("Console/Static"), .copy("Console/MapData")]
        ),
        .executableTarget(
            name: "vroomx",
            dependencies: [
                "VroomXServer",
                "VroomXModels",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),

        // A local server speaking Apple's push provider API (HTTP/2, TLS,
        // ES256 tokens): the push tests and the push benchmark deliver to it,
        // and it is a development stand-in for APNs in its own right.
        .target(
            name: "LocalAPNs",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Helpers shared by the test targets: a real server on a fresh
        // database of each backend, and a typed API client for it.
        .target(
            name: "VroomXTestSupport",
            dependencies: [
                "VroomXServer",
                "VroomXModels",
                "LocalAPNs",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/VroomXTestSupport"
        ),
        // The offline-first core of the driver app (Linux and Apple platforms).
        .target(
            name: "DriverKit",
            dependencies: [
                "VroomXModels",
                "VroomXSecurity",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),

        // The iOS app's SwiftUI screens over DriverKit: every file is inside
        // `#if canImport(SwiftUI)`, so on Linux this target is empty.
        .target(name: "DriverUI", dependencies: ["DriverKit", "VroomXModels"]),

        // The driver app in the terminal, built only on DriverKit.
        .executableTarget(
            name: "vroomx-driver",
            dependencies: [
                "DriverKit",
                "VroomXModels",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // Benchmarks: programs that print figures (run in release).
        .executableTarget(
            name: "vroomx-bench",
            dependencies: [
                "VroomXServer",
                "DriverKit",
                "LocalAPNs",
                "VroomXModels",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WSClient", package: "swift-websocket"),
            ]
        ),

        .testTarget(name: "VroomXModelsTests", dependencies: ["VroomXModels"]),
        .testTarget(
            name: "DriverKitTests",
            dependencies: [
                "DriverKit",
                "VroomXTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // Runs the built `vroomx` and `vroomx-driver` binaries as processes
        // (they are dependencies so that they get built).
        .testTarget(name: "VroomXCLITests", dependencies: ["vroomx", "vroomx-driver", "VroomXServer", "VroomXModels",
                                                       "VroomXTestSupport",
                                                       .product(name: "Crypto", package: "swift-crypto"),
                                                       .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "VroomXServerTests",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                "VroomXServer",
                "VroomXTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The reference the console's own template renderer is checked against.
                .product(name: "Mustache", package: "swift-mustache"),
            ]
        ),
    ]
)
