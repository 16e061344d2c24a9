// For an aarch64 binary linked with Debian sid's static Swift runtime (built against glibc 2.42) that must
// run on bookworm's glibc 2.36: the few symbols the runtime takes from glibc newer than 2.36, defined over
// the older functions. The C23 variants differ only in accepting "0b" binary prefixes, which nothing in
// fieldlog parses. Linked by deploy/cross/build for --suite bookworm only; the link fails if another newer
// symbol appears (deploy/build-deb checks the binary's GLIBC_ versions against the suite's).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long __isoc23_strtol(const char *s, char **end, int base) { return strtol(s, end, base); }
long long __isoc23_strtoll(const char *s, char **end, int base) { return strtoll(s, end, base); }
unsigned long __isoc23_strtoul(const char *s, char **end, int base) { return strtoul(s, end, base); }
unsigned long long __isoc23_strtoull(const char *s, char **end, int base) { return strtoull(s, end, base); }

int __isoc23_vsscanf(const char *s, const char *format, va_list args) { return vsscanf(s, format, args); }

int __isoc23_sscanf(const char *s, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int n = vsscanf(s, format, args);
    va_end(args);
    return n;
}

size_t strlcpy(char *dst, const char *src, size_t size) {
    size_t length = strlen(src);
    if (size > 0) {
        size_t n = length < size - 1 ? length : size - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
    }
    return length;
}

size_t strlcat(char *dst, const char *src, size_t size) {
    size_t used = strnlen(dst, size);
    if (used == size) return size + strlen(src);
    return used + strlcpy(dst + used, src, size - used);
}
