# HCWARM_SANITIZE: sanitizers for the compile and link of every target hcwarm
# builds (library, CLI, tests, benches). Kernels the JIT compiles at run time are
# built by the host compiler without them; that is expected. scripts/sanitize.sh uses it.
# HCWARM_FUZZ: tests/fuzz as libFuzzer binaries (clang), everything built with
# fuzzer coverage plus address,undefined. scripts/fuzz.sh uses it.
set(HCWARM_SANITIZE "" CACHE STRING "Sanitizers for every target: empty, address,undefined or thread")
set_property(CACHE HCWARM_SANITIZE PROPERTY STRINGS "" "address,undefined" "thread")
option(HCWARM_FUZZ "Build tests/fuzz as libFuzzer binaries (needs clang; adds address,undefined)" OFF)

set(hcwarm_sanitize "${HCWARM_SANITIZE}")
if(HCWARM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "HCWARM_FUZZ=ON needs clang (configure with -DCMAKE_CXX_COMPILER=clang++)")
  endif()
  if(hcwarm_sanitize STREQUAL "")
    set(hcwarm_sanitize "address,undefined")
  endif()
  # Coverage feedback in every object; -fsanitize=fuzzer (libFuzzer's main) only on the harnesses.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(NOT hcwarm_sanitize STREQUAL "")
  if(NOT hcwarm_sanitize MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
    message(FATAL_ERROR "HCWARM_SANITIZE=${hcwarm_sanitize}: use address,undefined or thread")
  endif()
  # Frame pointers give whole stacks in reports.
  add_compile_options(-fsanitize=${hcwarm_sanitize} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${hcwarm_sanitize})
  if(hcwarm_sanitize MATCHES "undefined")
    # Undefined behaviour stops the program, so a test that meets it fails instead of printing and passing.
    add_compile_options(-fno-sanitize-recover=undefined)
    add_link_options(-fno-sanitize-recover=undefined)
  endif()
  message(STATUS "hcwarm: sanitizers ${hcwarm_sanitize}")
endif()
