# cmake -DIN=<file> -DOUT=<cpp> [-DFUNC=<name>] [-DHEADER=<include>] -P embed_binary.cmake
# Writes a .cpp defining hcwarm::cuda::FUNC() (default mhc_pre_generic_fatbin), declared
# in HEADER (default backends/cuda/mhc_pre_cuda.hpp), over IN's bytes.
if(NOT FUNC)
  set(FUNC mhc_pre_generic_fatbin)
endif()
if(NOT HEADER)
  set(HEADER backends/cuda/mhc_pre_cuda.hpp)
endif()
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR nbytes "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "// Generated from ${IN} by embed_binary.cmake. Do not edit.\n#include \"${HEADER}\"\nnamespace hcwarm::cuda {\nnamespace {\nalignas(64) const unsigned char kFatbin[] = {${bytes}};\n}\nstd::span<const std::byte> ${FUNC}() {\n  return {reinterpret_cast<const std::byte*>(kFatbin), ${nbytes}};\n}\n}  // namespace hcwarm::cuda\n")
