package import WalkJournal
package import WalkModel

/// Chooses among the photos a source found near a milestone: the best, not merely the nearest. A photo is
/// never a near-duplicate of one the walk already shows (the same file, or the same owner within
/// `burstSeconds`); photos placed at street level and taken outdoors come before coarse or indoor ones,
/// which are taken only when nothing better is in reach; among those, photos by owners other than those of
/// the walk's latest photos come first; then the nearest, then the id. Deterministic: the same answers
/// give the same picks.
package enum PhotoPicker {
    /// Shots by one owner closer in time than this are one burst: the walk shows one of them.
    package static let burstSeconds = 60.0
    /// Flickr's accuracy scale: 16 is street level, 11 city; below this a position is coarse.
    package static let streetLevel = 15
    /// Owners of this many latest photos of a walk are asked last.
    package static let recentOwnerCount = 3

    package struct Choice: Sendable, Equatable {
        package var candidate: PhotoCandidate
        package var distance: Double
        /// Coarse position or indoors: taken only when no better photo is in reach.
        package var isFallback: Bool
        /// The pick explained, for the journal's `why`.
        package var why: String
    }

    /// The usable candidates within `radius` of the point, best first. Skipped files, files in `picks.avoided`
    /// and near-duplicates of the walk's photos are left out.
    package static func rank(
        _ candidates: [PhotoCandidate], latitude: Double, longitude: Double, radius: Double, picks: WalkPicks
    ) -> [Choice] {
        let usable = candidates.filter {
            $0.skipReason == nil && !picks.avoided.contains($0.id) && !picks.isNearDuplicate($0)
        }
        .map { ($0, Geodesy.distance(latitude, longitude, $0.latitude, $0.longitude)) }
        .filter { $0.1 <= radius }
        let owners = Set(usable.map { $0.0.ownerID }).count
        let recent = Set(picks.recentOwners.suffix(recentOwnerCount))
        let ranked = usable.map { candidate, distance in
            (
                candidate: candidate, distance: distance, fallback: isCoarse(candidate) || candidate.indoors,
                repeated: recent.contains(candidate.ownerID)
            )
        }.sorted { a, b in
            if a.fallback != b.fallback { return !a.fallback }
            if a.repeated != b.repeated { return !a.repeated }
            if a.distance != b.distance { return a.distance < b.distance }
            return a.candidate.id < b.candidate.id
        }
        let of = "of \(usable.count) candidate\(usable.count == 1 ? "" : "s"), \(owners) owner\(owners == 1 ? "" : "s")"
        var choices: [Choice] = []
        for (rank, entry) in ranked.enumerated() {
            var what: [String] = []
            if entry.fallback {
                what.append(isCoarse(entry.candidate) ? "coarse position" : "indoors")
            } else {
                what.append(entry.candidate.accuracy == nil ? "nearest" : "nearest street-level")
            }
            if !entry.repeated && !recent.isEmpty { what.append("by another owner") }
            let lead = rank == 0 ? what.joined(separator: " ") : "next best (\(what.joined(separator: " ")))"
            let reason = entry.fallback ? ": nothing better within \(Int(radius)) m" : ""
            choices.append(
                Choice(
                    candidate: entry.candidate, distance: entry.distance, isFallback: entry.fallback,
                    why: "\(lead) \(of)\(reason)"))
        }
        return choices
    }

    package static func isCoarse(_ candidate: PhotoCandidate) -> Bool {
        candidate.accuracy.map { $0 < streetLevel } ?? false
    }
}

/// What a walk's photos so far mean for its next pick: files not to offer again, the owners of its latest
/// photos, and when each owner took the photos it shows.
package struct WalkPicks: Sendable {
    /// Used, rejected, or suspected of killing the recorder.
    package var avoided: Set<String> = []
    /// Owners of the walk's photos in milestone order, newest last.
    package var recentOwners: [String] = []
    /// Taken times (seconds) of the walk's photos, by owner.
    package var shots: [String: [Double]] = [:]

    package init() {}

    /// From a walk's journal: its photos in milestone order, and what it has rejected or suspects.
    package init(_ log: WalkLog) {
        avoided = log.usedPhotoIDs.union(log.suspectPhotoIDs)
        for index in log.photos.keys.sorted() {
            if let photo = log.photos[index]?.photo { add(photo) }
        }
    }

    /// Counts a photo the walk now shows.
    package mutating func add(_ photo: PhotoCandidate) {
        avoided.insert(photo.id)
        recentOwners.append(photo.ownerID)
        if recentOwners.count > PhotoPicker.recentOwnerCount { recentOwners.removeFirst() }
        if let time = photo.taken.flatMap(Self.seconds) { shots[photo.ownerID, default: []].append(time) }
    }

    package func isNearDuplicate(_ photo: PhotoCandidate) -> Bool {
        guard !photo.ownerID.isEmpty, let time = photo.taken.flatMap(Self.seconds), let times = shots[photo.ownerID]
        else { return false }
        return times.contains { abs($0 - time) <= PhotoPicker.burstSeconds }
    }

    /// "2024-05-18 09:00:00" (as Flickr, Commons and the folder source journal taken dates) as seconds since
    /// 1970; nil for anything else.
    package static func seconds(_ text: String) -> Double? {
        let parts = text.unicodeScalars.prefix(19).split { $0 == "-" || $0 == " " || $0 == ":" || $0 == "T" }
            .map { Int(String(String.UnicodeScalarView($0))) }
        guard parts.count == 6, let year = parts[0], let month = parts[1], let day = parts[2], let hour = parts[3],
            let minute = parts[4], let second = parts[5], (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        // Days from civil (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Double(days * 86_400 + hour * 3_600 + minute * 60 + second)
    }
}
