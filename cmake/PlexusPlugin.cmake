# plexus_add_plugin(<name> SOURCES <files...> [LIBRARIES <targets...>] [OUTPUT_DIR <dir>])
# Builds a plugin the way a third party does: it includes only the SDK and links plexus::core.
# Hidden visibility; the entry points are exported by PLEXUS_PLUGIN.
function(plexus_add_plugin name)
  cmake_parse_arguments(P "" "OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  add_library(${name} MODULE ${P_SOURCES})
  target_link_libraries(${name} PRIVATE plexus::core ${P_LIBRARIES})
  target_compile_features(${name} PRIVATE cxx_std_20)
  if(TARGET plexus_warnings)
    target_link_libraries(${name} PRIVATE plexus_warnings)
  endif()
  if(NOT P_OUTPUT_DIR AND DEFINED PLEXUS_PLUGIN_BUILD_DIR)
    set(P_OUTPUT_DIR ${PLEXUS_PLUGIN_BUILD_DIR})  # inside the plexus build tree
    # A plugin shipped with plexus: building the program builds it (apps/CMakeLists.txt).
    set_property(GLOBAL APPEND PROPERTY PLEXUS_SHIPPED_PLUGINS ${name})
  elseif(NOT P_OUTPUT_DIR)
    set(P_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR})  # an out-of-tree plugin
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
endfunction()
