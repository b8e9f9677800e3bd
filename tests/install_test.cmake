# SPDX-License-Identifier: Apache-2.0
# Installs chunkstore into a scratch prefix, builds tests/install against it
# with find_package and again through pkg-config, and runs both results.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed")
endif()
set(expected chunkstore/store.h chunkstoreConfig.cmake chunkstoreTargets.cmake chunkstore.pc
    bin/chunkstore chunkstore.1.gz chunkstore-publish.1.gz _chunkstore)
foreach(f ${expected})
  get_filename_component(leaf ${f} NAME)
  file(GLOB_RECURSE found ${WORK}/prefix/*${leaf})
  if(NOT found)
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()
foreach(f share/man/man1/chunkstore-index-rebuild.1.gz share/bash-completion/completions/chunkstore
        share/zsh/vendor-completions/_chunkstore)
  if(NOT EXISTS ${WORK}/prefix/${f})
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()
# The bench tool is its own component, not installed by default.
if(EXISTS ${WORK}/prefix/bin/chunkstore-bench)
  message(FATAL_ERROR "chunkstore-bench was installed by default")
endif()
# Only the public headers are installed.
file(GLOB_RECURSE headers RELATIVE ${WORK}/prefix/include ${WORK}/prefix/include/*)
foreach(h ${headers})
  if(NOT h MATCHES "^chunkstore/(status|options|chunker|compression|env|store|tree|object_stream|version|blob_store)\\.h$")
    message(FATAL_ERROR "unexpected installed header ${h}")
  endif()
endforeach()
set(flags "")
if(SANITIZE)
  # A sanitizer-built library needs a consumer built the same way.
  set(flags "-fsanitize=${SANITIZE}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/build
  -DCMAKE_PREFIX_PATH=${WORK}/prefix "-DCMAKE_CXX_FLAGS=${flags}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/build RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed")
endif()
execute_process(COMMAND ${WORK}/build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "matches")
  message(FATAL_ERROR "the consumer failed (${rc}): ${out}")
endif()
# The same consumer through pkg-config, as a Makefile or meson user would
# build it: the .pc file must point into this prefix (not the configured
# one) and carry every library a static libchunkstore needs.
find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB_RECURSE pc ${WORK}/prefix/*/chunkstore.pc)
get_filename_component(pcdir "${pc}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${pcdir}")
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs chunkstore OUTPUT_VARIABLE pcflags
  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config does not know the installed chunkstore")
endif()
if(NOT pcflags MATCHES "${WORK}/prefix")
  message(FATAL_ERROR "pkg-config points outside the install prefix: ${pcflags}")
endif()
separate_arguments(pcflags UNIX_COMMAND "${pcflags}")
execute_process(COMMAND ${CXX} -std=c++17 ${flags} ${SOURCE_DIR}/main.cc -o ${WORK}/pc-consumer ${pcflags}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer through pkg-config failed: ${err}")
endif()
execute_process(COMMAND ${WORK}/pc-consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "matches")
  message(FATAL_ERROR "the pkg-config consumer failed (${rc}): ${out}")
endif()
