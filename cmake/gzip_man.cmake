# SPDX-License-Identifier: Apache-2.0
# Compresses the generated man pages in DIR (cmake -DDIR=... -P this file)
# as Debian's policy asks of installed pages: gzip -9n, so the result does
# not depend on the file's name or time and the package builds reproducibly.
# The .1 files stay beside their .1.gz for the build tree's own tests.
file(GLOB pages ${DIR}/*.1)
if(NOT pages)
  message(FATAL_ERROR "no man pages in ${DIR}")
endif()
foreach(page ${pages})
  execute_process(COMMAND gzip -9nkf ${page} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip ${page} failed: ${rc}")
  endif()
endforeach()
