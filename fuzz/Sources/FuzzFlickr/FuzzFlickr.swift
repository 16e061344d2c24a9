// FlickrSource's decoder of flickr.photos.search answers on arbitrary bytes. What the rest of fieldlog
// relies on: every candidate has a valid id and owner, a position in range, a Flickr page URL and an https
// image URL; no error message holds the API key (it is in the fuzz dictionary, so answers echo it).
import Foundation

@testable import Photos
@testable import WalkModel

/// A placeholder, not a key: the target checks that whatever key fieldlog holds never shows in an error.
private let apiKey = "FUZZ-PLACEHOLDER-NOT-A-KEY"
private let source = try! FlickrSource(apiKey: apiKey, budget: RequestBudget())

private func fail(_ what: String, _ body: UnsafeBufferPointer<UInt8>) -> Never {
    FileHandle.standardError.write(
        Data("invariant broken: \(what)\nbody: \(String(decoding: body, as: UTF8.self))\n".utf8))
    abort()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFlickr(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let body = UnsafeBufferPointer(start: data, count: size)
    do throws(PhotoSourceError) {
        for candidate in try source.decodeSearch(Array(body)) {
            guard PhotoCandidate.isValidID(candidate.id), PhotoCandidate.isValidOwner(candidate.ownerID) else {
                fail("a candidate with an unsafe id or owner: \(candidate)", body)
            }
            guard abs(candidate.latitude) <= 90, abs(candidate.longitude) <= 180 else {
                fail("a candidate outside the globe: \(candidate)", body)
            }
            guard candidate.pageURL?.hasPrefix("https://www.flickr.com/photos/") == true,
                let url = URL(string: candidate.imageURL), url.scheme == "https", url.host != nil
            else { fail("a candidate with an unusable URL: \(candidate)", body) }
        }
    } catch {
        guard !error.message.contains(apiKey) else { fail("the API key in an error: \(error.message)", body) }
    }
    return 0
}

// SwiftPM links an executable's entry point as `FuzzFlickr_main` (so that tests can link the module); with
// -parse-as-library there is none, so this hands the process to libFuzzer's driver.
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

@_cdecl("FuzzFlickr_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments, fuzzFlickr)
}
