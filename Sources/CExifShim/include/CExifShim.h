// A narrow view of libexif for Swift: one call fills one plain struct; no ExifData pointer leaves C.
// Only the tags fieldlog needs for a milestone photo: where it was taken and how to credit it.
#ifndef CEXIFSHIM_H
#define CEXIFSHIM_H

#include <stdbool.h>
#include <stddef.h>

enum {
    CEXIF_TEXT_CAPACITY = 256,  // bytes per text field, NUL included; longer text is cut at a UTF-8 boundary
};

/// What a JPEG's EXIF says. Text is UTF-8 (control characters replaced by spaces, trimmed), "" when absent.
typedef struct {
    bool has_gps;       // a usable position: both coordinates with their N/S and E/W references, in range
    double latitude;    // degrees, south negative; 0 unless has_gps
    double longitude;   // degrees, west negative
    char title[CEXIF_TEXT_CAPACITY];      // ImageDescription, else XPTitle (Windows, UTF-16)
    char artist[CEXIF_TEXT_CAPACITY];     // Artist
    char copyright[CEXIF_TEXT_CAPACITY];  // Copyright (the photographer's part, else the editor's)
    char taken[32];     // DateTimeOriginal as written, "YYYY:MM:DD HH:MM:SS"
    int error_number;   // errno when the result is CEXIF_CANNOT_OPEN or CEXIF_CANNOT_READ
} cexif_info;

enum {
    CEXIF_CANNOT_READ = -3,  // read(2) failed; see error_number
    CEXIF_NO_MEMORY = -2,
    CEXIF_CANNOT_OPEN = -1,  // see error_number
    CEXIF_GPS = 0,           // EXIF with a usable position (and whatever attribution it has)
    CEXIF_NO_GPS = 1,        // EXIF without a usable position; attribution fields still filled
    CEXIF_NO_EXIF = 2,       // no EXIF block at all (or not a JPEG)
};

/// Reads the EXIF block of the JPEG at `path` (only the file's head, never the image data).
int cexif_read_file(const char *path, cexif_info *out);
/// The same for a JPEG (or a bare EXIF block) in memory.
int cexif_read_data(const unsigned char *data, size_t length, cexif_info *out);

#endif
