# Runs plexus-unwind-check on NP ranks for every component it lists (cmake -P; see unwind_check.cpp).
# Each run must end through the faulty rank's handler (exit code 3 from MPI_Abort, its message in
# the output) within PER_RUN_TIMEOUT seconds; a hang in a destructor ends in the timeout instead.
execute_process(COMMAND ${MPIEXEC} -n 1 --oversubscribe ${CHECK} --list
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc TIMEOUT ${PER_RUN_TIMEOUT})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "plexus-unwind-check --list failed (${rc})")
endif()
string(REPLACE "\n" ";" entries "${listing}")
list(FILTER entries INCLUDE REGEX "^(multiply|collectives) ")
list(LENGTH entries n)
if(n LESS 3)
  message(FATAL_ERROR "plexus-unwind-check --list found ${n} components; expected the built-in strategies and collectives:\n${listing}")
endif()
# Cannon on 4 ranks' 2 x 2 grid (V = 2) fuses its two ticks by default, through shared windows
# that belong to the strategy that unwinds; unfused, its pre-shift and two ticks unwind too.
if(NP EQUAL 4)
  list(APPEND entries "multiply cannon:FuseTicks=never")
endif()
set(failures "")
# A run whose faulty rank reached its handler (the message is printed before MPI_Abort) but whose
# mpiexec then did not end with the abort's code 3 is run again, up to twice: Debian's Open MPI
# 4.1.4 mpiexec now and then crashes in its own teardown after an abort (SIGSEGV in
# PMIx_server_finalize, about 1 run in 30 with two jobs on two cores) or hangs there. A rank
# stuck in a collective while unwinding never reaches the handler, so that failure is not retried.
math(EXPR faulty "${NP} - 1")
foreach(entry IN LISTS entries)
  string(REPLACE " " ";" args "${entry}")
  foreach(attempt RANGE 1 3)
    execute_process(COMMAND ${MPIEXEC} -n ${NP} --oversubscribe ${CHECK} ${args}
                    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT ${PER_RUN_TIMEOUT})
    set(reached FALSE)
    if("${out}${err}" MATCHES "rank ${faulty} reached the handler: fault injected")
      set(reached TRUE)
    endif()
    if(rc EQUAL 3 OR NOT reached OR attempt EQUAL 3)
      break()
    endif()
    message("again  ${entry} on ${NP} ranks: the handler was reached, but mpiexec ended with '${rc}' (attempt ${attempt})")
  endforeach()
  if(NOT rc EQUAL 3 OR NOT reached)
    list(APPEND failures "${entry}")
    message("FAILED ${entry} on ${NP} ranks: exit ${rc}\n${out}${err}")
  else()
    message("ok     ${entry} on ${NP} ranks")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "no handler reached (a destructor made a collective call, or the fault never fired): ${failures}")
endif()
