#!/usr/bin/env python3
"""Whether two trees of src/kernels compile to the same machine code, per kernel.

Compiles each instantiation below with nvcc for sm_90a from both trees (a tree
whose kernels are __global__ templates: their explicit instantiation; an older
one: the extern "C" wrapper the host code generated, with the same template
arguments and launch bounds), dumps the
SASS with cuobjdump and compares every instruction with its encoding and
scheduling word: SAME means the GPU runs identical code, so a change that only
moves or renames code needs no new GPU run. DIFF writes both listings to --out.
No GPU needed. cuobjdump and nvdisasm come from the toolkit or from NVIDIA's
PyPI wheels (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm: give --bin their
nvidia/cu13/bin).

  tools/sass_diff.py OLD_KERNELS_DIR NEW_KERNELS_DIR [--bin DIR] [--out DIR]
  e.g. git archive HEAD~1 src/kernels | tar x -C /tmp/old
       tools/sass_diff.py /tmp/old/src/kernels src/kernels --bin /tmp/cu13/nvidia/cu13/bin
Exit status: 0 all SAME, 1 some DIFF or a compile failure, 2 bad usage.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

PRE_ARGS = "hcwarm_mhc_pre_params p, const __grid_constant__ hcwarm_tensor_map tmap"
PRE_INCLUDES = '#include "cuda/mhc_pre.cuh"\n#include "cuda/mhc_pre_one_pass.cuh"\n'
NS = "hcwarm_kernels::cuda::"
# (name, launch bounds, the wrapper's call (trees before the __global__ templates),
#  the __global__ template's explicit instantiation with the same arguments and bounds).
PRE_CASES = [
    ("one_pass 7168 norm fast", "448, 1", "mhc_pre_one_pass<4, 7168, true, true>(p, &tmap)",
     "mhc_pre_one_pass_kernel<4, 7168, true, true, false, 448>"),
    ("one_pass 4096 norm precise", "320, 1", "mhc_pre_one_pass<4, 4096, true, false>(p, &tmap)",
     "mhc_pre_one_pass_kernel<4, 4096, true, false, false, 320>"),
    ("one_pass head 7168", "448, 1", "mhc_pre_one_pass<4, 7168, false, false, true>(p, &tmap)",
     "mhc_pre_one_pass_kernel<4, 7168, false, false, true, 448>"),
    ("one_pass generic", "448, 1", "mhc_pre_one_pass<4, 0, true, true>(p, &tmap)",
     "mhc_pre_one_pass_kernel<4, 0, true, true, false, 448>"),
    ("partial 1 7168 residual", "256, 2", "mhc_pre_partial<1, 4, 7168, 0>(p)", "mhc_pre_partial_kernel<1, 4, 7168, 0, 256, 2>"),
    ("partial 5 4096 embed", "128, 3", "mhc_pre_partial<5, 4, 4096, 1>(p)", "mhc_pre_partial_kernel<5, 4, 4096, 1, 128, 3>"),
    ("partial 22 7168 post", "128, 3", "mhc_pre_partial<22, 4, 7168, 2>(p)", "mhc_pre_partial_kernel<22, 4, 7168, 2, 128, 3>"),
    ("partial generic post", "128, 3", "mhc_pre_partial<0, 4, 0, 2>(p)", "mhc_pre_partial_kernel<0, 4, 0, 2, 128, 3>"),
    ("finish 1 7168 norm fast", "128, 8", "mhc_pre_finish<1, 4, 7168, true, true, 0>(p)",
     "mhc_pre_finish_kernel<1, 4, 7168, true, true, 0, 8>"),
    ("finish 5 4096 embed precise", "128, 3", "mhc_pre_finish<5, 4, 4096, false, false, 1>(p)",
     "mhc_pre_finish_kernel<5, 4, 4096, false, false, 1, 3>"),
    ("finish 22 7168 post", "128, 3", "mhc_pre_finish<22, 4, 7168, true, true, 2>(p)",
     "mhc_pre_finish_kernel<22, 4, 7168, true, true, 2, 3>"),
    ("finish generic embed", "128, 3", "mhc_pre_finish<0, 4, 0, true, false, 1>(p)",
     "mhc_pre_finish_kernel<0, 4, 0, true, false, 1, 3>"),
]
HEAD_CASES = [("head cluster 7168 tpt2", 7168, 2), ("head cluster 4096 tpt1", 4096, 1)]
POST_ARGS = ("long long t, const unsigned short* out, const unsigned short* r_in, const float* post, "
             "const float* comb, unsigned short* r_out")
POST_DYN_ARGS = POST_ARGS.replace("long long t,", "long long t, int hidden,")
GEMM_GATE_UP_ARGS = ("int t, int k_per_split, const unsigned short* x, const unsigned short* gate, "
                     "const unsigned short* up, float* c32")
GEMM_ACT_ARGS = "long long count, const float* c32, unsigned short* h"
GEMM_DOWN_ARGS = "int t, const unsigned short* h, const unsigned short* down, unsigned short* out"
# (name, include, wrapper bounds, wrapper params, wrapper call, explicit instantiation's declarator).
OTHER_CASES = [
    ("post 7168", "cuda/mhc_post.cuh", "256", POST_ARGS, "hcwarm_post::mhc_post<4, 7168>(t, out, r_in, post, comb, r_out)",
     f"hcwarm_post::mhc_post_kernel<4, 7168, 256>({POST_ARGS})"),
    ("post generic", "cuda/mhc_post.cuh", "256", POST_DYN_ARGS,
     "hcwarm_post::mhc_post_dyn<4>(t, hidden, out, r_in, post, comb, r_out)",
     f"hcwarm_post::mhc_post_dyn_kernel<4, 256>({POST_DYN_ARGS})"),
    ("gemm gate_up 7168x512", "standin/gemm_nt.cuh", "hcwarm_gemm::kThreads", GEMM_GATE_UP_ARGS,
     "hcwarm_gemm::gemm_nt_gate_up_splitk(t, 512, 7168, k_per_split, x, gate, up, c32)",
     f"hcwarm_gemm::swiglu_gate_up_kernel<7168, 512>({GEMM_GATE_UP_ARGS})"),
    ("gemm act 512", "standin/gemm_nt.cuh", "hcwarm_gemm::kThreads", GEMM_ACT_ARGS,
     "hcwarm_gemm::swiglu_activation(count, 512, c32, h)", f"hcwarm_gemm::swiglu_act_kernel<512>({GEMM_ACT_ARGS})"),
    ("gemm down 7168x512", "standin/gemm_nt.cuh", "hcwarm_gemm::kThreads", GEMM_DOWN_ARGS,
     "hcwarm_gemm::gemm_nt(t, 7168, 512, h, down, out)", f"hcwarm_gemm::swiglu_down_kernel<7168, 512>({GEMM_DOWN_ARGS})"),
]


def has_global_templates(tree):
    """Whether the tree's kernels are __global__ templates (instantiated by name), not wrapped by generated code."""
    return "mhc_pre_partial_kernel" in (tree / "cuda" / "mhc_pre_partial.cuh").read_text()


