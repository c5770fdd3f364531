# mb_precompile(TARGET core|cli|ui): one precompiled header per large target, of the external
# headers most of its files include. Measured per file on the 2-vCPU EPYC (GCC 12): <QtWidgets>
# 9.6 s, <QtCharts> 10 s, nlohmann/json 3.3 s, spdlog 2.2 s; the window's 56 files spent 7.3 s
# each on average, mostly in Qt's headers. Built in both of CI's builds (Release and the
# sanitizer build), that was minutes. Project headers stay out: editing one would rebuild the
# header of every target. -Winvalid-pch (tests/CMakeLists.txt) says when GCC ignores one.
set(mb_pch_core <algorithm> <chrono> <cmath> <cstdint> <filesystem> <functional> <map> <memory>
                <optional> <span> <string> <string_view> <thread> <vector>
                <fmt/format.h> <spdlog/spdlog.h> <nlohmann/json.hpp>)
set(mb_pch_cli ${mb_pch_core} <CLI/CLI.hpp>)
set(mb_pch_ui ${mb_pch_core} <QtWidgets> <QtCharts>)

function(mb_precompile target kind)
  target_precompile_headers(${target} PRIVATE ${mb_pch_${kind}})   # C++ only: CMake has none for CUDA
  # Files built with their own floating-point flags (-ffp-contract=off: bit-exact arithmetic)
  # compile without it, so that nothing of the header's compilation state reaches them.
  get_target_property(srcs ${target} SOURCES)
  foreach(src IN LISTS srcs)
    get_source_file_property(opts ${src} COMPILE_OPTIONS)
    if(opts MATCHES "ffp-contract")
      set_source_files_properties(${src} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()
