// The one source of the precompiled-header hosts (cmake/PlexusPrecompile.cmake): they compile
// their headers and nothing of their own.
