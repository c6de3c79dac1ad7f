#include "mhc/hc_pre_host.hpp"

#include <vector>

#include "core/error.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::mhc {

namespace {

// Host tensors staged on `device` for one call from the host (kept alive until the call's end).
class Staging {
 public:
  explicit Staging(Device& device) : device_(device) {}
  template <class T>
  T* upload(const HostTensor<T>& t) {
    const size_t bytes = static_cast<size_t>(t.numel()) * sizeof(T);
    buffers_.emplace_back(device_, bytes);
    device_.copy_from_host(buffers_.back().get(), t.data(), bytes);
    return buffers_.back().as<T>();
  }
  template <class T>
  T* alloc(const HostTensor<T>& t) {
    buffers_.emplace_back(device_, static_cast<size_t>(t.numel()) * sizeof(T));
    return buffers_.back().as<T>();
  }
  template <class T>
  void download(HostTensor<T>& t, const T* src) {
    device_.copy_to_host(t.data(), src, static_cast<size_t>(t.numel()) * sizeof(T));
  }

 private:
  Device& device_;
  std::vector<DeviceBuffer> buffers_;
};

// The pre step's weights and outputs around `a` (its input already staged), run and copied back.
HcPreResult run_staged(HcPreOp& op, Device& device, Staging& st, HcPreArgs a, const HostTensor<float>& fn,
                       const HostTensor<float>& scale, const HostTensor<float>& base,
                       const HostTensor<bf16>* norm_weight) {
  const int64_t T = a.num_tokens;
  const int64_t hc = op.dims().hc_mult;
  const int64_t D = op.dims().hidden;
  HcPreResult out{HostTensor<bf16>({T, D}), HostTensor<float>({T, hc}), HostTensor<float>({T, hc, hc}),
                  norm_weight != nullptr};
  if (T == 0) return out;
  a.fn = st.upload(fn);
  a.scale = st.upload(scale);
  a.base = st.upload(base);
  a.norm_weight = norm_weight != nullptr ? st.upload(*norm_weight) : nullptr;
  a.y = st.alloc(out.y);
  a.post = st.alloc(out.post);
  a.comb = st.alloc(out.comb);
  op.run(a);
  device.synchronize();
  st.download(out.y, a.y);
  st.download(out.post, a.post);
  st.download(out.comb, a.comb);
  return out;
}

void check_op_dims(const HcPreOp& op, const Shape& shape, int64_t hc, int64_t d, const char* what) {
  HCWARM_CHECK_ARG(hc == op.dims().hc_mult && d == op.dims().hidden,
                   "{} {} does not match the op's hc_mult {} and hidden {}", what, shape_string(shape),
                   op.dims().hc_mult, op.dims().hidden);
}

}  // namespace

HcPreResult run_hc_pre_host(HcPreOp& op, Device& device, const HostTensor<bf16>& residual,
                            const HostTensor<float>& fn, const HostTensor<float>& scale,
                            const HostTensor<float>& base, const HostTensor<bf16>* norm_weight) {
  check_hc_pre_shapes(residual, fn, scale, base, norm_weight);
  check_op_dims(op, residual.shape(), residual.dim(1), residual.dim(2), "residual");
  Staging st(device);
  HcPreArgs a;
  a.num_tokens = residual.dim(0);
  if (a.num_tokens > 0) a.residual = st.upload(residual);
  return run_staged(op, device, st, a, fn, scale, base, norm_weight);
}

HcPreResult run_hc_pre_embed_host(HcPreOp& op, Device& device, const HostTensor<bf16>& embed,
                                  const HostTensor<float>& fn, const HostTensor<float>& scale,
                                  const HostTensor<float>& base, const HostTensor<bf16>* norm_weight) {
  check_hc_pre_embed_shapes(embed, op.dims().hc_mult, fn, scale, base, norm_weight);
  check_op_dims(op, embed.shape(), op.dims().hc_mult, embed.dim(1), "embed");
  Staging st(device);
  HcPreArgs a;
  a.num_tokens = embed.dim(0);
  a.input = HcPreInput::Embed;
  if (a.num_tokens > 0) a.residual = st.upload(embed);
  return run_staged(op, device, st, a, fn, scale, base, norm_weight);
}

HcPostPreResult run_hc_post_pre_host(HcPreOp& op, Device& device, const HostTensor<bf16>& x,
                                     const HostTensor<bf16>& residual, const HostTensor<float>& prev_post,
                                     const HostTensor<float>& prev_comb, const HostTensor<float>& fn,
                                     const HostTensor<float>& scale, const HostTensor<float>& base,
                                     const HostTensor<bf16>* norm_weight) {
  check_hc_post_pre_shapes(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight);
  check_op_dims(op, residual.shape(), residual.dim(1), residual.dim(2), "residual");
  Staging st(device);
  HostTensor<bf16> next(residual.shape());
  HcPreArgs a;
  a.num_tokens = residual.dim(0);
  a.input = HcPreInput::Post;
  if (a.num_tokens > 0) {
    a.x = st.upload(x);
    a.residual = st.upload(residual);
    a.prev_post = st.upload(prev_post);
    a.prev_comb = st.upload(prev_comb);
    a.new_residual = st.alloc(next);
  }
  HcPreResult pre = run_staged(op, device, st, a, fn, scale, base, norm_weight);
  if (a.num_tokens > 0) st.download(next, a.new_residual);
  return {std::move(next), std::move(pre)};
}

}  // namespace hcwarm::mhc
