import Glibc

/// A problem with the state directory or a journal in it, worded for the person who has to fix it.
public struct JournalError: Error, CustomStringConvertible, Sendable {
    public struct Code: Equatable, Sendable {
        fileprivate let text: String
        public static let cannotOpen = Code(text: "cannot open")
        public static let cannotRead = Code(text: "cannot read")
        public static let cannotWrite = Code(text: "cannot write")
        public static let noSuchWalk = Code(text: "no such walk")
        public static let noWalks = Code(text: "no walks")
        public static let noSuchMilestone = Code(text: "no such milestone")
    }

    public let code: Code
    public let path: String
    public let reason: String?
    /// The system's error number, when the error came from a system call (ENOSPC, EIO, EROFS, ...).
    public let errno: Int32?

    public init(_ code: Code, path: String, reason: String? = nil, errno number: Int32? = nil) {
        self.code = code
        self.path = path
        self.reason = reason
        errno = number
    }

    package init(_ code: Code, path: String, errno number: Int32) {
        self.init(code, path: path, reason: String(cString: strerror(number)), errno: number)
    }

    public var description: String {
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
