import ArgumentParser
import FieldLogDaemon
import FoundationEssentials
import Glibc
import Logging
import Photos

/// Where milestone photos come from and where their thumbnails go.
struct PhotoOptions: ParsableArguments {
    @Option(help: "Use the geotagged JPEGs in this folder instead of Flickr.")
    var photosDir: String?

    @Option(
        help: ArgumentHelp(
            "Read the Flickr API key from this file instead of $FLICKR_API_KEY.",
            discussion: """
                A relative path is looked up in $CREDENTIALS_DIRECTORY first (systemd LoadCredential=). \
                Without this option and $FLICKR_API_KEY, the credential flickr-api-key is used if systemd \
                passes one.
                """))
    var apiKeyFile: String?

    @Option(help: "Flickr REST endpoint (https; plain http only on loopback).")
    var flickrEndpoint: String = FlickrSource.defaultEndpoint

    @Option(
        help: "Also trust the CA certificate(s) in this PEM file for Flickr and its images (a test server, a proxy).")
    var flickrCaFile: String?

    @Option(
        help:
            "Flickr calls (searches and downloads) per hour at most: up to 3599 for Flickr itself, which allows 3600 per key; any for another endpoint."
    )
    var flickrRate: Int = PhotoSettings().flickrRate

    @Option(
        help: ArgumentHelp(
            "Photo sources in order of preference: a comma list of flickr, commons, local, or none.",
            discussion: """
                Each milestone is served by the first source that finds a photo; the next is asked when one \
                finds nothing or cannot be used. Default: local with --photos-dir; else flickr,commons with a \
                Flickr key; else commons.
                """))
    var photoSources: String?

    @Option(help: "Wikimedia Commons API endpoint (https; plain http only on loopback).")
    var commonsEndpoint: String = PhotoSettings().commonsEndpoint

    @Option(
        help: "Also trust the CA certificate(s) in this PEM file for Commons and its images (a test server, a proxy).")
    var commonsCaFile: String?

    @Option(
        help:
            "How Wikimedia can reach whoever runs this device (an e-mail address or URL), sent in the User-Agent as Wikimedia asks."
    )
    var contact: String?

    @Option(help: "Directory of the thumbnail cache.")
    var cacheDir: String = PhotoSettings().cacheDirectory

    @Option(help: "Largest size of the thumbnail cache, in bytes.")
    var cacheMax: Int = PhotoSettings().cacheMax

    @Option(help: "Long side of thumbnails, in pixels.")
    var thumbSize: Int = PhotoSettings().thumbnailSize

    @Option(help: "Longest wait between retries of a photo that could not be fetched, in seconds.")
    var photoRetryMax: Double = PhotoSettings().retryMax

    var settings: PhotoSettings {
        var settings = PhotoSettings()
        settings.directory = photosDir
        settings.apiKeyFile = apiKeyFile
        settings.flickrEndpoint = flickrEndpoint
        settings.flickrCAFile = flickrCaFile
        settings.flickrRate = flickrRate
        settings.sources = photoSources
        settings.commonsEndpoint = commonsEndpoint
        settings.commonsCAFile = commonsCaFile
        settings.contact = contact
        settings.cacheDirectory = cacheDir
        settings.cacheMax = cacheMax
        settings.thumbnailSize = thumbSize
        settings.retryMax = photoRetryMax
        return settings
    }
}
