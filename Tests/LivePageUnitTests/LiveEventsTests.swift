import FieldLogTestSupport
import Foundation
import LivePage
import Recording
import Synchronization
import Testing
import WalkJournal
import WalkModel

// The live page's event stream against journal lines appended by hand, with the page's own reads (the page
// and its track, the exports) interleaved between the stream's looks, as a browser interleaves them.

private let start = Timestamp.parse("2026-11-18T09:46:40Z")!

private struct LiveJournal {
    let directory = Harness.temporaryDirectory()
    var store: JournalStore { JournalStore(directory: directory) }

    func append(_ records: [JournalRecord], to id: String) {
        let path = store.path(for: id)
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        let handle = FileHandle(forWritingAtPath: path)!
        handle.seekToEndOfFile()
        handle.write(Data(records.map { JournalCodec.encode($0) + "\n" }.joined().utf8))
        handle.closeFile()
    }

    static func milestone(_ index: Int) -> JournalRecord {
        .milestone(
            Milestone(
                index: index, time: start + Double(index) * 70, latitude: 55.95, longitude: -3.2,
                distance: Double(index) * 100))
    }

    static func photo(_ index: Int) -> JournalRecord {
        .photo(MilestonePhoto(milestone: index, source: "local", outcome: .noneNearby(radius: 1000)))
    }
}

/// Every message the stream holds once the server closes it: the events sent so far.
private func drain(_ stream: AsyncStream<String>, closing events: LiveEvents) async -> [String] {
    events.close()
    var messages: [String] = []
    for await message in stream { messages.append(message) }
    return messages
}

private func liveEvents(following walk: LiveWalk) -> LiveEvents {
    // The poller's own interval is an hour: the test calls `tick` itself.
    LiveEvents(
        walk: walk,
        status: {
            LiveStatus(recording: RecordingStatus(), gpsd: .connected, lastFixWall: nil, photos: nil)
        },
        isCached: { _ in false }, maxSubscribers: 4, interval: .seconds(3600))
}

private func cardEvents(_ messages: [String]) -> [String] {
    messages.compactMap { message in
        guard message.hasPrefix("event: milestone") || message.hasPrefix("event: photo") else { return nil }
        let kind = message.dropFirst("event: ".count).prefix { $0 != "\n" }
        let index = message.range(of: "\"milestone\":").map { message[$0.upperBound...].prefix { $0.isNumber } } ?? ""
        return "\(kind) \(index)"
    }
}

/// A page's request for `/` (its track refresh) reads the journal between two looks of the event stream: what
/// it read must still reach every page. It once did not, and the live page lost a photo under load.
@Test func whatAPageLoadReadsStillReachesTheEventStream() async throws {
    let journal = LiveJournal()
    let id = "20261118T094640Z"
    journal.append([.walkStart(id: id, time: start, every: 100), LiveJournal.milestone(0)], to: id)
    let walk = LiveWalk(store: journal.store, currentWalk: { id })
    let events = liveEvents(following: walk)
    let stream = try #require(events.subscribe(since: "\(id)/1"))

    journal.append([LiveJournal.milestone(1)], to: id)
    events.tick()
    journal.append([LiveJournal.photo(1), LiveJournal.milestone(2)], to: id)
    walk.look { _ in }  // the page's track refresh, then an export
    journal.append([LiveJournal.photo(2)], to: id)
    walk.look { _ in }
    events.tick()
    events.tick()

    let cards = cardEvents(await drain(stream, closing: events))
    // Each milestone's last change, once: milestone 1's card, then milestone 1's photo and milestone 2's.
    #expect(cards == ["milestone 1", "photo 1", "photo 2"], "\(cards)")
}

/// Another walk seen first by a page load still tells the open pages to reload.
@Test func aNewWalkSeenByAPageLoadStillReloadsOpenPages() async throws {
    let journal = LiveJournal()
    let first = "20261118T094640Z"
    let second = "20261118T120000Z"
    journal.append([.walkStart(id: first, time: start, every: 100), LiveJournal.milestone(0)], to: first)
    let current = Mutex(first)
    let walk = LiveWalk(store: journal.store, currentWalk: { current.withLock { $0 } })
    let events = liveEvents(following: walk)
    let stream = try #require(events.subscribe(since: "\(first)/1"))

    journal.append([.walkStart(id: second, time: start + 9000, every: 100), LiveJournal.milestone(0)], to: second)
    current.withLock { $0 = second }
    walk.look { _ in }
    events.tick()

    let messages = await drain(stream, closing: events)
    #expect(messages.contains { $0.hasPrefix("event: walk\ndata: {\"walk\":\"\(second)\"}") }, "\(messages)")
    #expect(cardEvents(messages).isEmpty)
}

/// A page reconnecting after missing a long walk (460 milestones, each with its photo outcome) gets every
/// card it missed or a `walk` event that reloads it: the stream's buffer once took the first 254 cards and
/// dropped the rest without a word.
@Test func aReconnectingPageThatMissedALongWalkGetsEveryCardOrReloads() async throws {
    let journal = LiveJournal()
    let id = "20261118T094640Z"
    journal.append([.walkStart(id: id, time: start, every: 100)] + (0..<460).map(LiveJournal.milestone), to: id)
    let walk = LiveWalk(store: journal.store, currentWalk: { id })
    let events = liveEvents(following: walk)
    let stream = try #require(events.subscribe(since: "\(id)/0"))
    let messages = await drain(stream, closing: events)
    let cards = cardEvents(messages)
    let reloads = messages.contains { $0.hasPrefix("event: walk\ndata: {\"walk\":\"\(id)\"}") }
    #expect(reloads || cards == (0..<460).map { "milestone \($0)" }, "\(cards.count) cards, reload: \(reloads)")
    // Missing a few still sends just those, no reload.
    let again = liveEvents(following: walk)
    let recent = await drain(try #require(again.subscribe(since: "\(id)/455")), closing: again)
    #expect(
        cardEvents(recent) == (455..<460).map { "milestone \($0)" } && !recent.contains { $0.hasPrefix("event: walk") })
}
