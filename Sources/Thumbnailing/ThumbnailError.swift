/// Why a JPEG could not be made into a thumbnail, worded for the person who gave us the file.
package struct ThumbnailError: Error, CustomStringConvertible, Sendable, Equatable {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case empty, notJPEG, truncated, corrupt, tooLarge, tooManyScans, unsupported, outOfMemory, internalError,
                crashed
        }

        private let value: Value

        /// No bytes at all.
        package static let empty = Code(value: .empty)
        /// Not a JPEG: another image format, a web page, text.
        package static let notJPEG = Code(value: .notJPEG)
        /// The data ends before the image does (an interrupted download or copy).
        package static let truncated = Code(value: .truncated)
        /// Damaged headers or image data; never turned into a partly grey thumbnail.
        package static let corrupt = Code(value: .corrupt)
        /// More pixels than `maxPixels`, or more decoder memory than `maxMemory`: a decompression bomb or
        /// simply too big for this device.
        package static let tooLarge = Code(value: .tooLarge)
        /// A progressive JPEG with more scans than `maxScans`.
        package static let tooManyScans = Code(value: .tooManyScans)
        /// A valid JPEG of a kind this decoder does not handle (12-bit data, an unknown colour space).
        package static let unsupported = Code(value: .unsupported)
        /// The system refused memory below the limits.
        package static let outOfMemory = Code(value: .outOfMemory)
        /// A bug here, not a problem with the file.
        package static let internalError = Code(value: .internalError)
        /// The decoder's process was killed: past its memory or CPU limit, or crashed by the file.
        package static let crashed = Code(value: .crashed)

        /// Every code, in a fixed order: the photo worker's exit status is 10 + the position.
        package static let all: [Code] = [
            .empty, .notJPEG, .truncated, .corrupt, .tooLarge, .tooManyScans, .unsupported, .outOfMemory,
            .internalError,
            .crashed,
        ]

        package var description: String {
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

    package let code: Code
    /// What happened, e.g. "the image is 65000x65000 (4225.0 megapixels), more than the 50.0-megapixel limit".
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}
