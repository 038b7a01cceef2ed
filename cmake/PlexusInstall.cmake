# Install: the core library, the SDK headers, plugins (each plugin's CMakeLists installs itself
# into ${PLEXUS_PLUGIN_SUBDIR}), the program, and a CMake package so that out-of-tree plugins
# build with find_package(plexus) and plexus_add_plugin().
include(CMakePackageConfigHelpers)
install(TARGETS plexus_core EXPORT plexusTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY core/include/plexus DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(PLEXUS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/plexus)
install(EXPORT plexusTargets NAMESPACE plexus:: DESTINATION ${PLEXUS_CMAKE_DIR})
configure_package_config_file(cmake/plexusConfig.cmake.in ${PROJECT_BINARY_DIR}/plexusConfig.cmake
  INSTALL_DESTINATION ${PLEXUS_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/plexusConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/plexusConfig.cmake ${PROJECT_BINARY_DIR}/plexusConfigVersion.cmake
  cmake/PlexusPlugin.cmake cmake/PlexusTeuchos.cmake DESTINATION ${PLEXUS_CMAKE_DIR})
