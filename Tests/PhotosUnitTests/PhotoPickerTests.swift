import Foundation
import Photos
import Testing
import WalkModel
import WalkSimulation

/// PhotoPicker on the hard cases: a burst of 30 shots by one owner at one spot, city-level photos at
/// the walk's centre, an indoor snapshot, and other owners' photos along the walk.
struct PhotoPickerTests {
    static let start = (lat: 48.8566, lon: 2.3522)

    /// Milestone `index` of a walk east, 100 m apart.
    static func milestone(_ index: Int) -> (lat: Double, lon: Double) {
        Geodesy.destination(start.lat, start.lon, bearing: 90, distance: Double(index) * 100)
    }

    static func photo(
        _ id: String, owner: String, near index: Int, metres: Double, taken: String, accuracy: Int? = 16,
        indoors: Bool = false
    ) -> PhotoCandidate {
        let spot = milestone(index)
        let at = Geodesy.destination(spot.lat, spot.lon, bearing: 0, distance: metres)
        var candidate = PhotoCandidate(
            id: id, title: id, ownerName: owner, ownerID: owner, license: "CC BY 2.0", pageURL: nil, latitude: at.lat,
            longitude: at.lon, imageURL: "https://live.staticflickr.com/1/\(id)_z.jpg", taken: taken)
        candidate.accuracy = accuracy
        candidate.indoors = indoors
        return candidate
    }

    /// Everything a source knows of the area.
    static let everything: [PhotoCandidate] = {
        var all: [PhotoCandidate] = []
        // The burst: 30 shots 2 s apart, 10 m from milestone 3; nearer to it than anything else.
        for shot in 0..<30 {
            all.append(
                photo(
                    "burst\(shot)", owner: "burst@N00", near: 3, metres: 10,
                    taken: "2024-06-01 10:00:\(String(format: "%02d", shot * 2))"))
        }
        // Other owners, 40 m beside every milestone, hours apart.
        for index in 0..<12 {
            all.append(
                photo(
                    "along\(index)", owner: "owner\(index % 4)@N00", near: index, metres: 40,
                    taken: "2024-06-0\(1 + index % 7) \(String(format: "%02d", 8 + index)):00:00"))
        }
        // City-level positions, all at the walk's centre: "near" every milestone in town.
        for index in 0..<5 {
            all.append(
                photo(
                    "city\(index)", owner: "city@N00", near: 6, metres: 1, taken: "2023-01-0\(index + 1) 12:00:00",
                    accuracy: 11))
        }
        // Indoors, 5 m from milestone 8.
        all.append(
            photo("indoor", owner: "inside@N00", near: 8, metres: 5, taken: "2024-06-03 15:00:00", indoors: true))
        return all
    }()

    /// A walk of 12 milestones served as PhotoService serves them: widening radii, the best choice taken.
    static func walk(_ universe: [PhotoCandidate]) -> [PhotoPicker.Choice] {
        var picks = WalkPicks()
        var chosen: [PhotoPicker.Choice] = []
        for index in 0..<12 {
            let spot = milestone(index)
            for radius in PhotoService.radii {
                let answer = universe.filter {
                    Geodesy.distance(spot.lat, spot.lon, $0.latitude, $0.longitude) <= radius
                }
                let choices = PhotoPicker.rank(
                    answer, latitude: spot.lat, longitude: spot.lon, radius: radius, picks: picks)
                if let best = choices.first(where: { !$0.isFallback || radius >= PhotoService.fallbackReach }) {
                    chosen.append(best)
                    picks.add(best.candidate)
                    break
                }
            }
        }
        return chosen
    }

    @Test func aBurstGivesOnePhotoAndCoarseOrIndoorOnesLoseToStreetLevel() {
        let chosen = Self.walk(Self.everything)
        #expect(chosen.count == 12)
        let ids = chosen.map(\.candidate.id)
        #expect(ids.filter { $0.hasPrefix("burst") }.count == 1, "\(ids)")
        #expect(!ids.contains { $0.hasPrefix("city") || $0 == "indoor" }, "\(ids)")
        #expect(Set(ids).count == ids.count)
        // Never two shots by one owner within the burst window.
        for (a, first) in chosen.enumerated() {
            for second in chosen[(a + 1)...] where first.candidate.ownerID == second.candidate.ownerID {
                let gap = abs(WalkPicks.seconds(first.candidate.taken!)! - WalkPicks.seconds(second.candidate.taken!)!)
                #expect(gap > PhotoPicker.burstSeconds, "\(first.candidate.id) and \(second.candidate.id)")
            }
        }
        #expect(Set(chosen.map(\.candidate.ownerID)).count >= 5, "owners spread: \(chosen.map(\.candidate.ownerID))")
        #expect(chosen.allSatisfy { !$0.why.isEmpty && $0.why.contains("candidate") })
        #expect(chosen[0].why.hasPrefix("nearest street-level of "), "\(chosen[0].why)")
    }

    @Test func theSameAnswersGiveTheSamePicksInAnyOrder() {
        let first = Self.walk(Self.everything)
        let replay = Self.walk(Self.everything.reversed())
        var random = SplitMix(seed: 29)
        let shuffled = Self.everything.map { ($0, random.next()) }.sorted { $0.1 < $1.1 }.map(\.0)
        #expect(first == replay)
        #expect(first == Self.walk(shuffled))
    }

    @Test func coarseOrIndoorOnesAreTakenWhenNothingBetterIsInReach() {
        let onlyCoarse = Self.everything.filter { $0.id.hasPrefix("city") || $0.id == "indoor" }
        let chosen = Self.walk(onlyCoarse)
        #expect(chosen.count == 6, "five city-level and one indoor photo for twelve milestones")
        #expect(chosen.allSatisfy { $0.isFallback })
        #expect(
            chosen.contains { $0.why.contains("coarse position") && $0.why.contains("nothing better within 2000 m") })
        // The same owner's city-level shots are days apart: not a burst, but spread as far as possible.
        #expect(Set(chosen.map(\.candidate.id)).count == chosen.count)
    }

    @Test func sameOwnerSecondsApartIsOneBurstAndUnknownTimesAreNot() {
        var picks = WalkPicks()
        picks.add(Self.photo("a", owner: "x", near: 0, metres: 0, taken: "2024-06-01 10:00:00"))
        #expect(picks.isNearDuplicate(Self.photo("b", owner: "x", near: 0, metres: 0, taken: "2024-06-01 10:00:59")))
        #expect(!picks.isNearDuplicate(Self.photo("c", owner: "x", near: 0, metres: 0, taken: "2024-06-01 10:01:01")))
        #expect(!picks.isNearDuplicate(Self.photo("d", owner: "y", near: 0, metres: 0, taken: "2024-06-01 10:00:00")))
        #expect(!picks.isNearDuplicate(Self.photo("e", owner: "x", near: 0, metres: 0, taken: "some day in May")))
        #expect(WalkPicks.seconds("1970-01-02 00:00:01") == 86_401)
        #expect(WalkPicks.seconds("2024-03-01 00:00:00")! - WalkPicks.seconds("2024-02-28 00:00:00")! == 2 * 86_400)
    }
}
