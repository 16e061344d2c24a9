// fieldlog.conf's parser (ConfigFile, on Yams) on arbitrary text. Besides not crashing: an error names a
// line of the file, and settings printed the way --check-config prints them (ConfigFile.quoted) read back
// as the same settings.
import Foundation
import FieldLog

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
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
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
