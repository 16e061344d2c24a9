#include "CJPEG.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <jpeglib.h>
#include <jerror.h>

// Progressive decodes of more pixels than this hand their memory back to the system afterwards
// (glibc keeps large freed blocks in the heap once its mmap threshold has grown).
#define CJPEG_TRIM_PIXELS (4 * 1000 * 1000)
// Most rows asked of jpeg_read_scanlines at once (libjpeg's rec_outbuf_height is 1, 2 or 4).
#define CJPEG_MAX_BATCH 16

typedef struct cjpeg_context cjpeg_context;

typedef struct {
    struct jpeg_error_mgr pub;
    cjpeg_context *context;
} cjpeg_error_mgr;

typedef struct {
    struct jpeg_progress_mgr pub;
    cjpeg_context *context;
} cjpeg_progress_mgr;

// Area average (box filter with exact fractional coverage) from in_w x in_h to out_w x out_h, fed one
// source row at a time: memory is a few rows plus the small output, whatever the source size.
// Coordinates are kept as integers in units of 1/out_w (columns) and 1/out_h (rows), so the last
// output row and column end exactly where the source does.
typedef struct {
    int in_w, in_h, out_w, out_h, channels;
    int *x_first;       // out_w: first source column of each output column
    int *x_count;       // out_w: how many source columns it covers (partly)
    int *x_offset;      // out_w: where its weights start in x_weights
    float *x_weights;   // coverage of each source column, summing to 1 per output column
    float *row;         // out_w * channels: the current source row, reduced horizontally
    float *sum;         // out_w * channels: the output row being accumulated
    uint8_t *pixels;    // out_w * out_h * channels: the result
    int in_y;           // source rows pushed
    int out_y;          // output rows finished
} cjpeg_resampler;

struct cjpeg_context {
    jmp_buf jump;
    cjpeg_result *result;
    const cjpeg_options *options;
    int code;                   // the code to return after a longjmp
    bool encoding;              // errors now are ours (CJPEG_INTERNAL), not the file's
    struct jpeg_decompress_struct decoder;
    struct jpeg_compress_struct encoder;
    bool has_decoder;
    bool has_encoder;
    cjpeg_error_mgr decoder_errors;
    cjpeg_error_mgr encoder_errors;
    cjpeg_progress_mgr progress;
    JSAMPLE *scanline;          // one decoded row
    uint8_t *converted;         // one row of CMYK converted to RGB
    cjpeg_resampler resampler;
    uint8_t *oriented;          // the resampled image with the EXIF orientation applied
    unsigned char *encoded;     // jpeg_mem_dest's buffer until it is handed to the result
    unsigned long encoded_size;
};

// MARK: - Errors

static void set_message(cjpeg_result *result, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(result->message, sizeof(result->message), format, arguments);
    va_end(arguments);
}

__attribute__((noreturn)) static void fail(cjpeg_context *context, int code, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(context->result->message, sizeof(context->result->message), format, arguments);
    va_end(arguments);
    context->code = code;
    longjmp(context->jump, 1);
}

static cjpeg_context *context_of(j_common_ptr info) {
    return ((cjpeg_error_mgr *)info->err)->context;
}

static double megapixels(int64_t pixels) {
    return (double)pixels / 1e6;
}

// libjpeg's fatal errors: always longjmp back to cjpeg_thumbnail with a code that says whose fault it is.
static void cjpeg_error_exit(j_common_ptr info) {
    cjpeg_context *context = context_of(info);
    char text[JMSG_LENGTH_MAX];
    (*info->err->format_message)(info, text);
    if (context->encoding) {
        fail(context, CJPEG_INTERNAL, "encoding the thumbnail failed (libjpeg: %s)", text);
    }
    switch (info->err->msg_code) {
    case JERR_NO_SOI:
        fail(context, CJPEG_NOT_JPEG, "not a JPEG file (libjpeg: %s)", text);
    case JERR_INPUT_EMPTY:
        fail(context, CJPEG_EMPTY, "the file is empty");
    case JERR_OUT_OF_MEMORY:
    case JERR_NO_BACKING_STORE:
        if (context->options->max_memory > 0) {
            fail(context, CJPEG_TOO_LARGE, "decoding this image needs more than the %lld MiB memory limit",
                 (long long)(context->options->max_memory >> 20));
        }
        fail(context, CJPEG_OUT_OF_MEMORY, "not enough memory to decode this image (libjpeg: %s)", text);
    case JERR_IMAGE_TOO_BIG:
    case JERR_WIDTH_OVERFLOW:
        fail(context, CJPEG_TOO_LARGE, "the image is too large to decode (libjpeg: %s)", text);
    case JERR_BAD_PRECISION:
    case JERR_CONVERSION_NOTIMPL:
    case JERR_NOT_COMPILED:
    case JERR_ARITH_NOTIMPL:
        fail(context, CJPEG_UNSUPPORTED, "this kind of JPEG is not supported (libjpeg: %s)", text);
    default:
        fail(context, CJPEG_CORRUPT, "the JPEG data is damaged (libjpeg: %s)", text);
    }
}

