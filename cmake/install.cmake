# SPDX-License-Identifier: Apache-2.0
# Installation: headers, the library, the CLI with its man pages (gzipped)
# and completion, a CMake package (find_package(chunkstore CONFIG) ->
# chunkstore::store) and a pkg-config file (chunkstore.pc); the bench
# tool only as the "bench" component.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS chunkstore_store EXPORT chunkstoreTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY libstore/include/chunkstore DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(CHUNKSTORE_BUILD_CLI)
  install(TARGETS chunkstore RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY ${PROJECT_BINARY_DIR}/cli/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
    FILES_MATCHING PATTERN "*.1.gz")
  install(FILES ${PROJECT_BINARY_DIR}/cli/completion/chunkstore
    DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
  install(FILES ${PROJECT_BINARY_DIR}/cli/completion/_chunkstore
    DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
endif()
if(CHUNKSTORE_BUILD_BENCH)
  # Not installed by default: `cmake --install build --component bench`.
  install(TARGETS chunkstore-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT bench EXCLUDE_FROM_ALL)
endif()

set(CHUNKSTORE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/chunkstore)
install(EXPORT chunkstoreTargets NAMESPACE chunkstore:: DESTINATION ${CHUNKSTORE_CMAKE_DIR})
configure_package_config_file(cmake/chunkstoreConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/chunkstoreConfig.cmake INSTALL_DESTINATION ${CHUNKSTORE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/chunkstoreConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/chunkstoreConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/chunkstoreConfigVersion.cmake DESTINATION ${CHUNKSTORE_CMAKE_DIR})

# libcurl is not linked: it is loaded with dlopen when an S3 store opens.
# A static library needs its dependencies on every consumer's link line, so
# they are plain requirements there (a consumer need not know to ask for
# --static); a shared one carries them itself. The public headers need
# C++17 or later, and the consumer chooses its own -std.
set(deps "libcrypto sqlite3 libxxhash libzstd libdeflate expat")
if(BUILD_SHARED_LIBS)
  set(CHUNKSTORE_PC_REQUIRES "")
  set(CHUNKSTORE_PC_REQUIRES_PRIVATE "${deps}")
  set(CHUNKSTORE_PC_LIBS "")
else()
  set(CHUNKSTORE_PC_REQUIRES "${deps}")
  set(CHUNKSTORE_PC_REQUIRES_PRIVATE "")
  set(CHUNKSTORE_PC_LIBS "-lpthread -l${CMAKE_DL_LIBS}")
endif()
file(RELATIVE_PATH CHUNKSTORE_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(cmake/chunkstore.pc.in ${CMAKE_CURRENT_BINARY_DIR}/chunkstore.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/chunkstore.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
