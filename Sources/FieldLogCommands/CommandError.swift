/// What stops a command, worded for the person who ran it: the command line prints `fieldlog: ` and it on
/// standard error and exits with status 1.
package struct CommandError: Error, CustomStringConvertible {
    package var description: String

    package init(_ description: String) {
        self.description = description
    }
}

extension Double {
    /// Rounded to a whole number for people; a journal may hold any number, which `Int` cannot always take.
    var wholeText: String {
        abs(self) < 1e15 ? String(Int(rounded())) : String(self)
    }
}

extension String {
    /// Padded with spaces to `width` characters, on the right or (`left`) on the left.
    func padding(_ width: Int, left: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - count))
        return left ? fill + self : self + fill
    }
}
