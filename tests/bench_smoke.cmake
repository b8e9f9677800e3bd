# SPDX-License-Identifier: Apache-2.0
# Runs chunkstore-bench with tiny sizes, then checks its JSON report.
execute_process(
  COMMAND ${BENCH} --size 2MiB --samples 2 --warmups 0 --memory-sizes 256,1MiB --rebuild-objects 2000 --json ${OUT}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "chunkstore-bench exited with ${rc}")
endif()
find_program(PYTHON3 python3 REQUIRED)
execute_process(COMMAND ${PYTHON3} ${CHECK} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the report failed its check")
endif()
