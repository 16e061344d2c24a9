/// Plain text from the HTML a source sends (Commons' extmetadata): tags dropped, with what is inside
/// `script` and `style`; entities decoded; whitespace collapsed; control and format characters dropped; at
/// most `limit` characters. What comes out is text to escape, never markup to render.
package enum PlainText {
    package static let limit = 300

    package static func fromHTML(_ html: String, limit: Int = limit) -> String {
        var text = String.UnicodeScalarView()
        var scalars = html.unicodeScalars[...]
        // Enough for any title or author: a megabyte of HTML is not walked through.
        scalars = scalars.prefix(64 << 10)
        var skippingUntil: String?
        while let scalar = scalars.first {
            if scalar == "<" {
                guard let close = scalars.firstIndex(of: ">") else { break }
                let tag = String(scalars[scalars.index(after: scalars.startIndex)..<close]).lowercased()
                scalars = scalars[scalars.index(after: close)...]
                let name = String(tag.drop { $0 == "/" }.prefix { $0.isLetter || $0.isNumber })
                if let ending = skippingUntil {
                    if tag.hasPrefix("/") && name == ending { skippingUntil = nil }
                } else if !tag.hasPrefix("/") && (name == "script" || name == "style") && !tag.hasSuffix("/") {
                    skippingUntil = name
                } else if ["br", "p", "div", "li", "td", "tr"].contains(name) {
                    text.append(" ")
                }
                continue
            }
            scalars = scalars.dropFirst()
            if skippingUntil != nil { continue }
            if scalar == "&", let (decoded, rest) = entity(scalars) {
                text.append(decoded)
                scalars = rest
            } else {
                text.append(scalar)
            }
        }
        return collapse(text, limit: limit)
    }

    /// The character an entity after `&` stands for, and what follows its `;`.
    private static func entity(_ scalars: Substring.UnicodeScalarView) -> (Unicode.Scalar, Substring.UnicodeScalarView)?
    {
        guard let semicolon = scalars.prefix(12).firstIndex(of: ";") else { return nil }
        let name = String(scalars[..<semicolon])
        let rest = scalars[scalars.index(after: semicolon)...]
        let named: [String: Unicode.Scalar] = [
            "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": " ",
        ]
        if let scalar = named[name] { return (scalar, rest) }
        guard name.hasPrefix("#") else { return nil }
        let digits = name.dropFirst()
        let value = digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
        return value.flatMap(Unicode.Scalar.init).map { ($0, rest) }
    }

    /// Runs of whitespace as one space, no control or format characters, trimmed and cut to `limit`.
    private static func collapse(_ scalars: String.UnicodeScalarView, limit: Int) -> String {
        var out = String.UnicodeScalarView()
        var space = false
        for scalar in scalars {
            if scalar.properties.isWhitespace {
                space = !out.isEmpty
                continue
            }
            switch scalar.properties.generalCategory {
            case .control, .format, .surrogate, .privateUse, .unassigned: continue
            default: break
            }
            if space { out.append(" ") }
            space = false
            out.append(scalar)
        }
        return String(String(out).prefix(limit))
    }
}
