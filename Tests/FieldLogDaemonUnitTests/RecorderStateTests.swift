import FieldLogDaemon
import FieldLogTestSupport
import Foundation
import LivePage
import Recording
import Testing

/// What the live page's process, beside the recorder, makes of status.json.
@Suite struct RecorderStateTests {
    let directory = Harness.temporaryDirectory()

    func writeStatus(pid: Int32, gpsd: String) throws {
        let json = """
            {"pid":\(pid),"gpsd":"\(gpsd)","gpsd_address":"127.0.0.1:2947","walk":"20180820T094739Z","distance_m":423,\
            "milestones":5,"last_fix_wall":1000,"updated_wall":1000,"photos":{"state":"searching","milestone":4}}
            """
        try json.write(toFile: directory + "/status.json", atomically: true, encoding: .utf8)
    }

    @Test func aRunningRecorderIsShownAsItSays() throws {
        try writeStatus(pid: getpid(), gpsd: "connected")
        let status = RecorderState(directory: directory).liveStatus()
        #expect(status.gpsd == .connected && status.recording.distance == 423 && status.recording.milestones == 5)
        #expect(status.line(now: 1002).contains("photos: searching near milestone 4"))
        #expect(RecorderState(directory: directory).current?.recording.walkID == "20180820T094739Z")
    }

    /// A recorder that has ended (its pid gone): the walk as it left it, gpsd stopped, no photo source claimed.
    @Test func anEndedRecorderLeavesItsWalkAsItWas() throws {
        try writeStatus(pid: Int32.max, gpsd: "connected")
        let state = RecorderState(directory: directory)
        let status = state.liveStatus()
        #expect(state.current == nil)
        #expect(status.gpsd == .stopped && status.recording.distance == 423 && status.recording.milestones == 5)
        let line = status.line(now: 1002)
        #expect(line.hasPrefix("423 m · 5 milestones · last fix 2 s ago · gpsd stopped"), "\(line)")
        #expect(!line.contains("photos"), "\(line)")
    }
}
