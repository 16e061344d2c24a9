import FoundationEssentials
import Glibc

/// Distances on the WGS84 mean sphere. The haversine form stays exact for short steps, across the
/// antimeridian and next to the poles; the sphere's error against the ellipsoid (< 0.5 %) is far below GPS noise.
package enum Geodesy {
    /// IUGG mean Earth radius, metres.
    package static let meanRadius = 6_371_008.8

    package static func distance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let phi1 = lat1 * .pi / 180
        let phi2 = lat2 * .pi / 180
        let dPhi = phi2 - phi1
        let dLambda = (lon2 - lon1) * .pi / 180
        let sinPhi = sin(dPhi / 2)
        let sinLambda = sin(dLambda / 2)
        let a = min(1, sinPhi * sinPhi + cos(phi1) * cos(phi2) * sinLambda * sinLambda)
        return 2 * meanRadius * atan2(a.squareRoot(), (1 - a).squareRoot())
    }

    /// The point `distance` metres from a start along an initial bearing (degrees clockwise from north).
    package static func destination(
        _ lat: Double, _ lon: Double, bearing: Double, distance: Double
    ) -> (lat: Double, lon: Double) {
        let phi1 = lat * .pi / 180
        let lambda1 = lon * .pi / 180
        let theta = bearing * .pi / 180
        let delta = distance / meanRadius
        let phi2 = asin(sin(phi1) * cos(delta) + cos(phi1) * sin(delta) * cos(theta))
        let lambda2 = lambda1 + atan2(sin(theta) * sin(delta) * cos(phi1), cos(delta) - sin(phi1) * sin(phi2))
        var lon2 = lambda2 * 180 / .pi
        lon2 = (lon2 + 540).truncatingRemainder(dividingBy: 360) - 180
        return (phi2 * 180 / .pi, lon2)
    }

    /// How far east and north `to` lies from `from`, metres, on the plane tangent between them: exact enough for
    /// the tens of metres a direction is taken over, and across the antimeridian.
    package static func displacement(
        from: (lat: Double, lon: Double), to: (lat: Double, lon: Double)
    ) -> (east: Double, north: Double) {
        var dLon = (to.lon - from.lon).truncatingRemainder(dividingBy: 360)
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        let middle = (from.lat + to.lat) / 2 * .pi / 180
        return (dLon * .pi / 180 * meanRadius * cos(middle), (to.lat - from.lat) * .pi / 180 * meanRadius)
    }
}
