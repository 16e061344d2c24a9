import FieldLogCommands
import Glibc
import SystemIO

/// Writes `text` to standard output at once. Output that cannot be written (a full disk, a closed pipe) is
/// an error: one line on stderr and exit status 1, never a silent success.
func writeStandardOutput(_ text: String) throws {
    if let failure = FileIO.writeAll(text.utf8, to: STDOUT_FILENO) {
        throw CleanExit.failure("fieldlog: cannot write to standard output: \(failure.reason)")
    }
}

/// What a library command returns, or its error as one line on stderr and exit status 1.
func command<Result>(_ body: () throws(CommandError) -> Result) throws -> Result {
    do {
        return try body()
    } catch {
        throw CleanExit.failure("fieldlog: \(error)")
    }
}
