#!/usr/bin/env python3
"""NVRTC compile times of the one-pass bucket's kernels (hc_pre, hc 4, fused
norm, fast finish, residual input), each as the library's part declares it,
in one process: the first compile and the best of the repeats after it, with
NVRTC's own phase times; then the three parts at once in three threads, as
the library compiles the bucket.
  bench/experiments/nvrtc_time.py [--hidden 7168] [--reps 3] [--without ROLE] [-- NVRTC options...]
--without mma|y|comb|signal compiles the one-pass kernel with that warp role's
body left out (a patched copy of cuda/mhc_pre_one_pass.cuh first on the include
path): the role's share of the compile time; such a kernel does not run.
Needs only the CUDA toolkit's libnvrtc (no GPU)."""
import argparse
import ctypes
import os
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARTS = {
    "one_pass": """#include "cuda/mhc_pre_one_pass.cuh"
extern "C" __global__ void __launch_bounds__(hcwarm_mhc::one_pass_threads({h}), 1)
hcwarm_mhc_pre_one_pass(hcwarm_mhc_pre_params p, const __grid_constant__ hcwarm_tensor_map tmap) {{
  hcwarm_kernels::cuda::mhc_pre_one_pass<4, {h}, true, true>(p, &tmap);
}}
""",
    "partial": """#include "cuda/mhc_pre.cuh"
extern "C" __global__ void __launch_bounds__(256, 2) hcwarm_mhc_pre_partial(hcwarm_mhc_pre_params p) {{
  hcwarm_kernels::cuda::mhc_pre_partial<1, 4, {h}, hcwarm_mhc::kInputResidual>(p);
}}
""",
    "finish": """#include "cuda/mhc_pre.cuh"
extern "C" __global__ void __launch_bounds__(128, 8) hcwarm_mhc_pre_finish(hcwarm_mhc_pre_params p) {{
  hcwarm_kernels::cuda::mhc_pre_finish<1, 4, {h}, true, true, hcwarm_mhc::kInputResidual>(p);
}}
""",
}


# The line that opens each warp role's branch in cuda/mhc_pre_one_pass.cuh.
ROLE_BRANCH = {
    "mma": "  if (warp < OnePassWarps::kFirstY) {",
    "signal": "  } else if (warp == roles.signal()) {",
    "y": "  } else if (warp < c0) {",
}


def strip_role(include_dir, role):
    """Writes cuda/mhc_pre_one_pass.cuh into include_dir with `role`'s branch made dead code."""
    src = os.path.join(ROOT, "src", "kernels", "cuda", "mhc_pre_one_pass.cuh")
    text = open(src).read()
    if role == "comb":  # the last branch
        old = "  } else {\n    // ---- comb:"
        new = "  } else if (false) {\n    // ---- comb:"
    else:
        old = ROLE_BRANCH[role]
        new = old.replace(") {", " && false) {", 1)
    if text.count(old) != 1:
        raise SystemExit(f"--without {role}: the branch line was not found once in {src}")
    os.makedirs(os.path.join(include_dir, "cuda"), exist_ok=True)
    with open(os.path.join(include_dir, "cuda", "mhc_pre_one_pass.cuh"), "w") as f:
        f.write(text.replace(old, new))


def compile_once(lib, src, opts):
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"part.cu", 0, None, None) != 0:
        raise SystemExit("nvrtcCreateProgram failed")
    t = time.perf_counter()
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    dt = time.perf_counter() - t
    if rc != 0:
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, buf)
        raise SystemExit("NVRTC failed:\n" + buf.value.decode())
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, default=7168)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cuda", default="/usr/local/cuda")
    ap.add_argument("--without", choices=["mma", "y", "comb", "signal"],
                    help="the one-pass kernel only, with this warp role's body left out")
    ap.add_argument("options", nargs="*", help="more NVRTC options (after --)")
    a = ap.parse_args()
    lib = ctypes.CDLL(os.path.join(a.cuda, "lib64", "libnvrtc.so"))
    base = ["--gpu-architecture=sm_90a", "-std=c++20", "--minimal"]
    base += a.options
    enc = lambda opts: [o.encode() for o in opts]
    with tempfile.TemporaryDirectory() as tmp:
        parts = PARTS
        if a.without:
            strip_role(os.path.join(tmp, "include"), a.without)
            base.insert(0, "-I" + os.path.join(tmp, "include"))
            parts = {"one_pass": PARTS["one_pass"]}
        base.append("-I" + os.path.join(ROOT, "src", "kernels"))
        for name, text in parts.items():
            src = text.format(h=a.hidden).encode()
            times = [compile_once(lib, src, enc(base)) for _ in range(a.reps + 1)]
            phases = os.path.join(tmp, name + ".csv")
            compile_once(lib, src, enc(base + ["--time=" + phases]))
            with open(phases) as f:
                ms = ", ".join(f"{r[1].strip()} {r[2].strip()} ms" for r in (l.split(",") for l in f.readlines()[1:]))
            print(f"{name:9s} hidden {a.hidden}: first {times[0]:.3f} s, best of {a.reps} after it "
                  f"{min(times[1:]):.3f} s ({ms})")
        if a.without:
            return
        # The bucket: its parts at once, one thread each (ctypes releases the GIL).
        walls = []
        for _ in range(a.reps):
            out = {}
            ths = [threading.Thread(target=lambda n=n, t=t: out.__setitem__(
                n, compile_once(lib, t.format(h=a.hidden).encode(), enc(base)))) for n, t in PARTS.items()]
            t0 = time.perf_counter()
            for th in ths:
                th.start()
            for th in ths:
                th.join()
            walls.append(time.perf_counter() - t0)
        print(f"bucket (3 parts in 3 threads, {os.cpu_count()} cores): best of {a.reps} {min(walls):.3f} s, "
              f"worst {max(walls):.3f} s")


if __name__ == "__main__":
    main()
