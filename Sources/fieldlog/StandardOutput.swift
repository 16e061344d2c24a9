import Glibc
import SystemIO

/// Writes `text` to standard output at once. Output that cannot be written (a full disk, a closed pipe) is
/// an error: one line on stderr and exit status 1, never a silent success.
func writeStandardOutput(_ text: String) throws {
    if let failure = FileIO.writeAll(text.utf8, to: STDOUT_FILENO) {
        throw CleanExit.failure("fieldlog: cannot write to standard output: \(failure.reason)")
    }
}

extension Double {
    /// Rounded to a whole number for people; a journal may hold any number, which `Int` cannot always take.
    var wholeText: String {
        abs(self) < 1e15 ? String(Int(rounded())) : String(self)
    }
}
