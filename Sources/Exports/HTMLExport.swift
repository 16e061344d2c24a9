import FoundationEssentials
package import WalkJournal
package import WalkModel

/// The walk as one HTML page that needs nothing else: thumbnails inline as data URIs, the track as inline
/// SVG, styles inline and no script, so it works offline after `scp` and a Content-Security-Policy in the
/// page forbids loading anything. List and grid views and the favourites filter are CSS over form controls.
///
/// Markup others may script against: every milestone is one `<article data-milestone="INDEX">`, newest
/// first, its photo an `<img>` inside it; the track is the page's one `<svg>`.
package enum HTMLExport {
    /// Where a card's thumbnail comes from: inline in the page (the export), or from the live page's
    /// server (`/thumbnails/KEY`).
    package enum Images {
        case inline((String) -> [UInt8]?)
        case linked
    }

    /// What makes the live page differ from the export: its script, its status line, and one page of cards.
    package struct Live {
        /// Only milestones before this index (the next page down); nil for the newest.
        package var before: Int?
        package var pageSize = 50
        package var status: String
        /// The walk's change number the page shows, where its event stream starts.
        package var seq: Int

        package init(before: Int? = nil, status: String, seq: Int) {
            self.before = before
            self.status = status
            self.seq = seq
        }
    }

    package static func write(
        _ log: WalkLog, isCached: (String) -> Bool, thumbnail: @escaping (String) -> [UInt8]?,
        to sink: ([UInt8]) throws -> Void
    ) throws {
        try write(log, isCached: isCached, images: .inline(thumbnail), live: nil, to: sink)
    }

    package static func render(_ log: WalkLog, isCached: (String) -> Bool, images: Images, live: Live?) -> [UInt8] {
        var page: [UInt8] = []
        // Nothing throws: the page is drawn from the log's outline, not its journal.
        try? write(log, isCached: isCached, images: images, live: live) { page += $0 }
        return page
    }

    /// The page a chunk at a time: an export's cards carry their thumbnails, some 20 KB each.
    package static func write(
        _ log: WalkLog, isCached: (String) -> Bool, images: Images, live: Live?, to sink: ([UInt8]) throws -> Void
    ) throws {
        var out = ByteWriter(capacity: exportChunk + 64 * 1024)
        try PageTemplate.page.render(to: &out) { slot, out in
            switch slot {
            case .contentSecurityPolicy:
                out.append(live == nil ? contentSecurityPolicy : liveContentSecurityPolicy)
            case .liveScript:
                if live != nil { out.append("<script src=\"/live.js\" defer></script>\n") }
            case .walkID:
                out.appendXMLText(log.id)
            case .style:
                out.append(bytes: PageTemplate.style)
            case .bodyAttributes:
                guard let live else { break }
                out.append(" data-walk=\"")
                out.appendXMLText(log.id)
                out.append("\" data-seq=\"")
                out.append(live.seq)
                out.append("\"")
            case .walkName:
                out.appendXMLText(log.id.isEmpty ? "not started yet" : log.id)
            case .summary:
                appendSummary(log, to: &out)
            case .status:
                guard let live else { break }
                out.append("<p id=\"status\" class=\"status\" role=\"status\">")
                out.appendXMLText(live.status)
                out.append("</p>\n")
            case .track:
                TrackSVG.append(log, to: &out)
            case .cards:
                for milestone in shown(log, live).reversed() {
                    appendCard(milestone, log: log, isCached: isCached, images: images, to: &out)
                    try out.drain(over: exportChunk, into: sink)
                }
            case .paging:
                if live != nil, let oldest = shown(log, live).first, oldest.index > log.milestones.first!.index {
                    out.append("<nav class=\"paging\"><a id=\"older\" href=\"/?before=")
                    out.append(oldest.index)
                    out.append("\">Older milestones</a></nav>\n")
                }
            }
        }
        try out.drain(over: 0, into: sink)
    }

    /// The milestones on the page: all of them in the export, one page of them on the live page.
    private static func shown(_ log: WalkLog, _ live: Live?) -> ArraySlice<Milestone> {
        var shown = log.milestones[...]
        if let live {
            if let before = live.before { shown = shown.prefix { $0.index < before } }
            shown = shown.suffix(live.pageSize)
        }
        return shown
    }

    /// The export loads nothing at all; the live page loads its script, thumbnails and events from its server.
    package static let contentSecurityPolicy =
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
    package static let liveContentSecurityPolicy =
        "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; "
        + "base-uri 'none'; form-action 'none'"

    /// One milestone's card as the page shows it: what the live page sends when it changes.
    package static func card(_ milestone: Milestone, log: WalkLog, isCached: (String) -> Bool) -> [UInt8] {
        var out = ByteWriter(capacity: 1024)
        appendCard(milestone, log: log, isCached: isCached, images: .linked, to: &out)
        return out.bytes
    }

    /// The summary list alone, as the live page refreshes it.
    package static func summary(_ log: WalkLog) -> String {
        var out = ByteWriter(capacity: 512)
        appendSummary(log, to: &out)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    private static func appendSummary(_ log: WalkLog, to out: inout ByteWriter) {
        let first = log.firstPoint?.fix.time ?? log.started
        let last = log.lastPoint?.fix.time ?? log.ended
        let photos = log.milestones.filter { log.photos[$0.index]?.photo != nil }.count
        out.append("<ul class=\"summary\">\n<li>Distance <b>")
        appendDistance(log.distance, to: &out)
        out.append("</b></li>\n<li>Started <b>")
        if let first { appendTimeElement(first, dateToo: true, to: &out) } else { out.append("unknown") }
        out.append("</b></li>\n<li>Duration <b>")
        if let first, let last {
            let minutes = Int(((last - first) / 60).rounded(.down))
            out.append(minutes / 60)
            out.append(" h ")
            out.append(minutes % 60)
            out.append(" min")
        } else {
            out.append("unknown")
        }
        out.append(log.isOpen ? " (still open)" : "")
        out.append("</b></li>\n<li>Milestones <b>")
        out.append(log.milestones.count)
        out.append("</b></li>\n<li>Photos <b>")
        out.append(photos)
        out.append("</b></li>\n<li>Favourites <b>")
        out.append(log.starred.count)
        out.append("</b></li>\n</ul>\n")
    }

    private static func appendCard(
        _ milestone: Milestone, log: WalkLog, isCached: (String) -> Bool, images: Images, to out: inout ByteWriter
    ) {
        let starred = log.starred.contains(milestone.index)
        out.append(
            starred ? "<article class=\"card starred\" data-milestone=\"" : "<article class=\"card\" data-milestone=\"")
        out.append(milestone.index)
        out.append("\" id=\"m")
        out.append(milestone.index)
        out.append("\">\n<h2>")
        out.append(starred ? "<span class=\"star\" title=\"favourite\">★</span> Milestone " : "Milestone ")
        out.append(milestone.index)
        out.append("</h2>\n<p class=\"when\">")
        appendTimeElement(milestone.time, dateToo: false, to: &out)
        out.append(" · ")
        appendDistance(milestone.distance, to: &out)
        out.append(" walked</p>\n")
        guard let record = log.photos[milestone.index] else {
            out.append("<p class=\"missing\">No photo yet: still being looked for.</p>\n</article>\n")
            return
        }
        switch record.outcome {
        case let .noneNearby(radius):
            out.append("<p class=\"missing\">No photo: none taken within ")
            appendDistance(radius, to: &out)
            out.append(".</p>\n")
        case let .found(photo, distance, cacheKey):
            out.append("<figure>\n")
            // Cache keys are [A-Za-z0-9_-], and base64 has nothing to escape either.
            let source: String? =
                switch images {
                case let .inline(thumbnail):
                    isCached(cacheKey)
                        ? thumbnail(cacheKey).map { "data:image/jpeg;base64," + Data($0).base64EncodedString() } : nil
                case .linked:
                    isCached(cacheKey) ? "/thumbnails/" + cacheKey : nil
                }
            if let source {
                out.append("<img alt=\"")
                out.appendXMLText(photo.title.isEmpty ? "Photo \(photo.id)" : photo.title)
                out.append("\" src=\"")
                out.append(source)
                out.append("\">\n")
            } else {
                out.append("<p class=\"missing\">Thumbnail no longer in the cache.</p>\n")
            }
            out.append("<figcaption><cite>")
            out.appendXMLText(photo.title.isEmpty ? "Untitled" : photo.title)
            out.append("</cite>")
            if !photo.ownerName.isEmpty {
                out.append(" by ")
                out.appendXMLText(photo.ownerName)
            }
            if !photo.license.isEmpty {
                out.append(" · ")
                if let licenseURL = photo.licenseURL, licenseURL.hasPrefix("https://") {
                    out.append("<a href=\"")
                    out.appendXMLText(licenseURL)
                    out.append("\" rel=\"license noopener noreferrer\">")
                    out.appendXMLText(photo.license)
                    out.append("</a>")
                } else {
                    out.appendXMLText(photo.license)
                }
            }
            if let page = photo.pageURL, page.hasPrefix("https://") {
                out.append(" · <a href=\"")
                out.appendXMLText(page)
                out.append("\" rel=\"noopener noreferrer\">photo page</a>")
            }
            out.append(" · taken ")
            appendDistance(distance, to: &out)
            out.append(" from here</figcaption>\n</figure>\n")
        }
        out.append("</article>\n")
    }

    /// Metres below 10 km, else kilometres with one decimal.
    package static func appendDistance(_ metres: Double, to out: inout ByteWriter) {
        if metres < 10_000 {
            out.append(Int(metres.rounded()))
            out.append(" m")
        } else {
            out.appendDecimal((metres / 100).rounded() / 10, digits: 1)
            out.append(" km")
        }
    }

    /// `<time datetime="RFC 3339">HH:MM:SS UTC</time>`, with the date in front when asked.
    private static func appendTimeElement(_ time: Double, dateToo: Bool, to out: inout ByteWriter) {
        var stamp = ByteWriter(capacity: 32)
        stamp.appendTime(time)
        let text = String(decoding: stamp.bytes, as: UTF8.self)
        out.append("<time datetime=\"")
        out.append(text)
        out.append("\">")
        // "2024-05-18T08:00:00.5Z" -> "2024-05-18 08:00:00 UTC"
        let date = text.prefix(10)
        let clock = text.dropFirst(11).prefix(8)
        if dateToo {
            out.append(String(date))
            out.append(" ")
        }
        out.append(String(clock))
        out.append(" UTC</time>")
    }
}
