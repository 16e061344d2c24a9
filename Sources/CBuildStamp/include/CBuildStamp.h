#ifndef CBUILDSTAMP_H
#define CBUILDSTAMP_H

/// The version the binary was built as: the Debian package's version, given by deploy/build-deb through
/// scripts/build-release --version (a compile-time definition, so no file in the repository holds it), or
/// "unknown" for a development build.
const char *fieldlog_build_version(void);

#endif
