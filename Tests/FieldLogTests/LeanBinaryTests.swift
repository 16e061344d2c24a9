import Foundation
import Testing

/// fieldlog links FoundationEssentials only, never full Foundation and its ICU tables: scripts/verify-foundation
/// (which scripts/test runs after the build, and deploy/build-deb on the shipped binary) says so, and fails a
/// binary that does link them.
struct LeanBinaryTests {
    let directory = Harness.temporaryDirectory()
    static let verify = Harness.repository + "/scripts/verify-foundation"
    static let swiftc = ["/opt/swift/usr/bin/swiftc", "/usr/bin/swiftc"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test func fieldlogLinksNoFoundationAndNoICU() async throws {
        let outcome = try await Child(Self.verify, [Harness.fieldlog], in: directory).wait(timeout: 60)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("no full Foundation, no ICU"))
    }

    @Test(.enabled(if: swiftc != nil, "needs swiftc"))
    func aBinaryThatImportsFoundationFailsTheCheck() async throws {
        try "import Foundation\nprint(Date(), NSString(string: \"x\").length)\n"
            .write(toFile: directory + "/main.swift", atomically: true, encoding: .utf8)
        let built = try await Child(Self.swiftc!, [directory + "/main.swift", "-o", directory + "/uses-foundation"], in: directory).wait(timeout: 300)
        try #require(built.status == 0, "\(built.stderr)")
        let outcome = try await Child(Self.verify, [directory + "/uses-foundation"], in: directory).wait(timeout: 60)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("needs libFoundation.so"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains("holds Foundation's types"), "\(outcome.stderr)")
    }
}
