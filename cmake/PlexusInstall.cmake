# Install: the core library, the SDK headers, plugins (each plugin's CMakeLists installs itself
# into ${PLEXUS_PLUGIN_SUBDIR}), the program, a CMake package so that out-of-tree plugins build
# with find_package(plexus) and plexus_add_plugin(), and the documentation and examples under
# <datadir>/plexus.
#
# The same package also works from the build tree: `-DCMAKE_PREFIX_PATH=<plexus build dir>`
# finds <build>/<libdir>/cmake/plexus/plexusConfig.cmake, with plexus::core pointing at the
# build's libplexus_core and the source tree's headers. The build tree already has the install
# tree's shape (top-level CMakeLists.txt: lib/, bin/, lib/plexus/plugins/), so the package gets the
# install tree's place and file set there too, and one config template serves both: it finds its
# helper files and targets next to itself (CMAKE_CURRENT_LIST_DIR), never through an absolute path.
include(CMakePackageConfigHelpers)
install(TARGETS plexus_core EXPORT plexusTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY core/include/plexus DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(PLEXUS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/plexus)
set(_plexus_build_package ${PROJECT_BINARY_DIR}/${PLEXUS_CMAKE_DIR})

# The install tree's package. Its config is generated outside the build tree's package folder
# and outside the places find_package searches under <build> (the config at <build>/ itself,
# where earlier versions put it, was found by CMAKE_PREFIX_PATH=<build> and could not work).
install(EXPORT plexusTargets NAMESPACE plexus:: DESTINATION ${PLEXUS_CMAKE_DIR})
configure_package_config_file(cmake/plexusConfig.cmake.in ${PROJECT_BINARY_DIR}/CMakeFiles/plexus-install/plexusConfig.cmake
  INSTALL_DESTINATION ${PLEXUS_CMAKE_DIR})
write_basic_package_version_file(${_plexus_build_package}/plexusConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/CMakeFiles/plexus-install/plexusConfig.cmake
  ${_plexus_build_package}/plexusConfigVersion.cmake
  cmake/PlexusPlugin.cmake cmake/PlexusTeuchos.cmake DESTINATION ${PLEXUS_CMAKE_DIR})

# The build tree's package: the same files in <build>/<libdir>/cmake/plexus. configure_file
# copies the helpers again whenever their sources change (it makes them configure dependencies).
export(EXPORT plexusTargets NAMESPACE plexus:: FILE ${_plexus_build_package}/plexusTargets.cmake)
configure_package_config_file(cmake/plexusConfig.cmake.in ${_plexus_build_package}/plexusConfig.cmake
  INSTALL_DESTINATION ${_plexus_build_package} INSTALL_PREFIX ${PROJECT_BINARY_DIR})
configure_file(cmake/PlexusPlugin.cmake ${_plexus_build_package}/PlexusPlugin.cmake COPYONLY)
configure_file(cmake/PlexusTeuchos.cmake ${_plexus_build_package}/PlexusTeuchos.cmake COPYONLY)
# A build tree configured before the package moved has a broken config at its top, which
# find_package would still find first there.
file(REMOVE ${PROJECT_BINARY_DIR}/plexusConfig.cmake ${PROJECT_BINARY_DIR}/plexusConfigVersion.cmake)
unset(_plexus_build_package)

# Documentation and examples: <datadir>/plexus/docs (the guides and their figures) and
# <datadir>/plexus/examples (the parameter files and the out-of-tree strategy, which a plugin
# author copies and builds against this install).
set(PLEXUS_DATA_SUBDIR ${CMAKE_INSTALL_DATADIR}/plexus)
install(DIRECTORY docs/ DESTINATION ${PLEXUS_DATA_SUBDIR}/docs
  FILES_MATCHING PATTERN "*.md" PATTERN "*.png")
install(DIRECTORY examples/ DESTINATION ${PLEXUS_DATA_SUBDIR}/examples
  FILES_MATCHING PATTERN "*.xml" PATTERN "*.cpp" PATTERN "*.hpp" PATTERN "CMakeLists.txt" PATTERN "*.md"
  PATTERN "CMakeFiles" EXCLUDE)