def pre_source(tree, bounds, call, kernel):
    if has_global_templates(tree):
        args = "hcwarm_mhc_pre_params, const __grid_constant__ hcwarm_tensor_map" if "one_pass" in kernel \
            else "hcwarm_mhc_pre_params"
        return PRE_INCLUDES + f"template __global__ void {NS}{kernel}({args});\n"
    return PRE_INCLUDES + f'extern "C" __global__ void __launch_bounds__({bounds}) k({PRE_ARGS}) {{ {NS}{call}; }}\n'


def head_source(tree, hidden, tpt):
    typed = "head_threads(int hidden)" in (tree / "common" / "mhc_head_params.hpp").read_text()
    shape = [f"hcwarm_mhc::head_{f}({hidden})" if typed else f"HCWARM_MHC_HEAD_{f.upper()}({hidden})"
             for f in ("cluster", "threads", "blocks_per_sm")]
    if has_global_templates(tree):
        return ('#include "cuda/mhc_head.cuh"\ntemplate __global__ void hcwarm_head::mhc_head_cluster_kernel'
                f'<4, {hidden}, {tpt}, {", ".join(shape)}>(hcwarm_mhc_head_params);\n')
    return ('#include "cuda/mhc_head.cuh"\n'
            f'extern "C" __global__ void __cluster_dims__({shape[0]}, 1, 1) __launch_bounds__({shape[1]}, {shape[2]}) '
            f'k(hcwarm_mhc_head_params p) {{ hcwarm_head::mhc_head_cluster<4, {hidden}, {tpt}>(p); }}\n')