// Warnings about metadata only: an unknown JFIF revision or Adobe transform code, a damaged ICC chunk.
// Everything else libjpeg warns about is labelled "Corrupt JPEG data" (or is the premature end of the
// file) and means it guessed or filled part of the image with grey: those are errors here. That includes
// stray bytes before a marker, which is how entropy-coded data that still decoded but was damaged shows
// up at the end of a scan; the price is that files padded before their EOI marker are rejected too.
static bool warning_is_harmless(j_common_ptr info) {
    switch (info->err->msg_code) {
    case JWRN_JFIF_MAJOR:
    case JWRN_ADOBE_XFORM:
    case JWRN_BOGUS_ICC:
        return true;
    default:
        return false;
    }
}

static void cjpeg_emit_message(j_common_ptr info, int level) {
    if (level >= 0) {
        return; // trace messages
    }
    cjpeg_context *context = context_of(info);
    info->err->num_warnings++;
    char text[JMSG_LENGTH_MAX];
    (*info->err->format_message)(info, text);
    if (context->encoding || warning_is_harmless(info)) {
        if (context->result->message[0] == '\0') {
            set_message(context->result, "tolerated libjpeg warning: %s", text);
        }
        return;
    }
    if (info->err->msg_code == JWRN_JPEG_EOF) {
        fail(context, CJPEG_TRUNCATED, "the file ends before the image does: it was probably cut short (libjpeg: %s)",
             text);
    }
    fail(context, CJPEG_CORRUPT, "the JPEG data is damaged (libjpeg: %s)", text);
}

// Never prints: whatever libjpeg would have printed becomes the result's message if it has none.
static void cjpeg_output_message(j_common_ptr info) {
    cjpeg_context *context = context_of(info);
    if (context->result->message[0] == '\0') {
        (*info->err->format_message)(info, context->result->message);
    }
}

static struct jpeg_error_mgr *install_errors(cjpeg_error_mgr *errors, cjpeg_context *context) {
    jpeg_std_error(&errors->pub);
    errors->pub.error_exit = cjpeg_error_exit;
    errors->pub.emit_message = cjpeg_emit_message;
    errors->pub.output_message = cjpeg_output_message;
    errors->context = context;
    return &errors->pub;
}

// Called by libjpeg per iMCU row while it reads a multi-scan file: stops scan bombs early.
static void cjpeg_progress_monitor(j_common_ptr info) {
    if (!info->is_decompressor) {
        return;
    }
    cjpeg_context *context = ((cjpeg_progress_mgr *)info->progress)->context;
    j_decompress_ptr decoder = (j_decompress_ptr)info;
    if (decoder->input_scan_number > context->options->max_scans) {
        fail(context, CJPEG_TOO_MANY_SCANS, "the progressive JPEG has more than %d scans (a scan bomb?)",
             context->options->max_scans);
    }
}

static void *allocate(cjpeg_context *context, size_t count, size_t size) {
    void *memory = count == 0 || size == 0 ? NULL : calloc(count, size);
    if (memory == NULL) {
        fail(context, CJPEG_OUT_OF_MEMORY, "not enough memory for a %zu-byte buffer", count * size);
    }
    return memory;
}

// MARK: - Sniffing and EXIF

static const char *describe_non_jpeg(const uint8_t *p, size_t n) {
    if (n >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) return "a PNG image";
    if (n >= 6 && (memcmp(p, "GIF87a", 6) == 0 || memcmp(p, "GIF89a", 6) == 0)) return "a GIF image";
    if (n >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0) return "a WebP image";
    if (n >= 12 && memcmp(p + 4, "ftyp", 4) == 0) return "a HEIF/HEIC or AVIF image (or another ISO media file)";
    if (n >= 4 && (memcmp(p, "II*\0", 4) == 0 || memcmp(p, "MM\0*", 4) == 0)) return "a TIFF image or camera raw file";
    if (n >= 5 && memcmp(p, "%PDF-", 5) == 0) return "a PDF document";
    size_t i = 0;
    if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) i = 3;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) i++;
    if (i < n && p[i] == '<') return "HTML or XML text (a web page instead of the photo?)";
    if (i < n && (p[i] == '{' || p[i] == '[')) return "JSON text";
    size_t printable = 0, checked = n < 64 ? n : 64;
    for (size_t j = 0; j < checked; j++) {
        if ((p[j] >= 0x20 && p[j] < 0x7f) || p[j] == '\n' || p[j] == '\r' || p[j] == '\t') printable++;
    }
    if (checked > 0 && printable == checked) return "text";
    return NULL;
}

