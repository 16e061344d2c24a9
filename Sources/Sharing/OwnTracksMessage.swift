import FoundationEssentials
import WalkModel

/// OwnTracks JSON (`_type: location`) for what the selector chose: the fix's own GPS time as `tst`, `lat`,
/// `lon`, `acc` (eph, m), `alt` (m), `vel` (km/h), `cog` (degrees), `tid`, `t`; `acc`, `alt`, `vel` and `cog`
/// only when not zero, as the apps send them. Milestones and photos are locations with the iOS app's POI
/// fields (`poi`, and for a photo `image`, a base64 JPEG of `SharedPhoto`'s rendition, and `imagename`), plus `fl_*` fields the
/// OwnTracks Recorder stores with the point and other servers ignore.
package enum OwnTracksMessage {
    package struct Options: Sendable {
        package var tid: String
        /// HTTP payloads carry their topic (the Recorder and Traccar use it to name the device).
        package var topic: String?
        package var walk: String

        package init(tid: String, topic: String? = nil, walk: String) {
            self.tid = tid
            self.topic = topic
            self.walk = walk
        }
    }

    package static func encode(_ content: ShareSelector.Content, options: Options, thumbnail: [UInt8]? = nil) -> [UInt8]
    {
        var out = ByteWriter(capacity: thumbnail.map { $0.count * 4 / 3 + 600 } ?? 256)
        out.append("{\"_type\":\"location\"")
        let point: TrackPoint?
        let latitude: Double
        let longitude: Double
        switch content {
        case let .fix(fix):
            point = fix
            latitude = fix.fix.latitude
            longitude = fix.fix.longitude
        case let .milestone(milestone, fix):
            point = fix
            latitude = milestone.latitude
            longitude = milestone.longitude
        case let .photo(milestone, _, _):
            point = nil
            latitude = milestone.latitude
            longitude = milestone.longitude
        }
        out.append(",\"tst\":")
        out.append(Int(content.time.rounded(.down)))
        out.append(",\"lat\":")
        out.appendDecimal(latitude, digits: 7)
        out.append(",\"lon\":")
        out.appendDecimal(longitude, digits: 7)
        if let fix = point?.fix {
            integer("acc", fix.horizontalError, into: &out)
            integer("alt", fix.altitude, into: &out)
            integer("vel", fix.speed.map { $0 * 3.6 }, into: &out)
            integer("cog", fix.track, into: &out)
        }
        out.append(",\"tid\":")
        out.appendJSONString(options.tid)
        // `t`: "t" for every fix (the timer, --share-every, and a segment's first and last alike), "u" for what
        // the walker marks (as the iOS app's manual POI publishes).
        switch content {
        case .fix: out.append(",\"t\":\"t\"")
        case .milestone, .photo: out.append(",\"t\":\"u\"")
        }
        switch content {
        case .fix:
            break
        case let .milestone(milestone, _):
            out.append(",\"poi\":")
            out.appendJSONString("Milestone \(milestone.index) · \(Int(milestone.distance.rounded())) m")
            milestoneFields(milestone, walk: options.walk, into: &out)
        case let .photo(milestone, candidate, _):
            var text = "Milestone \(milestone.index): " + (candidate.title.isEmpty ? "photo" : candidate.title)
            if !candidate.ownerName.isEmpty { text += " by " + candidate.ownerName }
            if !candidate.license.isEmpty { text += " (" + candidate.license + ")" }
            out.append(",\"poi\":")
            out.appendJSONString(text)
            if let thumbnail {
                out.append(",\"image\":\"")
                out.append(Data(thumbnail).base64EncodedString())
                out.append("\",\"imagename\":")
                out.appendJSONString(candidate.id + ".jpg")
            }
            milestoneFields(milestone, walk: options.walk, into: &out)
            out.append(",\"fl_photo\":")
            out.appendJSONString(candidate.id)
            if let page = candidate.pageURL {
                out.append(",\"fl_photo_page\":")
                out.appendJSONString(page)
            }
        }
        if let topic = options.topic {
            out.append(",\"topic\":")
            out.appendJSONString(topic)
        }
        out.append("}")
        return out.bytes
    }

    private static func milestoneFields(_ milestone: Milestone, walk: String, into out: inout ByteWriter) {
        out.append(",\"fl_milestone\":")
        out.append(milestone.index)
        out.append(",\"fl_dist\":")
        out.append(Int(milestone.distance.rounded()))
        out.append(",\"fl_walk\":")
        out.appendJSONString(walk)
    }

    /// A whole number, left out when it is zero or not known (as the OwnTracks apps do).
    private static func integer(_ key: String, _ value: Double?, into out: inout ByteWriter) {
        guard let value, value.isFinite, abs(value) < 1e9 else { return }
        let whole = Int(value.rounded())
        guard whole != 0 else { return }
        out.append(",\"\(key)\":")
        out.append(whole)
    }

    /// The last will: the device went offline without saying goodbye.
    package static func lastWill(tid: String, connectedAt wall: Double) -> String {
        "{\"_type\":\"lwt\",\"tst\":\(Int(wall))}"
    }
}
