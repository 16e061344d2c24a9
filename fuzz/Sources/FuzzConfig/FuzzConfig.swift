// fieldlog.conf's parser (ConfigFile) on arbitrary text. Besides not crashing: an error names a
// line of the file, and settings printed the way --check-config prints them (ConfigFile.quoted) read back
// as the same settings.
import Foundation

@testable import FieldLogDaemon

private func fail(_ what: String, _ text: String) -> Never {
    FileHandle.standardError.write(Data("invariant broken: \(what)\ntext: \(text.debugDescription)\n".utf8))
    abort()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    // ConfigFile.load refuses text that is not UTF-8 before parsing; the parser only ever sees valid text.
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    let file: ConfigFile
    do {
        file = try ConfigFile(path: "fuzz.conf", text: text)
    } catch {
        // YAML's line breaks: \n, \r\n, a lone \r, NEL, LS and PS (isNewline adds VT and FF: more lenient).
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).count
        if let line = error.line, !(0...lines + 1).contains(line) {
            fail("an error on line \(line) of \(lines): \(error)", text)
        }
        return 0
    }
    // Keys are judged by fieldlog's command line later; only plain keys are printed back.
    let printable = file.entries.filter { !$0.key.isEmpty && ConfigFile.quoted($0.key) == $0.key }
    let printed = printable.map { "\($0.key): \(ConfigFile.quoted($0.value))" }.joined(separator: "\n")
    do {
        let again = try ConfigFile(path: "fuzz.conf", text: printed)
        guard again.entries.map(\.key) == printable.map(\.key), again.entries.map(\.value) == printable.map(\.value)
        else { fail("printed settings read back differently:\n\(printed)", text) }
    } catch {
        fail("printed settings do not read back (\(error)):\n\(printed)", text)
    }
    return 0
}

// SwiftPM links an executable's entry point as `FuzzConfig_main` (so that tests can link the module); with
// -parse-as-library there is none, so this hands the process to libFuzzer's driver.
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

@_cdecl("FuzzConfig_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments, fuzzConfig)
}