static uint32_t read_u16(const uint8_t *p, bool little) {
    return little ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : (uint32_t)p[0] << 8 | (uint32_t)p[1];
}

static uint32_t read_u32(const uint8_t *p, bool little) {
    return little ? read_u16(p, true) | read_u16(p + 2, true) << 16 : read_u16(p, false) << 16 | read_u16(p + 2, false);
}

// Tag 0x0112 of IFD0 of a TIFF structure of n bytes; 1 for anything missing, malformed or out of range.
static int tiff_orientation(const uint8_t *tiff, size_t n) {
    if (n < 8) return 1;
    bool little;
    if (tiff[0] == 'I' && tiff[1] == 'I') little = true;
    else if (tiff[0] == 'M' && tiff[1] == 'M') little = false;
    else return 1;
    if (read_u16(tiff + 2, little) != 42) return 1;
    uint64_t ifd = read_u32(tiff + 4, little);
    if (ifd + 2 > n) return 1;
    uint32_t count = read_u16(tiff + ifd, little);
    for (uint32_t i = 0; i < count; i++) {
        uint64_t entry = ifd + 2 + 12 * (uint64_t)i;
        if (entry + 12 > n) return 1;
        if (read_u16(tiff + entry, little) != 0x0112) continue;
        uint32_t type = read_u16(tiff + entry + 2, little);
        if (read_u32(tiff + entry + 4, little) < 1) return 1;
        uint32_t value;
        if (type == 3) value = read_u16(tiff + entry + 8, little);          // SHORT, as the standard says
        else if (type == 4) value = read_u32(tiff + entry + 8, little);     // LONG, seen from some writers
        else return 1;
        return value >= 1 && value <= 8 ? (int)value : 1;
    }
    return 1;
}

// The first APP1 "Exif" segment decides, as in every reader that follows the standard.
static int exif_orientation(j_decompress_ptr decoder) {
    for (jpeg_saved_marker_ptr marker = decoder->marker_list; marker != NULL; marker = marker->next) {
        if (marker->marker != JPEG_APP0 + 1 || marker->data_length < 6) continue;
        if (memcmp(marker->data, "Exif\0\0", 6) != 0) continue;
        return tiff_orientation(marker->data + 6, marker->data_length - 6);
    }
    return 1;
}

// MARK: - Resampling

static void resampler_init(cjpeg_context *context, int in_w, int in_h, int out_w, int out_h, int channels) {
    cjpeg_resampler *r = &context->resampler;
    if (out_w > in_w || out_h > in_h || out_w < 1 || out_h < 1) {
        fail(context, CJPEG_INTERNAL, "cannot resample %dx%d to %dx%d", in_w, in_h, out_w, out_h);
    }
    r->in_w = in_w;
    r->in_h = in_h;
    r->out_w = out_w;
    r->out_h = out_h;
    r->channels = channels;
    r->x_first = allocate(context, (size_t)out_w, sizeof(int));
    r->x_count = allocate(context, (size_t)out_w, sizeof(int));
    r->x_offset = allocate(context, (size_t)out_w, sizeof(int));
    r->x_weights = allocate(context, (size_t)in_w + (size_t)out_w, sizeof(float));
    r->row = allocate(context, (size_t)out_w * channels, sizeof(float));
    r->sum = allocate(context, (size_t)out_w * channels, sizeof(float));
    r->pixels = allocate(context, (size_t)out_w * out_h, (size_t)channels);
    int offset = 0;
    for (int x = 0; x < out_w; x++) {
        int64_t left = (int64_t)x * in_w, right = (int64_t)(x + 1) * in_w;     // in units of 1/out_w
        int first = (int)(left / out_w), last = (int)((right - 1) / out_w);
        r->x_first[x] = first;
        r->x_count[x] = last - first + 1;
        r->x_offset[x] = offset;
        for (int i = first; i <= last; i++) {
            int64_t start = (int64_t)i * out_w > left ? (int64_t)i * out_w : left;
            int64_t end = (int64_t)(i + 1) * out_w < right ? (int64_t)(i + 1) * out_w : right;
            r->x_weights[offset++] = (float)((double)(end - start) / (double)in_w);
        }
    }
}

