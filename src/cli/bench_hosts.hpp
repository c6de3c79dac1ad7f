#pragma once
// Simulated hosts for `hcwarm bench cold-start --hosts`: each host gets an equal
// slice of this machine's CPUs, as hosts of a job each have their own, and the
// one-process baseline gets one host's slice, so that the job compares with one
// process on one host as it would across real hosts.
#include <string>
#include <vector>

namespace hcwarm::cli {

// The CPUs this process may run on, split into `hosts` contiguous slices
// (with fewer CPUs than hosts, slices share CPUs round robin).
std::vector<std::vector<int>> cpu_slices(int hosts);

// "0,1,5": a slice as the children's --child-cpus takes it.
std::string cpu_list(const std::vector<int>& cpus);

// Restricts this process (and what it starts later) to `list` (cpu_list's form).
// InvalidArgument naming the list when it is malformed or names no allowed CPU.
void pin_to_cpus(const std::string& list);

}  // namespace hcwarm::cli
