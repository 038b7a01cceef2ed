# Debian's Teuchos CMake config needs the Kokkos package and exports variables, not targets:
# wrap them once in the imported target plexus::teuchos.
find_package(Teuchos REQUIRED)
if(NOT TARGET plexus::teuchos)
  add_library(plexus::teuchos INTERFACE IMPORTED)
  set_target_properties(plexus::teuchos PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${Teuchos_INCLUDE_DIRS};${Teuchos_TPL_INCLUDE_DIRS}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${Teuchos_INCLUDE_DIRS};${Teuchos_TPL_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${Teuchos_LIBRARIES};${Teuchos_TPL_LIBRARIES}")
endif()
