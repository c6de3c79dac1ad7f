#pragma once
// Kernel families the model runner warms at start-up: each names the JIT keys
// it will ask for while serving, as computed by its own dispatch code.
#include <functional>
#include <string>
#include <vector>

#include "jit/kernel_spec.hpp"

namespace hcwarm::runtime {

class KernelRegistry {
 public:
  using Planner = std::function<std::vector<jit::KernelSpec>()>;

  // mhc_prewarm: the family is part of the mHC prewarm (off with --no-prewarm).
  void add(std::string family, Planner planner, bool mhc_prewarm = false) {
    families_.push_back(Family{std::move(family), std::move(planner), mhc_prewarm});
  }

  // Every planned key, family by family; the mHC families only when include_mhc.
  std::vector<jit::KernelSpec> planned(bool include_mhc) const {
    std::vector<jit::KernelSpec> out;
    for (const Family& f : families_) {
      if (f.mhc_prewarm && !include_mhc) continue;
      for (auto& s : f.planner()) out.push_back(std::move(s));
    }
    return out;
  }

  // Drops a family from the plan (tests: a warmup that misses one); false if absent.
  bool remove(const std::string& family) {
    const auto n = families_.size();
    std::erase_if(families_, [&](const Family& f) { return f.name == family; });
    return families_.size() != n;
  }

  std::vector<std::string> families() const {
    std::vector<std::string> names;
    for (const Family& f : families_) names.push_back(f.name);
    return names;
  }

 private:
  struct Family {
    std::string name;
    Planner planner;
    bool mhc_prewarm;
  };
  std::vector<Family> families_;
};

}  // namespace hcwarm::runtime
