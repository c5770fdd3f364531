# Enables the CUDA backend (core/backends/cuda) when a CUDA toolkit with cuDNN and NCCL is
# present. MB_WITH_CUDA: AUTO (default) builds it when everything is found and says what is
# missing otherwise; ON/REQUIRE makes a missing piece an error (a build that silently turned
# CUDA off where the user asked for it would be worse than none); OFF builds CPU-only.
# cuDNN and NCCL may live outside the toolkit (e.g. Python wheels with only versioned names
# such as libcudnn.so.9): point -DMB_CUDNN_LIB=/path/libcudnn.so.9 -DMB_CUDNN_INCLUDE_DIR=...
# -DMB_NCCL_LIB=... -DMB_NCCL_INCLUDE_DIR=... (or -DMB_CUDA_HINTS="dir;dir") at them.
# Sets MB_CUDA_ENABLED.
set(MB_CUDA_ENABLED OFF)
set(MB_CUDA_ARCHITECTURES "90" CACHE STRING "CUDA architectures to build for (default: Hopper sm_90)")
set(MB_CUDA_HINTS "" CACHE STRING "Extra folders to search for cuDNN and NCCL (lib/ and include/ below them too)")
string(TOUPPER "${MB_WITH_CUDA}" mb_cuda_mode)
if(mb_cuda_mode STREQUAL "REQUIRE")
  set(mb_cuda_mode ON)
endif()
if(NOT mb_cuda_mode MATCHES "^(AUTO|ON|OFF|TRUE|FALSE|YES|NO|1|0)$")
  message(FATAL_ERROR "MB_WITH_CUDA='${MB_WITH_CUDA}': use AUTO, ON (or REQUIRE) or OFF")
endif()

# A missing piece: an error when CUDA was required, a note otherwise.
macro(mb_cuda_unavailable why)
  if(mb_cuda_mode MATCHES "^(ON|TRUE|YES|1)$")
    message(FATAL_ERROR "MB_WITH_CUDA=${MB_WITH_CUDA} but ${why}")
  endif()
  message(STATUS "CUDA backend not built: ${why}")
endmacro()

if(NOT mb_cuda_mode MATCHES "^(OFF|FALSE|NO|0)$")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    mb_cuda_unavailable("no CUDA compiler (nvcc) was found")
  else()
    # Debian 12's CMake 3.25.1 FindCUDAToolkit marks CUDA::nvToolsExt deprecated without
    # checking that the target exists, and CUDA 12.9+/13 ships no libnvToolsExt (only the
    # header-only nvtx3), so configure fails. Later CMake releases guard that line with
    # if(TARGET ...), and so does the hand-patched module on the development machines, which
    # is why it passed there. A placeholder target gives the line something to mark; nothing
    # here links it.
    if(NOT TARGET CUDA::nvToolsExt)
      add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
    endif()
    find_package(CUDAToolkit QUIET)
    set(mb_lib_hints ${MB_CUDA_HINTS} ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
    set(mb_inc_hints ${MB_CUDA_HINTS} ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
    # NAMES_PER_DIR: a hinted folder wins with whichever name it has (a wheel's lib/ holds only
    # libcudnn.so.9), instead of the plain name being looked for everywhere first.
    find_library(MB_CUDNN_LIB NAMES cudnn libcudnn.so.9 NAMES_PER_DIR HINTS ${mb_lib_hints} PATH_SUFFIXES lib lib64)
    find_library(MB_NCCL_LIB NAMES nccl libnccl.so.2 NAMES_PER_DIR HINTS ${mb_lib_hints} PATH_SUFFIXES lib lib64)
    find_path(MB_CUDNN_INCLUDE_DIR cudnn.h HINTS ${mb_inc_hints} PATH_SUFFIXES include)
    find_path(MB_NCCL_INCLUDE_DIR nccl.h HINTS ${mb_inc_hints} PATH_SUFFIXES include)
    set(mb_missing "")
    if(NOT CUDAToolkit_FOUND)
      list(APPEND mb_missing "the CUDA toolkit (FindCUDAToolkit)")
    endif()
    foreach(v MB_CUDNN_LIB MB_CUDNN_INCLUDE_DIR MB_NCCL_LIB MB_NCCL_INCLUDE_DIR)
      if(NOT ${v})
        list(APPEND mb_missing ${v})
      endif()
    endforeach()
    if(mb_missing)
      string(REPLACE ";" ", " mb_missing "${mb_missing}")
      mb_cuda_unavailable("nvcc was found but not: ${mb_missing} (see the hints in cmake/cuda.cmake)")
    else()
      set(CMAKE_CUDA_ARCHITECTURES ${MB_CUDA_ARCHITECTURES})
      enable_language(CUDA)
      set(MB_CUDA_ENABLED ON)
      message(STATUS "CUDA backend: CUDA ${CUDAToolkit_VERSION}, arch ${MB_CUDA_ARCHITECTURES}, "
                     "cuDNN ${MB_CUDNN_LIB}, NCCL ${MB_NCCL_LIB}")
    endif()
  endif()
endif()
