// The journal reader on arbitrary bytes: WalkLog.parse on the whole input (what export, tail and the
// recorder's restart read), and per line the two decoders, which must agree: the byte scanner claims to
// return only what JSONDecoder would, and a record must read back as itself once written.
import Foundation

@testable import WalkJournal
@testable import WalkModel

private func fail(_ what: String, _ line: UnsafeBufferPointer<UInt8>) -> Never {
    FileHandle.standardError.write(
        Data("invariant broken: \(what)\nline: \(String(decoding: line, as: UTF8.self))\n".utf8))
    abort()
}

private func checkLine(_ line: UnsafeBufferPointer<UInt8>) {
    let decoded = JournalCodec.decode(line)
    if let scanned = JournalLineScanner.scan(line) {
        guard let slow = try? JSONDecoder().decode(JournalLine.self, from: Data(line)) else {
            fail("the scanner accepted a line JSONDecoder rejects", line)
        }
        guard slow.record == scanned else {
            fail("the scanner and JSONDecoder disagree: \(scanned) vs \(String(describing: slow.record))", line)
        }
    }
    guard let decoded else { return }
    let written = JournalCodec.encode(decoded)
    var copy = written
    let again = copy.withUTF8 { JournalCodec.decode($0) }
    guard let again else { fail("a written record does not read back: \(written)", line) }
    guard JournalCodec.encode(again) == written else {
        fail("a record changes when written twice: \(written) vs \(JournalCodec.encode(again))", line)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJournal(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let log = WalkLog.parse(id: "fuzz", contents: Array(bytes))
    _ = (log.distance, log.lastTime, log.pendingMilestones, log.usedPhotoIDs)
    // Lines as WalkLog.parse splits them, each in its own exact-size buffer so ASan sees any overread.
    for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).prefix(64) {
        Array(line).withUnsafeBufferPointer(checkLine)
    }
    return 0
}

// SwiftPM links an executable's entry point as `FuzzJournal_main` (so that tests can link the module); with
// -parse-as-library there is none, so this hands the process to libFuzzer's driver.
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

@_cdecl("FuzzJournal_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments, fuzzJournal)
}
