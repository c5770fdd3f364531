# -DMB_SANITIZE=address,undefined (ASan + UBSan) or thread (TSan) for the C++ code, as used by
# scripts/sanitize.sh. UBSan findings abort (no recovery), so a finding fails its test.
# CUDA sources are left alone: nvcc does not take these flags, and no test here runs a GPU.
if(MB_SANITIZE)
  string(REPLACE "," ";" mb_sanitizers "${MB_SANITIZE}")
  foreach(s IN LISTS mb_sanitizers)
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "MB_SANITIZE: unknown sanitizer '${s}' (use address,undefined or thread)")
    endif()
  endforeach()
  if("thread" IN_LIST mb_sanitizers AND "address" IN_LIST mb_sanitizers)
    message(FATAL_ERROR "MB_SANITIZE: thread and address cannot be combined")
  endif()
  # -g1: line tables only. A report's stack names file and line, which is all it needs; full
  # debug info made every object twice the size and the sanitizer build ~10 % slower (CI).
  set(mb_san_flags -fsanitize=${MB_SANITIZE} -fno-omit-frame-pointer -g1)
  if("undefined" IN_LIST mb_sanitizers)
    list(APPEND mb_san_flags -fno-sanitize-recover=undefined)
  endif()
  foreach(f IN LISTS mb_san_flags)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${f}>)
  endforeach()
  add_link_options(-fsanitize=${MB_SANITIZE})
endif()
