// swift-tools-version:6.0
// libFuzzer targets for fieldlog's Swift parsers, kept out of the root package. Build with fuzz/run (it passes
// -sanitize=fuzzer,address and -parse-as-library: libFuzzer supplies main). Debug configuration on purpose:
// it compiles fieldlog's modules with -enable-testing, so the targets reach internal decoders with @testable import
// instead of widening fieldlog's API for them; fuzz/run adds -O for speed.
import PackageDescription

func fieldlog(_ module: String) -> Target.Dependency { .product(name: module, package: "fieldlog") }

let package = Package(
    name: "fieldlog-fuzz",
    dependencies: [.package(name: "fieldlog", path: "..")],
    targets: [
        .executableTarget(name: "FuzzJournal", dependencies: [fieldlog("WalkModel"), fieldlog("WalkJournal")]),
        .executableTarget(name: "FuzzFlickr", dependencies: [fieldlog("WalkModel"), fieldlog("Photos")]),
        .executableTarget(name: "FuzzConfig", dependencies: [fieldlog("FieldLogDaemon")]),
    ]
)
