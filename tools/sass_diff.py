#!/usr/bin/env python3
"""Whether two trees of src/kernels compile to the same machine code, per kernel.

Compiles each instantiation below with nvcc for sm_90a from both trees, dumps the
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
# (name, launch bounds, call): the specializations of every split class and input
# kind the JIT builds, and the generic fatbin's forms (SPLIT_CLASS 0, HIDDEN 0).
PRE_CASES = [
    ("one_pass 7168 norm fast", "448, 1", "hcwarm_kernels::cuda::mhc_pre_one_pass<4, 7168, true, true>(p, &tmap)"),
    ("one_pass 4096 norm precise", "320, 1", "hcwarm_kernels::cuda::mhc_pre_one_pass<4, 4096, true, false>(p, &tmap)"),
    ("one_pass head 7168", "448, 1", "hcwarm_kernels::cuda::mhc_pre_one_pass<4, 7168, false, false, true>(p, &tmap)"),
    ("one_pass generic", "448, 1", "hcwarm_kernels::cuda::mhc_pre_one_pass<4, 0, true, true>(p, &tmap)"),
    ("partial 1 7168 residual", "256, 2", "hcwarm_kernels::cuda::mhc_pre_partial<1, 4, 7168, 0>(p)"),
    ("partial 5 4096 embed", "128, 3", "hcwarm_kernels::cuda::mhc_pre_partial<5, 4, 4096, 1>(p)"),
    ("partial 22 7168 post", "128, 3", "hcwarm_kernels::cuda::mhc_pre_partial<22, 4, 7168, 2>(p)"),
    ("partial generic post", "128, 3", "hcwarm_kernels::cuda::mhc_pre_partial<0, 4, 0, 2>(p)"),
    ("finish 1 7168 norm fast", "128, 8", "hcwarm_kernels::cuda::mhc_pre_finish<1, 4, 7168, true, true, 0>(p)"),
    ("finish 5 4096 embed precise", "128, 3", "hcwarm_kernels::cuda::mhc_pre_finish<5, 4, 4096, false, false, 1>(p)"),
    ("finish 22 7168 post", "128, 3", "hcwarm_kernels::cuda::mhc_pre_finish<22, 4, 7168, true, true, 2>(p)"),
    ("finish generic embed", "128, 3", "hcwarm_kernels::cuda::mhc_pre_finish<0, 4, 0, true, false, 1>(p)"),
]
HEAD_CASES = [("head cluster 7168 tpt2", 7168, 2), ("head cluster 4096 tpt1", 4096, 1)]


def head_threads_expr(tree, hidden):
    text = (tree / "common" / "mhc_head_params.hpp").read_text()
    typed = "head_threads(int hidden)" in text
    return f"hcwarm_mhc::head_threads({hidden})" if typed else f"HCWARM_MHC_HEAD_THREADS({hidden})"


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
    for name, bounds, call in PRE_CASES:
        src = ('#include "cuda/mhc_pre.cuh"\n#include "cuda/mhc_pre_one_pass.cuh"\n'
               f'extern "C" __global__ void __launch_bounds__({bounds}) k({PRE_ARGS}) {{ {call}; }}\n')
        cases.append((name, src, src))
    for name, hidden, tpt in HEAD_CASES:
        def head_src(tree):
            return ('#include "cuda/mhc_head.cuh"\n'
                    f'extern "C" __global__ void __cluster_dims__(8, 1, 1) '
                    f'__launch_bounds__({head_threads_expr(tree, hidden)}) '
                    f'k(hcwarm_mhc_head_params p) {{ hcwarm_head::mhc_head_cluster<4, {hidden}, {tpt}>(p); }}\n')
        cases.append((name, head_src(a.old), head_src(a.new)))
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