static void resampler_emit(cjpeg_resampler *r) {
    const size_t count = (size_t)r->out_w * r->channels;
    uint8_t *restrict out = r->pixels + (size_t)r->out_y * count;
    float *restrict sum = r->sum;
    for (size_t k = 0; k < count; k++) {
        float value = sum[k] + 0.5f;
        value = value < 0 ? 0 : value > 255 ? 255 : value;
        out[k] = (uint8_t)value;
        sum[k] = 0;
    }
    r->out_y++;
}

static void reduce_row(const cjpeg_resampler *r, const uint8_t *restrict source, float *restrict out) {
    const int *first = r->x_first, *counts = r->x_count, *offsets = r->x_offset;
    if (r->channels == 1) {
        for (int x = 0; x < r->out_w; x++) {
            const uint8_t *p = source + first[x];
            const float *w = r->x_weights + offsets[x];
            float s = 0;
            for (int i = 0, n = counts[x]; i < n; i++) s += w[i] * p[i];
            out[x] = s;
        }
        return;
    }
    if (r->channels == 4) {
        for (int x = 0; x < r->out_w; x++, out += 4) {
            const uint8_t *p = source + (size_t)first[x] * 4;
            const float *w = r->x_weights + offsets[x];
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int i = 0, n = counts[x]; i < n; i++, p += 4) {
                s0 += w[i] * p[0];
                s1 += w[i] * p[1];
                s2 += w[i] * p[2];
                s3 += w[i] * p[3];
            }
            out[0] = s0;
            out[1] = s1;
            out[2] = s2;
            out[3] = s3;
        }
        return;
    }
    for (int x = 0; x < r->out_w; x++, out += 3) {
        const uint8_t *p = source + (size_t)first[x] * 3;
        const float *w = r->x_weights + offsets[x];
        float s0 = 0, s1 = 0, s2 = 0;
        for (int i = 0, n = counts[x]; i < n; i++, p += 3) {
            s0 += w[i] * p[0];
            s1 += w[i] * p[1];
            s2 += w[i] * p[2];
        }
        out[0] = s0;
        out[1] = s1;
        out[2] = s2;
    }
}

static void add_row(float *restrict sum, const float *restrict row, float weight, size_t count) {
    for (size_t k = 0; k < count; k++) sum[k] += weight * row[k];
}

static void resampler_push(cjpeg_resampler *r, const uint8_t *source) {
    reduce_row(r, source, r->row);
    // Rows in units of 1/out_h: source row y is [y*out_h, (y+1)*out_h), output row o is [o*in_h, (o+1)*in_h).
    int64_t top = (int64_t)r->in_y * r->out_h, bottom = top + r->out_h;
    const size_t count = (size_t)r->out_w * r->channels;
    while (top < bottom && r->out_y < r->out_h) {
        int64_t boundary = (int64_t)(r->out_y + 1) * r->in_h;
        int64_t end = bottom < boundary ? bottom : boundary;
        add_row(r->sum, r->row, (float)((double)(end - top) / (double)r->in_h), count);
        if (end == boundary) resampler_emit(r);
        top = end;
    }
    r->in_y++;
}

static void resampler_free(cjpeg_resampler *r) {
    free(r->x_first);
    free(r->x_count);
    free(r->x_offset);
    free(r->x_weights);
    free(r->row);
    free(r->sum);
    free(r->pixels);
    memset(r, 0, sizeof(*r));
}

// MARK: - Pixels

// Adobe (Photoshop) CMYK JPEGs store 255 - ink; others store ink. No colour profile: approximate colours.
// Writes `samples` bytes a pixel: RGB, or RGBX with X = 255.
static void cmyk_to_rgb(const uint8_t *in, uint8_t *out, int width, int samples, bool inverted) {
    for (int x = 0; x < width; x++, in += 4, out += samples) {
        unsigned c = in[0], m = in[1], y = in[2], k = in[3];
        if (!inverted) {
            c = 255 - c;
            m = 255 - m;
            y = 255 - y;
            k = 255 - k;
        }
        out[0] = (uint8_t)((c * k + 127) / 255);
        out[1] = (uint8_t)((m * k + 127) / 255);
        out[2] = (uint8_t)((y * k + 127) / 255);
        if (samples == 4) out[3] = 255;
    }
}

