extension ByteWriter {
    /// `,"photo":{...}|null,"photo_status":"found|none_nearby|pending"` for journal.json and GeoJSON.
    package mutating func appendPhoto(_ record: MilestonePhoto?, isCached: (String) -> Bool) {
        guard let record else {
            append(",\"photo\":null,\"photo_status\":\"pending\"")
            return
        }
        switch record.outcome {
        case .noneNearby:
            append(",\"photo\":null,\"photo_status\":\"none_nearby\"")
        case let .found(photo, distance, cacheKey):
            append(",\"photo\":{\"id\":")
            appendJSONString(photo.id)
            append(",\"source\":")
            appendJSONString(record.source)
            append(",\"title\":")
            appendJSONString(photo.title)
            append(",\"owner\":")
            appendJSONString(photo.ownerName)
            append(",\"owner_id\":")
            appendJSONString(photo.ownerID)
            append(",\"license\":")
            appendJSONString(photo.license)
            if let licenseURL = photo.licenseURL {
                append(",\"license_url\":")
                appendJSONString(licenseURL)
            }
            append(",\"page\":")
            if let page = photo.pageURL { appendJSONString(page) } else { append("null") }
            append(",\"lat\":")
            appendDecimal(photo.latitude, digits: Precision.degreeDigits)
            append(",\"lon\":")
            appendDecimal(photo.longitude, digits: Precision.degreeDigits)
            append(",\"distance_m\":")
            appendDecimal(distance, digits: Precision.metreDigits)
            append(",\"url\":")
            appendJSONString(photo.imageURL)
            append(",\"cache_key\":")
            appendJSONString(cacheKey)
            append(isCached(cacheKey) ? ",\"cached\":true}" : ",\"cached\":false}")
            append(",\"photo_status\":\"found\"")
        }
    }
}
