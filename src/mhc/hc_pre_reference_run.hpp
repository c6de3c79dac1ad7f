#pragma once
// The Reference backend of HcPreOp: the double-precision oracle (reference.hpp)
// on any Device, its inputs copied to the host and its outputs back.
#include "core/device.hpp"
#include "mhc/mhc_types.hpp"

namespace hcwarm::mhc {

// args' pointers live on `device`; every input kind (the embedding broadcast,
// the fused boundary's post step first). Synchronous.
void run_hc_pre_reference_on(Device& device, MhcDims dims, const MhcConstants& constants, const HcPreArgs& args);

}  // namespace hcwarm::mhc
