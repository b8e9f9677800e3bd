# SPDX-License-Identifier: Apache-2.0
# Runs python_arrays.py twice against a scratch store and checks what it
# prints: the array's id, its version (1, then 2 for the same bytes), and
# the missing name's exit code.
# PRELOAD, when set, is the sanitizer runtime the interpreter needs.
file(REMOVE_RECURSE ${WORK})
if(PRELOAD)
  set(ENV{LD_PRELOAD} "${PRELOAD}")
endif()
foreach(version 1 2)
  execute_process(COMMAND ${PYTHON} ${SCRIPT} ${WORK}/store
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "^sha256:[0-9a-f]+ ${version}\nnot found, exit code 3\n$")
    message(FATAL_ERROR "python_arrays.py printed '${out}' '${err}' (exit ${rc}), expected version ${version}")
  endif()
  string(REGEX MATCH "sha256:[0-9a-f]+" id "${out}")
  if(version EQUAL 1)
    set(first ${id})
  elseif(NOT id STREQUAL first)
    message(FATAL_ERROR "the same array got two ids: ${first} and ${id}")
  endif()
endforeach()
