# cmake -DIN=<file> -DOUT=<cpp> -P embed_binary.cmake
# Writes a .cpp defining hcwarm::cuda::mhc_pre_generic_fatbin() over IN's bytes.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR nbytes "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "// Generated from ${IN} by embed_binary.cmake. Do not edit.\n#include \"backends/cuda/mhc_pre_cuda.hpp\"\nnamespace hcwarm::cuda {\nnamespace {\nalignas(64) const unsigned char kFatbin[] = {${bytes}};\n}\nstd::span<const std::byte> mhc_pre_generic_fatbin() {\n  return {reinterpret_cast<const std::byte*>(kFatbin), ${nbytes}};\n}\n}  // namespace hcwarm::cuda\n")