// Turns the w x h image upright for an EXIF orientation; returns the new size in *ow, *oh.
static void orient(const uint8_t *in, uint8_t *out, int w, int h, int channels, int orientation, int *ow, int *oh) {
    bool swaps = orientation >= 5;
    *ow = swaps ? h : w;
    *oh = swaps ? w : h;
    for (int Y = 0; Y < *oh; Y++) {
        for (int X = 0; X < *ow; X++) {
            int x, y;
            switch (orientation) {
            case 2: x = w - 1 - X; y = Y; break;               // mirrored horizontally
            case 3: x = w - 1 - X; y = h - 1 - Y; break;       // rotated 180
            case 4: x = X; y = h - 1 - Y; break;               // mirrored vertically
            case 5: x = Y; y = X; break;                       // transposed
            case 6: x = Y; y = h - 1 - X; break;               // needs 90 clockwise
            case 7: x = w - 1 - Y; y = h - 1 - X; break;       // transversed
            case 8: x = w - 1 - Y; y = X; break;               // needs 90 counter-clockwise
            default: x = X; y = Y; break;
            }
            memcpy(out + ((size_t)Y * *ow + X) * channels, in + ((size_t)y * w + x) * channels, (size_t)channels);
        }
    }
}

// MARK: - Decoding

// Zigzag position of each coefficient, in natural (row-major) order: the order of coef_bits.
static const int zigzag_index[DCTSIZE2] = {
    0,  1,  5,  6,  14, 15, 27, 28, 2,  4,  7,  13, 16, 26, 29, 42, 3,  8,  12, 17, 25, 30,
    41, 43, 9,  11, 18, 24, 31, 40, 44, 53, 10, 19, 23, 32, 39, 45, 52, 54, 20, 22, 33, 38,
    46, 51, 55, 60, 21, 34, 37, 47, 50, 56, 59, 61, 35, 36, 48, 49, 57, 58, 62, 63};

// Whether the scans read so far hold, for every component, the coefficients a decode at this scale
// needs, to within a bit or two. At n/8 a component's IDCT uses its top-left n x n coefficients (n being
// its DCT_scaled_size reduced by its subsampling: libjpeg enlarges the IDCT of subsampled chroma to
// upsample it, but the chroma has only the detail of its own resolution): the DC alone at 1/8, four
// coefficients at 2/8. Progressive encoders send those first, with their last bits held back for
// refinement scans that come after most of the AC data: libjpeg's usual ten scans give the DC (all
// but 1 bit) in the first, the luma's first five AC (all but 2 bits) in the second, the chroma's AC
// (all but 1 bit) in the third and fourth. Without those bits a DC is off by under one quantisation
// step (below a grey level at usual qualities) and an AC is rounded towards zero by up to three steps:
// 0.2-0.8 dB PSNR on a q95 thumbnail, where the q80 encode of the thumbnail errs by several grey levels.
static bool needed_coefficients_known(j_decompress_ptr decoder) {
    for (int c = 0; c < decoder->num_components; c++) {
        const jpeg_component_info *component = &decoder->comp_info[c];
        int n_h = component->DCT_scaled_size * component->h_samp_factor / decoder->max_h_samp_factor;
        int n_v = component->DCT_scaled_size * component->v_samp_factor / decoder->max_v_samp_factor;
        n_h = n_h < 1 ? 1 : n_h > DCTSIZE ? DCTSIZE : n_h;
        n_v = n_v < 1 ? 1 : n_v > DCTSIZE ? DCTSIZE : n_v;
        const int *bits = decoder->coef_bits[component->component_index];
        for (int v = 0; v < n_v; v++) {
            for (int u = 0; u < n_h; u++) {
                int k = zigzag_index[v * DCTSIZE + u];
                if (bits[k] < 0 || bits[k] > (k == 0 ? 1 : 2)) return false;
            }
        }
    }
    return true;
}

static bool dc_present(j_decompress_ptr decoder) {
    if (!decoder->progressive_mode || decoder->coef_bits == NULL) return true;
    for (int c = 0; c < decoder->num_components; c++) {
        if (decoder->coef_bits[c][0] < 0) return false;
    }
    return true;
}

