# Runs one libFuzzer target for CTest (tests/fuzz/CMakeLists.txt): a fresh work folder as the
# corpus libFuzzer writes to, the committed corpus read after it, crash inputs kept in the work
# folder (their names are printed). Fails when the fuzzer finds anything.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
execute_process(COMMAND ${FUZZER} ${OPTIONS} -artifact_prefix=${WORK}/ ${WORK}/corpus ${CORPUS}
                RESULT_VARIABLE rc)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "fuzzer ${FUZZER} failed (exit code ${rc}); inputs that crash are in ${WORK}")
endif()
