// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "fieldlog",
    products: [
        .executable(name: "fieldlog", targets: ["fieldlog"]),
        // For the fuzzers (fuzz/Package.swift).
        .library(name: "WalkModel", targets: ["WalkModel"]),
        .library(name: "WalkJournal", targets: ["WalkJournal"]),
        .library(name: "Photos", targets: ["Photos"]),
        .library(name: "FieldLogDaemon", targets: ["FieldLogDaemon"]),
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
        // Already a dependency of hummingbird: named for NIOHTTPTypes, which the connection guard uses.
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.20.0"),
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
        // The only code that touches struct mosquitto: one client, its callbacks and its network thread. It
        // loads libmosquitto (apt: libmosquitto-dev to build, libmosquitto1 to run) when sharing starts, so that
        // the recorder never maps it.
        .target(
            name: "CMosquittoShim",
            cSettings: [.define("_GNU_SOURCE")]
        ),
        // The layers, lowest first; each depends only on those above it in this list, so the compiler keeps the
        // direction (README, Layout). The records a walk is made of and their one encoding: fixes, track
        // points, milestones, photos; the journal line codec and the byte writer every export uses.
        .target(name: "WalkModel"),
        // Files that must survive power cuts and hostile contents (openat, fsync, bounded reads), and sleeping
        // on the event loop.
        .target(
            name: "SystemIO",
            dependencies: [
                "CSandbox",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The walk journal: one append-only file per walk, its writer, reader, follower and index.
        .target(
            name: "WalkJournal",
            dependencies: ["WalkModel", "SystemIO", .product(name: "Logging", package: "swift-log")]
        ),
        // From gpsd to the journal: the reader, the tracker and its distance, the recorder and its status file.
        .target(
            name: "Recording",
            dependencies: [
                "WalkModel",
                "SystemIO",
                "WalkJournal",
                "CGPSShim",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Photo bytes to a thumbnail, in a limited child process: libjpeg and libexif behind their shims; the
        // bounded cache the thumbnails go to, and its files as the page, sharing and `export` read them.
        .target(
            name: "Thumbnailing",
            dependencies: ["WalkModel", "SystemIO", "CJPEG", "CExifShim", "CSandbox"]
        ),
        // A photo for every milestone: the sources (Flickr, Commons, a local folder) and the service, which writes
        // its outcomes through the journal's port (the recorder provides it): the photo path runs one way.
        .target(
            name: "Photos",
            dependencies: [
                "WalkModel",
                "SystemIO",
                "WalkJournal",
                "Thumbnailing",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The walk shared live with OwnTracks-compatible servers (MQTT, HTTP), the journal as its queue.
        .target(
            name: "Sharing",
            dependencies: [
                "WalkModel",
                "SystemIO",
                "WalkJournal",
                "Thumbnailing",
                "CMosquittoShim",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // A walk as JSON, GPX, GeoJSON, one HTML page, and the lines `fieldlog tail` prints.
        .target(
            name: "Exports",
            dependencies: ["WalkModel", "WalkJournal"],
            // The page's markup and stylesheet as files, compiled into the binary (no Bundle, no Foundation).
            resources: [.embedInCode("Page/page.html"), .embedInCode("Page/page.css")]
        ),
        // The live page: its HTTP service, the walk's events as they are journaled, the connection guard.
        .target(
            name: "LivePage",
            dependencies: [
                "WalkModel",
                "SystemIO",
                "WalkJournal",
                "Recording",
                "Thumbnailing",
                "Exports",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            resources: [.embedInCode("Page/live.js")]
        ),
        // The daemon assembled: the settings and the config file, systemd, the services started from a
        // validated configuration.
        .target(
            name: "FieldLogDaemon",
            dependencies: [
                "WalkModel",
                "SystemIO",
                "WalkJournal",
                "Recording",
                "Thumbnailing",
                "Photos",
                "Sharing",
                "CMosquittoShim",  // loaded with Sharing in debug builds (-enable-testing)
                "LivePage",
                "CSandbox",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // What the subcommands do (walks, status, tail, export, star, share, thumbnail), for the command line, which
        // parses their arguments and prints what they return.
        .target(
            name: "FieldLogCommands",
            dependencies: [
                "WalkModel",
                "SystemIO",
                "WalkJournal",
                "Recording",
                "Thumbnailing",
                "Sharing",
                "Exports",
                "FieldLogDaemon",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The command line: parses, calls FieldLogDaemon and FieldLogCommands, waits.
        .executableTarget(
            name: "fieldlog",
            dependencies: [
                "FieldLogDaemon",
                "FieldLogCommands",
                "SystemIO",
                "Thumbnailing",
                "CMosquittoShim",  // loaded with Sharing in debug builds (-enable-testing)
                "CConcurrencyHook",
                "CBuildStamp",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
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
            cSettings: Context.environment["FIELDLOG_VERSION"].map { [.define("FIELDLOG_VERSION", to: "\"\($0)\"")] }
                ?? []
        ),
        // Walks with known truth, as receivers report them: for the tests and the distance benchmark.
        .target(
            name: "WalkSimulation",
            dependencies: ["WalkModel"]
        ),
        .executableTarget(
            name: "walksim",
            dependencies: [
                "WalkSimulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Fakes of Flickr, Wikimedia Commons and gpsd on loopback, over one HTTP server (LoopbackHTTPServer) for
        // the web services. Without Testing, so that the benchmarks' fieldlog-fakes serves the same fake Flickr
        // the tests use.
        .target(
            name: "FieldLogFakes",
            dependencies: [
                "WalkModel",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The fake Flickr as a process, for bench/ and reliability/ (tools/fieldlog_tools.py starts it).
        .executableTarget(
            name: "fieldlog-fakes",
            dependencies: [
                "FieldLogFakes",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // What the tests share: the harness (temporary directories, the fieldlog binary, gpsfake, child processes),
        // a quiet logger, a walk's track points.
        .target(
            name: "FieldLogTestSupport",
            dependencies: [
                "CSandbox",
                "WalkModel",
                "WalkJournal",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A test target per layer, each linking that layer, the layers below it that its tests build with, and the
        // test support: seconds, and nothing but the toolchain (no gpsd, browser, root or fieldlog binary).
        // `swift test --filter UnitTests` runs them all.
        .testTarget(name: "WalkModelUnitTests", dependencies: ["WalkModel", "WalkSimulation"]),
        .testTarget(
            name: "WalkJournalUnitTests",
            dependencies: ["WalkModel", "WalkJournal", "WalkSimulation", "FieldLogTestSupport"]
        ),
        .testTarget(
            name: "RecordingUnitTests",
            dependencies: [
                "WalkModel", "WalkJournal", "Recording", "WalkSimulation", "FieldLogTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "ThumbnailingUnitTests", dependencies: ["Thumbnailing", "FieldLogTestSupport"]),
        .testTarget(
            name: "PhotosUnitTests",
            dependencies: [
                "WalkModel", "Thumbnailing", "Photos", "WalkSimulation", "FieldLogFakes", "FieldLogTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ExportsUnitTests",
            dependencies: ["WalkModel", "WalkJournal", "Exports", "WalkSimulation"]
        ),
        .testTarget(
            name: "SharingUnitTests",
            dependencies: [
                "WalkModel", "Thumbnailing", "Sharing", "FieldLogTestSupport",
                "CMosquittoShim",  // loaded with Sharing in debug builds (-enable-testing)
            ]
        ),
        .testTarget(
            name: "LivePageUnitTests",
            dependencies: ["WalkModel", "WalkJournal", "Recording", "LivePage", "FieldLogTestSupport"]
        ),
        // The daemon assembled: the recorder with the photo service, the status the page shows, the settings.
        .testTarget(
            name: "FieldLogDaemonUnitTests",
            dependencies: [
                "WalkModel", "WalkJournal", "Recording", "Thumbnailing", "Photos", "Sharing", "LivePage",
                "FieldLogDaemon", "FieldLogFakes", "FieldLogTestSupport", "SystemIO",
                "CMosquittoShim",  // loaded with Sharing in debug builds (-enable-testing)
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The binary against real parts: gpsd fed by gpsfake, a headless browser, systemd, failing filesystems,
        // cgroups; each test says what it needs and is skipped, with the reason, where it is missing.
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "WalkModel", "SystemIO", "WalkJournal", "Recording", "Thumbnailing", "Photos", "Sharing", "Exports",
                "LivePage", "FieldLogDaemon", "WalkSimulation", "FieldLogFakes", "FieldLogTestSupport",
                "CMosquittoShim",  // loaded with Sharing in debug builds (-enable-testing)
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
    ]
)

// What the compiler checks in every Swift target: each file imports the modules whose members it uses (not
// whatever another file of the target happened to import), an import is internal unless the file says it is
// part of its `package` interface (`package import`), and existential types are spelled `any`.
for target in package.targets where target.type != .system && !target.name.hasPrefix("C") {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("MemberImportVisibility"),
            .enableUpcomingFeature("InternalImportsByDefault"),
            .enableUpcomingFeature("ExistentialAny"),
        ]
}