// Whether the rest of the input still holds an EOI marker (entropy-coded data never contains FF D9).
static bool end_marker_follows(j_decompress_ptr decoder) {
    const uint8_t *p = decoder->src->next_input_byte;
    size_t n = decoder->src->bytes_in_buffer;
    while (n >= 2) {
        const uint8_t *ff = memchr(p, 0xFF, n - 1);
        if (ff == NULL) return false;
        if (ff[1] == JPEG_EOI) return true;
        n -= (size_t)(ff + 1 - p);
        p = ff + 1;
    }
    return false;
}

// Buffered-image mode: reads scans until the coefficients this scale needs are known (or the end).
static void consume_needed_scans(cjpeg_context *context) {
    j_decompress_ptr decoder = &context->decoder;
    for (;;) {
        if (decoder->input_scan_number > context->options->max_scans) {
            fail(context, CJPEG_TOO_MANY_SCANS, "the progressive JPEG has more than %d scans (a scan bomb?)",
                 context->options->max_scans);
        }
        int status = jpeg_consume_input(decoder);
        if (status == JPEG_REACHED_EOI) return;
        if (status == JPEG_SUSPENDED) {
            fail(context, CJPEG_TRUNCATED, "the file ends before the image does: it was probably cut short");
        }
        if (status == JPEG_SCAN_COMPLETED && needed_coefficients_known(decoder)) return;
    }
}

// libjpeg's DCT scaling for the decode, n/8: the smallest of 1/8, 2/8, 4/8 and 8/8 that is still >= 2x
// the target, so that the area average does the final reduction; a full decode when not even 8/8 gets
// there. Not 3/8, 5/8, 6/8 or 7/8: libjpeg-turbo has SIMD code for the others only, and their plain C
// IDCTs are also further from a full decode (up to 2.7 dB PSNR on the corpus).
static int decode_scale(int long_side, int target) {
    for (int n = 1; n < 8; n *= 2) {
        if (((int64_t)long_side * n + 7) / 8 >= 2 * (int64_t)target) return n;
    }
    return 8;
}

