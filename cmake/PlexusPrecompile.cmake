# Precompiled headers: a shorter build (CI builds everything twice on two cores; docs/building.md,
# "Where a build's time goes": the normal build 553 -> 499 s, the sanitizer build 591 -> 498 s).
#
# Most plexus sources include the same SDK headers, and through them Teuchos, MPI and much of the
# standard library. Those headers are compiled once per kind of target, into a host (an object
# library of no code of its own), and every target of that kind reuses the host's (REUSE_FROM). A
# precompiled header is only valid for the flags it was built with (g++ and clang refuse one built
# with -fPIC for a -fPIE source, or with a macro the source does not define, and CMake's
# -Winvalid-pch with -Werror makes that an error), so there is one host per set of flags:
#   library  shared and static libraries, default visibility (plexus_app);
#   plugin   plugins and the libraries they link, hidden visibility (plexus_add_plugin);
#   program  the executables outside tests/ (plexus, the benchmark drivers): -fPIE;
#   test     the GoogleTest executables of tests/: -fPIE, and -Og in Release (tests/CMakeLists.txt),
#            so its host is made there (plexus_precompile_test_host).
# libplexus_core (39 sources) has its own. plexus_precompile_headers() (the end of the top-level
# CMakeLists.txt) gives each target its host by these rules; a target that fits none, has other
# languages' sources (CUDA, C) or compile options of its own (the fuzz build's coverage flags)
# keeps its plain build, as does every target under a compiler other than g++ or clang.
# PLEXUS_PRECOMPILE_HEADERS=OFF turns it all off: the check that each source includes what it
# uses (the precompiled headers are included into every source first, so a missing #include of
# one of them goes unnoticed with them on).
option(PLEXUS_PRECOMPILE_HEADERS "Precompile the headers most plexus sources include (a shorter build)" ON)

# What most sources include anyway: a header here that a source does not include costs it the
# time to load it (layout.cpp, which includes two standard headers: 1.4 s to 1.7 s). Not here:
# nlohmann/json.hpp, spdlog and boost/dll (each under a fifth of the sources, 2-3 s each).
set(PLEXUS_PRECOMPILED_HEADERS
  <algorithm> <array> <chrono> <cstdint> <cstdio> <functional> <map> <memory> <mutex> <optional>
  <span> <sstream> <string> <string_view> <thread> <tuple> <utility> <vector>
  <mpi.h> <plexus/descriptor.hpp> <plexus/context.hpp> <plexus/matrix.hpp>)

set_property(GLOBAL PROPERTY PLEXUS_PCH_SOURCE ${CMAKE_CURRENT_LIST_DIR}/plexus_pch_host.cpp)

