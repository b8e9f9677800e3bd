# SPDX-License-Identifier: Apache-2.0
# A Debian package of the command, the library (shared, with its SONAME,
# when configured with -DBUILD_SHARED_LIBS=ON as scripts/package.sh does),
# headers, pkg-config and CMake files, man pages and completion:
# `cpack -G DEB` in the build directory. chunkstore-bench stays out (its
# own install component, "bench").
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME chunkstore)
set(CPACK_PACKAGE_VENDOR "The chunkstore project")
set(CPACK_PACKAGE_CONTACT "The chunkstore project <chunkstore@invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "content-addressed, chunked object store")
set(CPACK_PACKAGE_DESCRIPTION
  "chunkstore stores payloads (model weights, datasets, images, documents) in\n"
  "content-defined chunks named by their SHA-256, in a directory or an S3\n"
  "bucket, and gives back an id equal to the payload's sha256sum. Every byte\n"
  "it returns has been checked against its hash.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://invalid/chunkstore")
# Depends from the ELF files (libssl3, libsqlite3-0, zlib1g, libxxhash0,
# libstdc++6, libc6), plus libcurl4 and libmicrohttpd12, which are loaded
# with dlopen (for S3 and http:// stores, and for serve) and so invisible
# to dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libcurl4, libmicrohttpd12")
# The Python package (chunkstore in dist-packages) needs an interpreter.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3, python3-numpy")
# The shared library's shlibs file and the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_COMPONENTS_ALL Unspecified)
include(CPack)