static void make_thumbnail(cjpeg_context *context, const uint8_t *data, size_t size) {
    const cjpeg_options *options = context->options;
    cjpeg_result *result = context->result;
    j_decompress_ptr decoder = &context->decoder;

    decoder->err = install_errors(&context->decoder_errors, context);
    jpeg_create_decompress(decoder);
    context->has_decoder = true;
    if (options->max_memory > 0) {
        decoder->mem->max_memory_to_use = options->max_memory > LONG_MAX ? LONG_MAX : (long)options->max_memory;
    }
    context->progress.pub.progress_monitor = cjpeg_progress_monitor;
    context->progress.context = context;
    decoder->progress = &context->progress.pub;
    jpeg_save_markers(decoder, JPEG_APP0 + 1, 0xFFFF);
    jpeg_mem_src(decoder, data, (unsigned long)size);
    jpeg_read_header(decoder, TRUE);

    const int width = (int)decoder->image_width, height = (int)decoder->image_height;
    result->source_width = width;
    result->source_height = height;
    const int64_t pixels = (int64_t)width * height;
    if (pixels > options->max_pixels) {
        fail(context, CJPEG_TOO_LARGE, "the image is %dx%d (%.1f megapixels), more than the %.1f-megapixel limit",
             width, height, megapixels(pixels), megapixels(options->max_pixels));
    }
    if (width < 1 || height < 1) {
        fail(context, CJPEG_CORRUPT, "the JPEG header gives a size of %dx%d", width, height);
    }
    result->orientation = exif_orientation(decoder);

    int channels = 3;   // in the thumbnail
    bool cmyk = false;
    switch (decoder->jpeg_color_space) {
    case JCS_GRAYSCALE:
        decoder->out_color_space = JCS_GRAYSCALE;
        channels = 1;
        break;
    case JCS_YCbCr:
    case JCS_RGB:
        decoder->out_color_space = JCS_RGB;
        break;
    case JCS_CMYK:
    case JCS_YCCK:
        decoder->out_color_space = JCS_CMYK;
        cmyk = true;
        break;
    default:
        fail(context, CJPEG_UNSUPPORTED, "the JPEG's colour space (%d components) is not supported",
             decoder->num_components);
    }
    result->components = channels;
    // Colour rows travel as RGBX where libjpeg-turbo offers it: four bytes a pixel make the resampler's inner
    // loop one vector operation per source pixel, and the encoder takes RGBX as it is.
#ifdef JCS_EXTENSIONS
    const int samples = channels == 1 ? 1 : 4;
    if (decoder->out_color_space == JCS_RGB) decoder->out_color_space = JCS_EXT_RGBX;
#else
    const int samples = channels;
#endif

    // The thumbnail's size comes from the source's (not the scaled decode's) so the aspect ratio is exact.
    const int long_side = width > height ? width : height;
    const int target = options->size < long_side ? options->size : long_side;
    int out_w, out_h;
    if (width >= height) {
        out_w = target;
        out_h = (int)(((int64_t)height * target * 2 + width) / (2 * (int64_t)width));
    } else {
        out_h = target;
        out_w = (int)(((int64_t)width * target * 2 + height) / (2 * (int64_t)height));
    }
    if (out_w < 1) out_w = 1;
    if (out_h < 1) out_h = 1;

    const int scale = decode_scale(long_side, target);
    decoder->scale_num = (unsigned)scale;
    decoder->scale_denom = 8;
    decoder->dct_method = JDCT_ISLOW;
    // At 1/8 and 2/8 a progressive file's first scans hold all the decode needs (a quarter of the file
    // or less, and the cheapest part to decode: the refinement scans cost most), so reading stops there.
    // Larger scales need most of the file anyway. One approximation: libjpeg decodes subsampled chroma
    // with a larger IDCT whose extra AC terms may not have arrived yet, i.e. without interpolating it.
    const bool partial = options->dc_only && decoder->progressive_mode && scale <= 2;
    if (partial) {
        decoder->buffered_image = TRUE;
        decoder->do_block_smoothing = FALSE;    // would guess at coefficients: no better on the corpus
    }
    const bool dc_only = partial && scale == 1;
    result->scale_eighths = scale;
    result->dc_only = dc_only;
    const bool multi_scan = jpeg_has_multiple_scans(decoder);

    jpeg_start_decompress(decoder);
    if (partial) {
        consume_needed_scans(context);
        result->partial = !jpeg_input_complete(decoder);
    }
    if (!dc_present(decoder)) {
        fail(context, CJPEG_CORRUPT, "the JPEG data is damaged: some colour components have no image data");
    }
    const int decoded_w = (int)decoder->output_width, decoded_h = (int)decoder->output_height;
    // A few rows per call: libjpeg makes rec_outbuf_height rows at a time and buffers any it cannot hand over.
    int batch = decoder->rec_outbuf_height > 1 ? decoder->rec_outbuf_height : 1;
    if (batch > CJPEG_MAX_BATCH) batch = CJPEG_MAX_BATCH;
    const size_t stride = (size_t)decoded_w * (size_t)decoder->output_components;
    context->scanline = allocate(context, stride, (size_t)batch);
    if (cmyk) {
        context->converted = allocate(context, (size_t)decoded_w, (size_t)samples);
    }
    resampler_init(context, decoded_w, decoded_h, out_w, out_h, samples);

    if (partial) {
        jpeg_start_output(decoder, decoder->input_scan_number);
    }
    JSAMPROW rows[CJPEG_MAX_BATCH];
    for (int k = 0; k < batch; k++) rows[k] = context->scanline + (size_t)k * stride;
    while (decoder->output_scanline < decoder->output_height) {
        JDIMENSION got = jpeg_read_scanlines(decoder, rows, (JDIMENSION)batch);
        if (got == 0) {
            fail(context, CJPEG_TRUNCATED, "the file ends before the image does: it was probably cut short");
        }
        for (JDIMENSION k = 0; k < got; k++) {
            const uint8_t *pixels_row = rows[k];
            if (cmyk) {
                cmyk_to_rgb(rows[k], context->converted, decoded_w, samples, decoder->saw_Adobe_marker);
                pixels_row = context->converted;
            }
            resampler_push(&context->resampler, pixels_row);
        }
    }
    if (partial) {
        jpeg_finish_output(decoder);
        if (!jpeg_input_complete(decoder) && !end_marker_follows(decoder)) {
            fail(context, CJPEG_TRUNCATED,
                 "the file ends before the image does: it was probably cut short (no end-of-image marker)");
        }
    } else {
        jpeg_finish_decompress(decoder);
    }
    jpeg_destroy_decompress(decoder);
    context->has_decoder = false;
    free(context->scanline);
    context->scanline = NULL;
#ifdef __GLIBC__
    if (multi_scan && pixels > CJPEG_TRIM_PIXELS && !options->keep_memory) {
        malloc_trim(0);
    }
#else
    (void)multi_scan;
#endif

    cjpeg_resampler *r = &context->resampler;
    int final_w = out_w, final_h = out_h;
    const uint8_t *upright = r->pixels;
    if (result->orientation != 1) {
        context->oriented = allocate(context, (size_t)out_w * out_h, (size_t)samples);
        orient(r->pixels, context->oriented, out_w, out_h, samples, result->orientation, &final_w, &final_h);
        upright = context->oriented;
    }
    result->width = final_w;
    result->height = final_h;

    context->encoding = true;
    j_compress_ptr encoder = &context->encoder;
    encoder->err = install_errors(&context->encoder_errors, context);
    jpeg_create_compress(encoder);
    context->has_encoder = true;
    jpeg_mem_dest(encoder, &context->encoded, &context->encoded_size);
    encoder->image_width = (JDIMENSION)final_w;
    encoder->image_height = (JDIMENSION)final_h;
    encoder->input_components = samples;
#ifdef JCS_EXTENSIONS
    encoder->in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_EXT_RGBX;
#else
    encoder->in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
#endif
    jpeg_set_defaults(encoder);
    jpeg_set_quality(encoder, options->quality, TRUE);
    if (options->quality >= 90) {
        // Full-resolution chroma at high qualities (libvips' rule); 4:2:0, libjpeg's default, below.
        for (int c = 0; c < encoder->num_components; c++) {
            encoder->comp_info[c].h_samp_factor = 1;
            encoder->comp_info[c].v_samp_factor = 1;
        }
    }
    encoder->optimize_coding = TRUE;
    encoder->dct_method = JDCT_ISLOW;
    jpeg_start_compress(encoder, TRUE);
    while (encoder->next_scanline < encoder->image_height) {
        JSAMPROW row = (JSAMPROW)(upright + (size_t)encoder->next_scanline * final_w * samples);
        jpeg_write_scanlines(encoder, &row, 1);
    }
    jpeg_finish_compress(encoder);
    result->jpeg = context->encoded;
    result->jpeg_size = context->encoded_size;
    context->encoded = NULL;
}

