# Debian 12's xsimd 8.1 exports INTERFACE_LINK_LIBRARIES "xtl" although xtl is neither a
# dependency nor installed, so anything linking `xsimd` fails at link time with -lxtl.
# Used both by tad's CMakeLists.txt and by the installed tadConfig.cmake.
if(TARGET xsimd AND NOT TARGET xtl)
  get_target_property(_tad_xsimd_libs xsimd INTERFACE_LINK_LIBRARIES)
  if(_tad_xsimd_libs STREQUAL "xtl")
    set_property(TARGET xsimd PROPERTY INTERFACE_LINK_LIBRARIES "")
  endif()
  unset(_tad_xsimd_libs)
endif()
