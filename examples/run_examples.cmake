# SPDX-License-Identifier: Apache-2.0
# Runs the three examples against a scratch store and checks their output.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/tree/sub)
string(REPEAT "0123456789abcdef" 4096 payload)  # 64 KiB
file(WRITE ${WORK}/input.txt "${payload}")
file(WRITE ${WORK}/tree/one.txt "one")
file(WRITE ${WORK}/tree/sub/two.txt "two")
file(SHA256 ${WORK}/input.txt expected)

execute_process(COMMAND ${PUBLISH_FILE} ${WORK}/store ${WORK}/input.txt doc
  OUTPUT_VARIABLE id OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT id STREQUAL "sha256:${expected}")
  message(FATAL_ERROR "publish_file printed '${id}' (exit ${rc}), expected sha256:${expected}")
endif()

execute_process(COMMAND ${SERVE_RANGE} ${WORK}/store doc 16 10
  OUTPUT_VARIABLE range RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT range STREQUAL "0123456789")
  message(FATAL_ERROR "serve_range printed '${range}' (exit ${rc})")
endif()
execute_process(COMMAND ${SERVE_RANGE} ${WORK}/store missing 0 1 RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 3)
  message(FATAL_ERROR "serve_range of a missing ref exited ${rc}, expected 3")
endif()

execute_process(COMMAND ${PUBLISH_DIR} ${WORK}/store ${WORK}/tree t
  OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT listing MATCHES "^t/one.txt sha256:[0-9a-f]+\nt/sub/two.txt sha256:[0-9a-f]+\n$")
  message(FATAL_ERROR "publish_dir printed '${listing}' (exit ${rc})")
endif()
execute_process(COMMAND ${SERVE_RANGE} ${WORK}/store t/sub/two.txt 0 100 OUTPUT_VARIABLE two)
if(NOT two STREQUAL "two")
  message(FATAL_ERROR "reading t/sub/two.txt gave '${two}'")
endif()
