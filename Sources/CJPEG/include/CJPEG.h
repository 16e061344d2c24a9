// A narrow view of libjpeg(-turbo) for Swift: one call that turns a JPEG in memory into a small JPEG.
// libjpeg reports errors by longjmp; Swift cannot call setjmp and a longjmp across Swift frames skips
// releases, so every libjpeg call lives in shim.c, behind cjpeg_thumbnail, which owns the jmp_buf and
// returns a code and a message instead.
//
// Policy, in short (the README of Tests/Fixtures and Thumbnailer.swift say more):
// - Input must start with the JPEG SOI marker; anything else is CJPEG_NOT_JPEG, with a guess at what it is.
// - The pixel limit is checked right after the header, before libjpeg allocates anything for the image.
// - Progressive files: more than max_scans scans is CJPEG_TOO_MANY_SCANS (checked while decoding).
// - libjpeg's own memory is capped at max_memory bytes; beyond it the file is CJPEG_TOO_LARGE.
// - Truncated or corrupt data is an error, never a half-grey thumbnail: every libjpeg warning labelled
//   "Corrupt JPEG data" (bad Huffman or arithmetic code, premature end of a data segment, stray bytes
//   before a marker, lost restart sync, inconsistent progression) and "Premature end of JPEG file".
//   Only warnings about metadata pass (unknown JFIF revision or Adobe transform, damaged ICC chunk).
//   Damage that still decodes without a warning (Huffman codes resynchronise) cannot be seen.
// - Grayscale stays grayscale; YCbCr and RGB become RGB; CMYK and YCCK are converted to RGB without a
//   colour profile (Adobe-style inverted CMYK when the file has an Adobe marker, as Photoshop writes
//   it); other colour spaces and 12-bit data are CJPEG_UNSUPPORTED.
// - Decode scale (libjpeg's DCT scaling): the smallest of 1/8, 2/8, 4/8, 8/8 that is at least twice the
//   thumbnail, then an area average. At 1/8 and 2/8, progressive files are read only until every
//   component's coefficients that the scale needs have arrived (to within their last bit or two, which
//   encoders send in later refinement scans): usually the first scan at 1/8, the first four at 2/8. The
//   rest of the file is not decoded, so damage there goes unseen, but a file cut short is still rejected:
//   it must still hold an end-of-image marker after the scans that were read.
#ifndef CJPEG_H
#define CJPEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    CJPEG_OK = 0,
    CJPEG_EMPTY = 1,                // no bytes at all
    CJPEG_NOT_JPEG = 2,             // does not start with a JPEG SOI marker
    CJPEG_TRUNCATED = 3,            // the data ends before the image does
    CJPEG_CORRUPT = 4,              // damaged headers or image data
    CJPEG_TOO_LARGE = 5,            // more pixels than max_pixels, or more memory than max_memory
    CJPEG_TOO_MANY_SCANS = 6,       // a progressive file with more than max_scans scans
    CJPEG_UNSUPPORTED = 7,          // a valid JPEG this decoder cannot handle (colour space, precision)
    CJPEG_OUT_OF_MEMORY = 8,        // the system refused an allocation below the limits
    CJPEG_INVALID_OPTIONS = 9,      // a programming error in the caller
    CJPEG_INTERNAL = 10,            // encoding the thumbnail failed (should not happen)
};

typedef struct {
    int size;                   // long side of the thumbnail in pixels; smaller images keep their size
    int quality;                // 1...100, libjpeg's quality scale
    int64_t max_pixels;         // width * height of the source, checked after the header
    int max_scans;              // progressive scans allowed
    int64_t max_memory;         // bytes libjpeg may allocate for decoding (0: no cap)
    bool dc_only;               // allow reading progressive files only as far as the scale needs (see above;
                                // named when that was only the DC scans at 1/8)
    bool keep_memory;           // leave the memory of a large progressive decode to the allocator for the
                                // next call instead of giving it back to the system (see cjpeg_reuse_memory)
} cjpeg_options;

typedef struct {
    uint8_t *jpeg;              // the thumbnail, malloc'ed: release with cjpeg_result_free
    size_t jpeg_size;
    int width;                  // of the thumbnail, after the EXIF orientation is applied
    int height;
    int source_width;           // of the source as stored in the file (before orientation)
    int source_height;
    int orientation;            // EXIF orientation 1...8 that was applied (1 when absent or invalid)
    int components;             // 1 grayscale or 3 RGB, in the thumbnail
    int scale_eighths;          // libjpeg's DCT scaling used for the decode: 1...8 (/8)
    bool dc_only;               // a 1/8 decode of a progressive file, from its DC scans (if partial)
    bool partial;               // a progressive decode that stopped before the end of the file
    char message[256];          // on failure: what happened, for a person; on success: a tolerated warning or ""
} cjpeg_result;

/// Makes a thumbnail of the JPEG in data[0..<size]. Returns CJPEG_OK or an error code, with
/// result->message set. Never prints, never exits, never longjmps out. Thread-safe: no shared state.
int cjpeg_thumbnail(const uint8_t *data, size_t size, const cjpeg_options *options, cjpeg_result *result);

/// Releases result->jpeg (safe to call on a failed or zeroed result, and twice).
void cjpeg_result_free(cjpeg_result *result);

/// For programs that make many thumbnails in a row: has glibc's malloc keep large freed blocks (up to
/// 256 MiB) in the heap for reuse instead of unmapping them, so that each progressive file's coefficient
/// buffer does not fault in fresh pages (a third of the CPU time on the benchmark corpus). Process-wide
/// (mallopt) and for good: a long-running program that must give memory back after each thumbnail should
/// not call it. Use with keep_memory. Does nothing without glibc.
void cjpeg_reuse_memory(void);

/// libjpeg-turbo's version as a number, e.g. 2001005 for 2.1.5 (0 if built against another libjpeg).
int cjpeg_library_version(void);

#endif
