import Glibc

/// A problem with the state directory or a journal in it, worded for the person who has to fix it.
package struct JournalError: Error, CustomStringConvertible, Sendable {
    package struct Code: Equatable, Sendable {
        fileprivate let text: String
        package static let cannotOpen = Code(text: "cannot open")
        package static let cannotRead = Code(text: "cannot read")
        package static let cannotWrite = Code(text: "cannot write")
        package static let noSuchWalk = Code(text: "no such walk")
        package static let noWalks = Code(text: "no walks")
        package static let noSuchMilestone = Code(text: "no such milestone")
    }

    package let code: Code
    package let path: String
    package let reason: String?
    /// The system's error number, when the error came from a system call (ENOSPC, EIO, EROFS, ...).
    package let errno: Int32?

    package init(_ code: Code, path: String, reason: String? = nil, errno number: Int32? = nil) {
        self.code = code
        self.path = path
        self.reason = reason
        errno = number
    }

    package init(_ code: Code, path: String, errno number: Int32) {
        self.init(code, path: path, reason: String(cString: strerror(number)), errno: number)
    }

    package var description: String {
        switch code {
        case .noSuchWalk:
            return "no walk \(reason ?? "") in \(path) (see `fieldlog walks`)"
        case .noWalks:
            return "no walks recorded in \(path) yet"
        case .noSuchMilestone:
            return "no milestone \(reason ?? "") in \(path)"
        default:
            return "\(code.text) \(path)" + (reason.map { ": \($0)" } ?? "")
        }
    }
}