static void release(cjpeg_context *context) {
    if (context->has_decoder) jpeg_destroy_decompress(&context->decoder);
    if (context->has_encoder) jpeg_destroy_compress(&context->encoder);
    free(context->scanline);
    free(context->converted);
    free(context->oriented);
    free(context->encoded);
    resampler_free(&context->resampler);
    free(context);
}

// MARK: - API

int cjpeg_thumbnail(const uint8_t *data, size_t size, const cjpeg_options *options, cjpeg_result *result) {
    memset(result, 0, sizeof(*result));
    result->orientation = 1;
    if (options == NULL || options->size < 1 || options->size > 65535 || options->quality < 1 ||
        options->quality > 100 || options->max_pixels < 1 || options->max_scans < 1 || options->max_memory < 0) {
        set_message(result, "invalid thumbnail options");
        return CJPEG_INVALID_OPTIONS;
    }
    if (data == NULL || size == 0) {
        set_message(result, "the file is empty");
        return CJPEG_EMPTY;
    }
    if (size < 2 || data[0] != 0xFF || data[1] != 0xD8) {
        const char *guess = describe_non_jpeg(data, size);
        if (guess != NULL) {
            set_message(result, "not a JPEG file: it looks like %s", guess);
        } else if (size < 2) {
            set_message(result, "not a JPEG file: it is only one byte long");
        } else {
            set_message(result, "not a JPEG file: it starts with 0x%02x 0x%02x, not 0xff 0xd8", data[0], data[1]);
        }
        return CJPEG_NOT_JPEG;
    }
    cjpeg_context *context = calloc(1, sizeof(*context));
    if (context == NULL) {
        set_message(result, "not enough memory to start decoding");
        return CJPEG_OUT_OF_MEMORY;
    }
    context->result = result;
    context->options = options;
    int code;
    // Every longjmp lands here; the frames between were all C frames of this file.
    if (setjmp(context->jump) == 0) {
        make_thumbnail(context, data, size);
        code = CJPEG_OK;
    } else {
        code = context->code;
        free(result->jpeg);
        result->jpeg = NULL;
        result->jpeg_size = 0;
    }
    release(context);
    return code;
}

void cjpeg_result_free(cjpeg_result *result) {
    if (result == NULL) return;
    free(result->jpeg);
    result->jpeg = NULL;
    result->jpeg_size = 0;
}

void cjpeg_reuse_memory(void) {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

int cjpeg_library_version(void) {
#ifdef LIBJPEG_TURBO_VERSION_NUMBER
    return LIBJPEG_TURBO_VERSION_NUMBER;
#else
    return 0;
#endif
}
