/// Why a JPEG could not be made into a thumbnail, worded for the person who gave us the file.
public struct ThumbnailError: Error, CustomStringConvertible, Sendable, Equatable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case empty, notJPEG, truncated, corrupt, tooLarge, tooManyScans, unsupported, outOfMemory, internalError,
                crashed
        }

        private let value: Value

        /// No bytes at all.
        public static let empty = Code(value: .empty)
        /// Not a JPEG: another image format, a web page, text.
        public static let notJPEG = Code(value: .notJPEG)
        /// The data ends before the image does (an interrupted download or copy).
        public static let truncated = Code(value: .truncated)
        /// Damaged headers or image data; never turned into a partly grey thumbnail.
        public static let corrupt = Code(value: .corrupt)
        /// More pixels than `maxPixels`, or more decoder memory than `maxMemory`: a decompression bomb or
        /// simply too big for this device.
        public static let tooLarge = Code(value: .tooLarge)
        /// A progressive JPEG with more scans than `maxScans`.
        public static let tooManyScans = Code(value: .tooManyScans)
        /// A valid JPEG of a kind this decoder does not handle (12-bit data, an unknown colour space).
        public static let unsupported = Code(value: .unsupported)
        /// The system refused memory below the limits.
        public static let outOfMemory = Code(value: .outOfMemory)
        /// A bug here, not a problem with the file.
        public static let internalError = Code(value: .internalError)
        /// The decoder's process was killed: past its memory or CPU limit, or crashed by the file.
        public static let crashed = Code(value: .crashed)

        /// Every code, in a fixed order: the photo worker's exit status is 10 + the position.
        package static let all: [Code] = [
            .empty, .notJPEG, .truncated, .corrupt, .tooLarge, .tooManyScans, .unsupported, .outOfMemory, .internalError,
            .crashed,
        ]

        public var description: String {
            switch value {
            case .empty: "empty"
            case .notJPEG: "not JPEG"
            case .truncated: "truncated"
            case .corrupt: "corrupt"
            case .tooLarge: "too large"
            case .tooManyScans: "too many scans"
            case .unsupported: "unsupported"
            case .outOfMemory: "out of memory"
            case .internalError: "internal error"
            case .crashed: "decoder killed"
            }
        }
    }

    public let code: Code
    /// What happened, e.g. "the image is 65000x65000 (4225.0 megapixels), more than the 50.0-megapixel limit".
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
