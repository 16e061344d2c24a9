import ArgumentParser
import FieldLogFakes
import Foundation

/// The tests' fakes as processes, for what runs the real binary outside the tests: the benchmarks, the
/// power-cut trials and deploy/order-symbols (started by tools/fieldlog_tools.py).
@main
struct FakesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fieldlog-fakes",
        abstract: "Serve a fake of a web service fieldlog uses, on 127.0.0.1.",
        subcommands: [Flickr.self])
}

struct Flickr: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a fake Flickr where every search finds one photo, 20 m north-east of its point.",
        discussion: """
            Photos are taken ten minutes apart; every download gets the --jpeg file. Prints two lines, the \
            endpoint (for --flickr-endpoint) and the API key it takes (FLICKR_API_KEY), then serves until \
            SIGTERM or SIGINT.
            """)

    @Option(help: "The JPEG every photo download gets.")
    var jpeg: String

    func run() async throws {
        let flickr = FakeFlickr()
        flickr.placePhotoNearEverySearch(jpeg: try [UInt8](Data(contentsOf: URL(fileURLWithPath: jpeg))))
        // Stopping is how a run ends, not a failure: exit status 0 rather than death by the signal.
        for number in [SIGTERM, SIGINT] { signal(number) { _ in _exit(0) } }
        try await flickr.start()
        // Unbuffered, so that the reader has the endpoint while this process goes on serving.
        FileHandle.standardOutput.write(Data("\(flickr.endpoint)\n\(FakeFlickr.apiKey)\n".utf8))
        // The requests are answered on NIO's event loop threads: this task only has to last.
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