def other_source(tree, include, bounds, params, call, declarator):
    if has_global_templates(tree):
        return f'#include "{include}"\ntemplate __global__ void {declarator};\n'
    return f'#include "{include}"\nextern "C" __global__ void __launch_bounds__({bounds}) k({params}) {{ {call}; }}\n'


def sass(tree, source, nvcc, cuobjdump, env):
    with tempfile.TemporaryDirectory() as t:
        (pathlib.Path(t) / "k.cu").write_text(source)
        r = subprocess.run([nvcc, "-std=c++17", "-arch=sm_90a", "-cubin", f"-I{tree}", "-o", f"{t}/k.cubin",
                            f"{t}/k.cu"], capture_output=True, text=True)
        if r.returncode:
            return None, r.stderr[-3000:]
        r = subprocess.run([cuobjdump, "-sass", f"{t}/k.cubin"], capture_output=True, text=True, env=env)
        if r.returncode:
            return None, r.stderr[-3000:]
    lines = [l.strip() for l in r.stdout.splitlines()
             if re.match(r"\s*/\*[0-9a-f]{4,}\*/", l) or re.match(r"\s+/\* 0x[0-9a-f]{16} \*/", l)]
    return ("\n".join(lines) + "\n", None) if lines else (None, "no SASS in cuobjdump's output")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="\n".join(__doc__.splitlines()[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old", type=pathlib.Path, help="the first tree's src/kernels")
    ap.add_argument("new", type=pathlib.Path, help="the second tree's src/kernels")
    ap.add_argument("--bin", default="", help="directory holding cuobjdump and nvdisasm (default: PATH, /usr/local/cuda/bin)")
    ap.add_argument("--nvcc", default=os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc"))
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path("sass-diff"),
                    help="where the two listings of a DIFF go (default: ./sass-diff)")
    a = ap.parse_args()
    for tree in (a.old, a.new):
        if not (tree / "common" / "mhc_params.hpp").is_file():
            ap.error(f"{tree} is not a kernels tree (no common/mhc_params.hpp)")
    path = os.pathsep.join(p for p in (a.bin, os.environ.get("PATH", ""), "/usr/local/cuda/bin") if p)
    cuobjdump = shutil.which("cuobjdump", path=path)
    if not cuobjdump or not shutil.which("nvdisasm", path=path):
        ap.error("cuobjdump and nvdisasm not found: install the toolkit's or NVIDIA's wheels and pass --bin")
    if not os.access(a.nvcc, os.X_OK):
        ap.error(f"no nvcc at {a.nvcc} (set --nvcc or NVCC)")
    env = dict(os.environ, PATH=path)
    cases = []
    for name, bounds, call, kernel in PRE_CASES:
        cases.append((name, pre_source(a.old, bounds, call, kernel), pre_source(a.new, bounds, call, kernel)))
    for name, hidden, tpt in HEAD_CASES:
        cases.append((name, head_source(a.old, hidden, tpt), head_source(a.new, hidden, tpt)))
    for name, *rest in OTHER_CASES:
        cases.append((name, other_source(a.old, *rest), other_source(a.new, *rest)))
    failed = 0
    for name, src_old, src_new in cases:
        (old, err_old), (new, err_new) = sass(a.old, src_old, a.nvcc, cuobjdump, env), sass(a.new, src_new, a.nvcc, cuobjdump, env)
        if err_old or err_new:
            failed += 1
            print(f"FAIL  {name}: {(err_old or err_new).strip()}")
            continue
        if old == new:
            print(f"SAME  {name}: {old.count(chr(10)) // 2} instructions")
            continue
        failed += 1
        a.out.mkdir(parents=True, exist_ok=True)
        stem = name.replace(" ", "_")
        (a.out / f"{stem}.old.sass").write_text(old)
        (a.out / f"{stem}.new.sass").write_text(new)
        print(f"DIFF  {name}: {old.count(chr(10)) // 2} / {new.count(chr(10)) // 2} instructions "
              f"({a.out}/{stem}.{{old,new}}.sass)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
