import Glibc
package import WalkJournal
package import WalkModel

/// The track as one inline `<svg class="track">`: a line per segment, dashed gaps between them, numbered
/// milestone markers, start and end. Positions are projected flat around the walk's middle latitude and
/// scaled to 1000 units across, and each line keeps only what a screen can show: points less than a unit
/// apart are merged and straight runs are simplified (Douglas-Peucker) to within half a unit.
package enum TrackSVG {
    package static let width = 1000.0
    package static let markerRadius = 15.0

    package static func append(_ log: WalkLog, to out: inout ByteWriter) {
        // The outline: every point of a walk of a few hours, points metres apart beyond.
        let points = log.outline.points
        guard let projection = Projection(points.map(\.fix)) else {
            out.append(
                "<svg class=\"track\" viewBox=\"0 0 1000 200\" role=\"img\" aria-label=\"No track yet\"></svg>\n")
            return
        }
        out.append("<svg class=\"track\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"-30 -30 1060 ")
        out.appendDecimal(projection.height + 60, digits: 1)
        out.append("\" role=\"img\" aria-label=\"The walk's track with its milestones\">\n")
        var segmentStart = 0
        var previousEnd: (Double, Double)?
        while segmentStart < points.count {
            let segment = points[segmentStart].segment
            var end = segmentStart
            while end < points.count && points[end].segment == segment { end += 1 }
            let line = simplify(points[segmentStart..<end].map { projection.point($0.fix) })
            if let previousEnd, let first = line.first {
                out.append("<path class=\"gap\" vector-effect=\"non-scaling-stroke\" d=\"M")
                appendPoint(previousEnd, to: &out)
                out.append("L")
                appendPoint(first, to: &out)
                out.append("\"/>\n")
            }
            out.append("<path class=\"seg\" vector-effect=\"non-scaling-stroke\" d=\"M")
            for (number, point) in line.enumerated() {
                if number > 0 { out.append("L") }
                appendPoint(point, to: &out)
            }
            if line.count == 1 { out.append("h0.1") }
            out.append("\"/>\n")
            previousEnd = line.last
            segmentStart = end
        }
        let first = projection.point(points[0].fix)
        let last = projection.point(points[points.count - 1].fix)
        appendMarker(first, label: "S", group: "start", title: "Start", radius: 17, to: &out)
        // Markers that would cover one another are left out (a day's walk has a thousand milestones);
        // favourites are always drawn, then the others newest first.
        var drawn: [(Double, Double)] = []
        let favouritesFirst = log.milestones.reversed().sorted {
            log.starred.contains($0.index) && !log.starred.contains($1.index)
        }
        for milestone in favouritesFirst {
            let spot = projection.point(latitude: milestone.latitude, longitude: milestone.longitude)
            let starred = log.starred.contains(milestone.index)
            guard starred || drawn.allSatisfy({ hypot($0.0 - spot.0, $0.1 - spot.1) >= 4 * markerRadius }) else {
                continue
            }
            drawn.append(spot)
            appendMarker(
                spot, label: String(milestone.index), group: starred ? "ms starred" : "ms",
                title: "Milestone \(milestone.index)", radius: Int(markerRadius), to: &out)
        }
        appendMarker(last, label: "E", group: "end", title: log.isOpen ? "Last fix" : "End", radius: 17, to: &out)
        out.append("</svg>\n")
    }

    /// A labelled circle; `group` is the class the style sheet colours it by.
    private static func appendMarker(
        _ spot: (Double, Double), label: String, group: String, title: String, radius: Int,
        to out: inout ByteWriter
    ) {
        out.append("<g class=\"\(group)\"><title>\(title)</title><circle cx=\"")
        out.appendDecimal(spot.0, digits: 1)
        out.append("\" cy=\"")
        out.appendDecimal(spot.1, digits: 1)
        out.append("\" r=\"")
        out.append(radius)
        out.append("\"/><text x=\"")
        out.appendDecimal(spot.0, digits: 1)
        out.append("\" y=\"")
        out.appendDecimal(spot.1, digits: 1)
        out.append("\">\(label)</text></g>\n")
    }

    private static func appendPoint(_ point: (Double, Double), to out: inout ByteWriter) {
        out.appendDecimal(point.0, digits: 1)
        out.append(",")
        out.appendDecimal(point.1, digits: 1)
    }

    /// Merges points within a unit of the last one kept, then Douglas-Peucker with a stack (a day's
    /// track is 86,400 points: no recursion that deep).
    package static func simplify(_ points: [(Double, Double)], tolerance: Double = 0.5) -> [(Double, Double)] {
        guard var last = points.first else { return [] }
        var merged = [last]
        for point in points.dropFirst() where hypot(point.0 - last.0, point.1 - last.1) >= 2 * tolerance {
            merged.append(point)
            last = point
        }
        if let end = points.last, merged.count > 1 || hypot(end.0 - merged[0].0, end.1 - merged[0].1) > 0 {
            if merged.last! != end { merged.append(end) }
        }
        guard merged.count > 2 else { return merged }
        var keep = [Bool](repeating: false, count: merged.count)
        keep[0] = true
        keep[merged.count - 1] = true
        var stack = [(0, merged.count - 1)]
        while let (start, end) = stack.popLast() {
            guard end > start + 1 else { continue }
            var farthest = start
            var distance = 0.0
            for index in (start + 1)..<end {
                let d = distanceToSegment(merged[index], merged[start], merged[end])
                if d > distance {
                    distance = d
                    farthest = index
                }
            }
            if distance > tolerance {
                keep[farthest] = true
                stack.append((start, farthest))
                stack.append((farthest, end))
            }
        }
        return merged.indices.filter { keep[$0] }.map { merged[$0] }
    }

    private static func distanceToSegment(_ p: (Double, Double), _ a: (Double, Double), _ b: (Double, Double)) -> Double
    {
        let dx = b.0 - a.0
        let dy = b.1 - a.1
        let length = dx * dx + dy * dy
        guard length > 0 else { return hypot(p.0 - a.0, p.1 - a.1) }
        let t = max(0, min(1, ((p.0 - a.0) * dx + (p.1 - a.1) * dy) / length))
        return hypot(p.0 - a.0 - t * dx, p.1 - a.1 - t * dy)
    }

    /// Equirectangular around the middle latitude, north up, scaled to `width` units across (a walk too
    /// small to scale, such as a single fix, is drawn at a metre a unit).
    private struct Projection {
        let west: Double
        let north: Double
        let cosine: Double
        let scale: Double
        let height: Double

        init?(_ fixes: [Fix]) {
            guard let first = fixes.first else { return nil }
            var (south, north, west, east) = (first.latitude, first.latitude, first.longitude, first.longitude)
            for fix in fixes {
                south = min(south, fix.latitude)
                north = max(north, fix.latitude)
                west = min(west, fix.longitude)
                east = max(east, fix.longitude)
            }
            self.west = west
            self.north = north
            cosine = cos((south + north) / 2 * .pi / 180)
            let metresPerDegree = Geodesy.meanRadius * .pi / 180
            let across = max((east - west) * cosine, north - south) * metresPerDegree
            scale = across > 1 ? TrackSVG.width / across * metresPerDegree : metresPerDegree
            height = max(1, (north - south) * scale)
        }

        func point(_ fix: Fix) -> (Double, Double) {
            point(latitude: fix.latitude, longitude: fix.longitude)
        }

        func point(latitude: Double, longitude: Double) -> (Double, Double) {
            ((longitude - west) * cosine * scale, (north - latitude) * scale)
        }
    }
}