# plexus_precompile_host(<kind> [PIE] [HIDDEN] [LIBRARIES <targets...>])
# Makes the host plexus_pch_<kind> in the current directory (its directory's compile options
# apply, as they do to the targets that reuse it).
function(plexus_precompile_host kind)
  cmake_parse_arguments(H "PIE;HIDDEN" "" "LIBRARIES" ${ARGN})
  if(NOT PLEXUS_PRECOMPILE_HEADERS OR NOT CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$")
    return()
  endif()
  get_property(source GLOBAL PROPERTY PLEXUS_PCH_SOURCE)
  set(host plexus_pch_${kind})
  add_library(${host} OBJECT EXCLUDE_FROM_ALL ${source})  # built for the targets that reuse it
  get_target_property(options ${host} COMPILE_OPTIONS)  # its directory's, which its users share
  if(NOT options)
    set(options "")
  endif()
  set_property(GLOBAL PROPERTY PLEXUS_PCH_OPTIONS_${kind} "${options}")
  target_link_libraries(${host} PRIVATE plexus_core plexus_warnings ${H_LIBRARIES})
  target_compile_features(${host} PRIVATE cxx_std_20)
  target_precompile_headers(${host} PRIVATE ${PLEXUS_PRECOMPILED_HEADERS})
  if(H_PIE)
    # What CMake gives an executable: an object library would get -fPIC.
    set_target_properties(${host} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(${host} PRIVATE -fPIE)
  endif()
  if(H_HIDDEN)
    set_target_properties(${host} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  endif()
endfunction()

# The GoogleTest executables' host, made in tests/ after its compile options.
function(plexus_precompile_test_host)
  plexus_precompile_host(test PIE LIBRARIES GTest::gtest)
  if(TARGET plexus_pch_test)
    target_precompile_headers(plexus_pch_test PRIVATE <gtest/gtest.h>)
  endif()
endfunction()

function(_plexus_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    _plexus_targets_below(${sub} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# The host a target reuses, or "" where it keeps its plain build.
function(_plexus_precompile_kind target out)
  set(${out} "" PARENT_SCOPE)
  get_target_property(type ${target} TYPE)
  get_target_property(sources ${target} SOURCES)
  get_target_property(links ${target} LINK_LIBRARIES)
  get_target_property(options ${target} COMPILE_OPTIONS)
  get_target_property(reuse ${target} PRECOMPILE_HEADERS_REUSE_FROM)
  get_target_property(own ${target} PRECOMPILE_HEADERS)
  get_target_property(dir ${target} SOURCE_DIR)
  get_target_property(visibility ${target} CXX_VISIBILITY_PRESET)
  get_target_property(inlines_hidden ${target} VISIBILITY_INLINES_HIDDEN)
  get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
  get_target_property(definitions ${target} COMPILE_DEFINITIONS)
  if(NOT definitions)
    set(definitions "")
  endif()
  if(target MATCHES "^plexus_pch_" OR target STREQUAL "plexus_core" OR reuse OR own OR NOT sources)
    return()
  endif()
  if(NOT type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY|STATIC_LIBRARY)$")
    return()
  endif()
  foreach(source ${sources})
    if(NOT source MATCHES "\\.cpp$")
      return()  # CUDA, C, or anything but C++ sources
    endif()
  endforeach()
  if(NOT pic)
    return()  # the hosts are -fPIC or -fPIE, as CMAKE_POSITION_INDEPENDENT_CODE makes every target
  endif()
  # Its own macros: clang takes a -D the precompiled headers were made without and applies it to
  # the rest of the source only. Those of plexus's targets say where things are, or what a source
  # of its own is built with; none is used in the precompiled headers.
  foreach(definition ${definitions})
    if(NOT definition MATCHES "^(PLEXUS_[A-Z0-9_]+|[A-Za-z0-9_]+_EXPORTS)(=|$)")
      return()
    endif()
  endforeach()
  # The hosts' compile definitions come from libplexus_core: a target must have them all.
  if(NOT "plexus::core" IN_LIST links AND NOT "plexus_core" IN_LIST links)
    return()
  endif()
  string(FIND "${dir}/" "${PROJECT_SOURCE_DIR}/tests/" in_tests)
  if(type STREQUAL "EXECUTABLE")
    if(NOT in_tests EQUAL 0)
      set(kind program)
    elseif("GTest::gtest" IN_LIST links AND TARGET plexus_pch_test)
      set(kind test)
    else()
      return()
    endif()
  elseif(visibility STREQUAL "hidden" AND inlines_hidden)
    set(kind plugin)
  elseif(NOT visibility AND NOT inlines_hidden)
    set(kind library)
  else()
    return()
  endif()
  # Its directory's options (the sanitizers', the tests' -Og) are its host's; one of its own (the
  # fuzz build's coverage flags) would not match the host's headers.
  if(NOT options)
    set(options "")
  endif()
  if(NOT type STREQUAL "EXECUTABLE")  # tests/' -Og, which yields nothing for a library or plugin
    get_property(executables_only GLOBAL PROPERTY PLEXUS_PCH_EXECUTABLES_ONLY_OPTIONS)
    string(REPLACE "${executables_only}" "" options "${options}")
    list(REMOVE_ITEM options "")
  endif()
  get_property(host_options GLOBAL PROPERTY PLEXUS_PCH_OPTIONS_${kind})
  if(NOT "${options}" STREQUAL "${host_options}")
    return()
  endif()
  set(${out} ${kind} PARENT_SCOPE)
endfunction()

# After every target is made: libplexus_core's own, the hosts, and each target's host.
function(plexus_precompile_headers)
  if(NOT PLEXUS_PRECOMPILE_HEADERS)
    message(STATUS "plexus: precompiled headers off (PLEXUS_PRECOMPILE_HEADERS=OFF)")
    return()
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$")  # the hosts' flags are theirs (-fPIE)
    message(STATUS "plexus: precompiled headers off (${CMAKE_CXX_COMPILER_ID} is neither GNU nor Clang)")
    return()
  endif()
  target_precompile_headers(plexus_core PRIVATE ${PLEXUS_PRECOMPILED_HEADERS})
  plexus_precompile_host(library)
  plexus_precompile_host(plugin HIDDEN)
  plexus_precompile_host(program PIE)
  _plexus_targets_below(${PROJECT_SOURCE_DIR} targets)
  set(counts "")
  foreach(target ${targets})
    _plexus_precompile_kind(${target} kind)
    if(kind)
      target_precompile_headers(${target} REUSE_FROM plexus_pch_${kind})
      list(APPEND reused_${kind} ${target})
    else()
      get_target_property(type ${target} TYPE)
      if(type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY|STATIC_LIBRARY|OBJECT_LIBRARY)$"
         AND NOT target MATCHES "^(plexus_pch_.*|plexus_core)$")
        message(VERBOSE "plexus: precompiled headers: ${target} builds without")
      endif()
    endif()
  endforeach()
  foreach(kind library plugin program test)
    list(LENGTH reused_${kind} n)
    string(APPEND counts " ${kind} ${n}")
  endforeach()
  message(STATUS "plexus: precompiled headers: libplexus_core's own; targets reusing each host:${counts}")
endfunction()
