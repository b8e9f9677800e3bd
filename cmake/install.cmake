# Installation: headers, the library, the CLI and bench tools, a CMake
# package (find_package(chunkstore CONFIG) -> chunkstore::store) and a
# pkg-config file (chunkstore.pc).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS chunkstore_store EXPORT chunkstoreTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY libstore/include/chunkstore DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(CHUNKSTORE_BUILD_CLI)
  install(TARGETS chunkstore RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(CHUNKSTORE_BUILD_BENCH)
  install(TARGETS chunkstore-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
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
set(CHUNKSTORE_PC_REQUIRES_PRIVATE "libcrypto sqlite3 zlib libxxhash")
if(BUILD_SHARED_LIBS)
  set(CHUNKSTORE_PC_PRIVATE "")
else()
  # A static library needs its dependencies on the consumer's link line.
  set(CHUNKSTORE_PC_PRIVATE "-lpthread -l${CMAKE_DL_LIBS}")
endif()
configure_file(cmake/chunkstore.pc.in ${CMAKE_CURRENT_BINARY_DIR}/chunkstore.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/chunkstore.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
