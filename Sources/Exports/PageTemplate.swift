import WalkModel

/// The walk page's fixed markup, `Page/page.html`, split once at its `{{slot}}` marks. The file is the page's
/// shape; `HTMLExport` writes only what a walk fills in. The file and its stylesheet are embedded in the
/// binary at build time (SwiftPM `embedInCode`), so the export needs nothing beside the executable.
package struct PageTemplate {
    package enum Slot: String, CaseIterable {
        case contentSecurityPolicy = "content-security-policy"
        case liveScript = "live-script"
        case walkID = "walk-id"
        case style
        case bodyAttributes = "body-attributes"
        case walkName = "walk-name"
        case summary, status, track, cards, paging
    }

    package enum Part: Equatable {
        case markup(ArraySlice<UInt8>)
        case slot(Slot)
    }

    package let parts: [Part]

    /// Markup with a mark that is not a `Slot` is a mistake in the file, which every page rendered would
    /// show; the unit tests render it.
    init(_ text: [UInt8]) {
        var parts: [Part] = []
        var rest = text[...]
        while let open = rest.firstRange(of: "{{".utf8) {
            guard let close = rest[open.upperBound...].firstRange(of: "}}".utf8),
                let slot = Slot(rawValue: String(decoding: rest[open.upperBound..<close.lowerBound], as: UTF8.self))
            else { preconditionFailure("Page/page.html: a {{mark}} that is no slot") }
            if open.lowerBound > rest.startIndex { parts.append(.markup(rest[..<open.lowerBound])) }
            parts.append(.slot(slot))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.markup(rest)) }
        self.parts = parts
    }

    func render(to out: inout ByteWriter, filling fill: (Slot, inout ByteWriter) throws -> Void) rethrows {
        for part in parts {
            switch part {
            case let .markup(markup): out.append(bytes: markup)
            case let .slot(slot): try fill(slot, &out)
            }
        }
    }

    package static let page = PageTemplate(PackageResources.page_html)
    /// `Page/page.css`, inline in every page: the export loads nothing.
    package static let style = PackageResources.page_css
}
