# Runs attn with ARGS in SOURCE_DIR and compares its stdout byte for byte with GOLDEN.
# On a mismatch keeps the received output under RECEIVED_DIR and prints the diff command.
# ARGS may start with exit=N: the exit code attn must return (default 0; attn check exits 1 on differences).
set(want 0)
if(ARGS MATCHES "^exit=([0-9]+) +(.*)$")
  set(want "${CMAKE_MATCH_1}")
  set(ARGS "${CMAKE_MATCH_2}")
endif()
separate_arguments(args UNIX_COMMAND "${ARGS}")
get_filename_component(name "${GOLDEN}" NAME)
set(received "${RECEIVED_DIR}/${name}")
file(MAKE_DIRECTORY "${RECEIVED_DIR}")
# (COLUMNS unset: text is written for 80 columns, as to any pipe, whatever the terminal ctest runs in)
execute_process(COMMAND "${CMAKE_COMMAND}" -E env --unset=COLUMNS "${ATTN}" ${args} WORKING_DIRECTORY "${SOURCE_DIR}"
                OUTPUT_FILE "${received}" ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL want)
  message(FATAL_ERROR "attn ${ARGS} exited ${rc}, expected ${want}: ${err}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${GOLDEN}" "${received}" RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "golden mismatch for ${name}\n  see: diff -u ${GOLDEN} ${received}\n"
                      "  if the change is intended: scripts/update-goldens.sh, then read git diff golden/")
endif()
file(REMOVE "${received}")
