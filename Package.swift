// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "fieldlog",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "fieldlog", targets: ["fieldlog"]),
        .library(name: "FieldLog", targets: ["FieldLog"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.24.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        // Already a dependency of async-http-client: named here to trust an extra CA (--flickr-ca-file).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
        // The live page's HTTP server; without its default traits, which pull in full Foundation.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0", traits: []),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
    ],
    targets: [
        // libgps as pkg-config knows it (apt: libgps-dev).
        .systemLibrary(
            name: "CLibGPS",
            pkgConfig: "libgps",
            providers: [.apt(["libgps-dev"])]
        ),
        // The only code that touches gps_data_t: hides libgps version differences and C conventions.
        .target(
            name: "CGPSShim",
            dependencies: ["CLibGPS"],
            cSettings: [.define("_GNU_SOURCE")]
        ),
        // libjpeg(-turbo) behind one C function that owns its setjmp/longjmp error handling (apt: libjpeg-dev).
        .target(
            name: "CJPEG",
            linkerSettings: [.linkedLibrary("jpeg")]
        ),
        // libexif as pkg-config knows it (apt: libexif-dev).
        .systemLibrary(
            name: "CLibExif",
            pkgConfig: "libexif",
            providers: [.apt(["libexif-dev"])]
        ),
        // The only code that touches ExifData: GPS position and attribution of a JPEG in one plain struct.
        .target(
            name: "CExifShim",
            dependencies: ["CLibExif"]
        ),
        // The photo worker's process interface: memory files, spawning, self-imposed limits, waiting.
        .target(
            name: "CSandbox",
            cSettings: [.define("_GNU_SOURCE")]
        ),
        // libmosquitto as pkg-config knows it (apt: libmosquitto-dev).
        .systemLibrary(
            name: "CLibMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        // The only code that touches struct mosquitto: one client, its callbacks and its network thread.
        .target(
            name: "CMosquittoShim",
            dependencies: ["CLibMosquitto"],
            cSettings: [.define("_GNU_SOURCE")]
        ),
        .target(
            name: "FieldLog",
            dependencies: [
                "CSandbox",
                "CMosquittoShim",
                "CGPSShim",
                "CExifShim",
                "CJPEG",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "fieldlog",
            dependencies: [
                "FieldLog",
                "CConcurrencyHook",
                "CBuildStamp",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Swift concurrency's global executor hook, reached by the linker (see its header).
        .target(name: "CConcurrencyHook"),
        // The version `fieldlog --version` prints: FIELDLOG_VERSION in the build's environment
        // (scripts/build-release --version), defined for this one C file so that nothing else rebuilds.
        .target(
            name: "CBuildStamp",
            cSettings: Context.environment["FIELDLOG_VERSION"].map { [.define("FIELDLOG_VERSION", to: "\"\($0)\"")] } ?? []
        ),
        // Walks with known truth, as receivers report them: for the tests and the distance benchmark.
        .target(
            name: "WalkSimulation",
            dependencies: ["FieldLog"]
        ),
        .executableTarget(
            name: "walksim",
            dependencies: [
                "FieldLog",
                "WalkSimulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "FieldLogTests",
            dependencies: [
                "FieldLog",
                "WalkSimulation",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ]
)
