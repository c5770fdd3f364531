# Run-time library search paths. CMake links a program that has install() rules with its
# build-tree RUNPATH padded by a trailing ':' (room to rewrite it on install), and an empty
# RUNPATH entry is the current directory: a library planted in the working directory would be
# loaded. Linking once with the install-time path instead (the folders of the shared libraries
# the program links outside the system's, e.g. /usr/local/cuda/lib) needs no padding, and the
# installed program finds the same libraries. tests/runpath_check.sh checks every binary.
set(CMAKE_BUILD_WITH_INSTALL_RPATH ON)
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
