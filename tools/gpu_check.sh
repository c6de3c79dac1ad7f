#!/usr/bin/env bash
# Builds hcwarm from source on a GPU host and checks it there: the C++ GPU
# tests, the Python package's tests (PyTorch + CUDA), the engine example and,
# with STEPS including "bench", the C++ and Python benchmarks. Results go to
# $OUT (default /tmp/hcwarm-gpu). The host needs CMake, Ninja, a C++20 compiler,
# the CUDA toolkit, a Python with PyTorch and nanobind; SYSROOT may point at an
# unpacked tree of Debian's -dev packages (spdlog, fmt, nlohmann-json, CLI11,
# GoogleTest, OpenSSL) for hosts without them.
#   STEPS="build tests engine bench" SYSROOT=.sysroot tools/gpu_check.sh   (tests = ctest + pytest)
# GPU_TESTS (a ctest -R regex) and PYTEST_ARGS ("-m gpu python/tests") narrow the tests step to a subset.
# GPU_TEST_JOBS (default 6) runs that many C++ GPU tests at once: each is a process of its own whose
# in-memory JIT compiles every kernel it runs, so the suite is mostly NVRTC on the host's cores
# (an H100's host of 16 cores: about 320 s one at a time; 62-75 s with 6 while the Python suite
# ran beside them, 2026-12-06); no GPU test times anything. GPU_TEST_JOBS=1 runs them one at a time.
# BUILD_TARGETS limits the build to what the chosen steps need, e.g. "hcwarm_tests_gpu hcwarm_python"
# for ctest -L gpu, pytest and every bench step (the CPU-only test binaries are most of a full build).
# engine runs examples/torch_engine/engine.py on both models and through both engines' adapters.
# Other steps: calls (bench_ops.py --part calls: each op's first, host, eager and graph cost), check (warm --check, cold then a restart), family (bench op --op all, FAMILY_TOKENS),
# head (bench op --op head: the dispatch, both kernels forced and hc_pre, HEAD_TOKENS),
# buckets (bench op --buckets), serve (bench serve), coldstart (bench cold-start, COLD_PROCESSES=8,
# COLD_REPEAT=5), hosts (bench cold-start --hosts 2 and bench/python/group_prewarm.py: kernels exchanged
# between 2 simulated hosts of 2 ranks), multigpu (scripts/multi_gpu_check.py, RANKS=2),
# ncu (Nsight Compute on hc_pre's kernels at each of NCU_HIDDEN x NCU_TOKENS, clocks as they run; NCU_OP=pre-embed
# profiles the first layer's pre from the embedding instead:
# throughput against peak, memory workload and warp state, then DRAM bytes and the sampled stall
# reasons; two CSVs each under $OUT/ncu/, docs/BENCHMARKS.md "What bounds hc_pre").
set -u
cd "$(dirname "$0")/.."
STEPS=${STEPS:-build tests engine}
OUT=${OUT:-/tmp/hcwarm-gpu}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1
if [ -n "${SYSROOT:-}" ]; then
  SYSROOT=$(cd "$SYSROOT" && pwd)
  export CMAKE_PREFIX_PATH="$SYSROOT/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$SYSROOT/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# The package from the build tree (pip install . builds the same module; here one build serves both).
PKG=build/pkg
export PYTHONPATH="$PWD/$PKG" HCWARM_CACHE_DIR=${HCWARM_CACHE_DIR:-/tmp/hcwarm-cache}
log() { echo "== $* ($(date -u +%H:%M:%S))"; }

case " $STEPS " in *" build "*)
  log build
  { date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv; nproc
    "$PY" -c "import torch, nanobind; print('torch', torch.__version__, 'nanobind', nanobind.__version__)"; } \
    >"$OUT/build.log" 2>&1
  cat "$OUT/build.log"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHCWARM_BUILD_PYTHON=ON -DHCWARM_BUILD_BENCH=OFF \
    -DPython_EXECUTABLE="$(command -v "$PY")" >>"$OUT/build.log" 2>&1 &&
    cmake --build build -j "${BUILD_JOBS:-$(nproc)}" ${BUILD_TARGETS:+--target $BUILD_TARGETS} >>"$OUT/build.log" 2>&1 ||
    { tail -40 "$OUT/build.log"; exit 1; }
  # The Python package, where the build made its extension (BUILD_TARGETS may leave hcwarm_python out).
  if compgen -G "build/python/_core*.so" >/dev/null; then
    rm -rf "$PKG" && mkdir -p "$PKG" && cp -r python/hcwarm "$PKG/" && cp build/python/_core*.so "$PKG/hcwarm/"
  fi
  # The C++ PyTorch operators, where this Python has PyTorch (the package falls back to its own without them).
  cp build/python/libhcwarm_torch_ops.so build/python/libhcwarm_torch_ops.txt "$PKG/hcwarm/" 2>/dev/null
  log built ;;
esac
case " $STEPS " in *" tests "*|*" ctest "*)
  log "C++ gpu tests"
  # GPU_TESTS: a ctest -R regex for a subset, e.g. "HcPreEmbedCuda|TieredCuda" (the whole label takes minutes).
  timeout 600 ctest --test-dir build -L gpu -j "${GPU_TEST_JOBS:-6}" ${GPU_TESTS:+-R "$GPU_TESTS"} --output-on-failure \
    >"$OUT/ctest_gpu.txt" 2>&1
  echo "ctest gpu rc=$?"; tail -4 "$OUT/ctest_gpu.txt" ;;
esac
case " $STEPS " in *" tests "*|*" pytest "*)
  log "python tests"
  rm -f "$OUT/numerics.jsonl"
  # PYTEST_ARGS: what pytest runs, e.g. "-m gpu python/tests" (only the tests that need the GPU).
  HCWARM_TEST_REPORT="$OUT/numerics.jsonl" timeout 400 "$PY" -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-python/tests} \
    >"$OUT/pytest.txt" 2>&1
  echo "pytest rc=$?"; grep -E "^E  |^FAILED|passed|failed" "$OUT/pytest.txt" | head -40 ;;
esac
case " $STEPS " in *" engine "*)
  log engine
  timeout 200 "$PY" examples/torch_engine/engine.py --json "$OUT/engine_flash.json" >"$OUT/engine.txt" 2>&1
  echo "engine flash rc=$?"
  timeout 200 "$PY" examples/torch_engine/engine.py --model dsv4-pro --check-capture-error \
    --json "$OUT/engine_pro.json" >>"$OUT/engine.txt" 2>&1
  echo "engine pro rc=$?"
  for via in sglang vllm; do  # the same model through each engine's adapters (hcwarm.integrations)
    timeout 200 "$PY" examples/torch_engine/engine.py --via "$via" --json "$OUT/engine_$via.json" >>"$OUT/engine.txt" 2>&1
    echo "engine via $via rc=$?"
  done
  tail -40 "$OUT/engine.txt" ;;
esac
case " $STEPS " in *" check "*)
  log "warm --check"
  for m in dsv4-flash dsv4-pro; do
    timeout 120 build/src/hcwarm warm --check --backend cuda --model "$m" --chunked-prefill-size 16384 \
      --cache-dir "$OUT/check-cache" >"$OUT/check_$m.txt" 2>&1
    echo "warm --check $m rc=$?"; tail -8 "$OUT/check_$m.txt"
  done
  # A restart on the now populated cache: nothing compiles.
  timeout 120 build/src/hcwarm warm --check --backend cuda --model dsv4-pro --chunked-prefill-size 16384 \
    --cache-dir "$OUT/check-cache" >"$OUT/check_restart.txt" 2>&1
  echo "warm --check restart rc=$?"; tail -8 "$OUT/check_restart.txt" ;;
esac
case " $STEPS " in *" serve "*)
  log "bench serve"
  rm -rf /tmp/hcwarm-serve
  timeout 400 build/src/hcwarm bench serve --backend cuda --max-requests "${SERVE_REQUESTS:-400}" --out /tmp/hcwarm-serve \
    >"$OUT/bench_serve.txt" 2>&1
  echo "bench serve rc=$?"; cp /tmp/hcwarm-serve/serve.json "$OUT/bench_serve.json" 2>/dev/null
  grep -v "^\[" "$OUT/bench_serve.txt" | tail -30 ;;
esac
case " $STEPS " in *" coldstart "*)
  log "bench cold-start"
  rm -rf /tmp/hcwarm-cold
  timeout 300 build/src/hcwarm bench cold-start --backend cuda --model dsv4-pro --chunked-prefill-size 16384 \
    --processes "${COLD_PROCESSES:-8}" --repeat "${COLD_REPEAT:-5}" --cache-dir /tmp/hcwarm-cold \
    --out "$OUT/cold_start.json" >"$OUT/cold_start.txt" 2>&1
  echo "bench cold-start rc=$?"; tail -12 "$OUT/cold_start.txt" ;;
esac
case " $STEPS " in *" hosts "*)
  log "bench cold-start --hosts and group_prewarm.py (2 simulated hosts of 2 ranks on the one GPU)"
  rm -rf /tmp/hcwarm-hosts
  timeout 300 build/src/hcwarm bench cold-start --hosts 2 --processes 2 --backend cuda --model dsv4-pro \
    --chunked-prefill-size 16384 --repeat 3 --cache-dir /tmp/hcwarm-hosts \
    --out "$OUT/cold_start_hosts.json" >"$OUT/cold_start_hosts.txt" 2>&1
  echo "bench cold-start --hosts rc=$?"; tail -8 "$OUT/cold_start_hosts.txt"
  PYTHONPATH=$PKG timeout 300 "$PY" bench/python/group_prewarm.py --device cuda --model dsv4-pro \
    --chunked-prefill-size 16384 --json "$OUT/group_prewarm.json" >"$OUT/group_prewarm.txt" 2>&1
  echo "group_prewarm rc=$?"; tail -20 "$OUT/group_prewarm.txt" ;;
esac
case " $STEPS " in *" multigpu "*)
  log "multi_gpu_check"
  timeout 300 "$PY" scripts/multi_gpu_check.py --ranks "${RANKS:-2}" --model dsv4-pro --json-out "$OUT/multi_gpu.json" \
    >"$OUT/multi_gpu.txt" 2>&1
  echo "multi_gpu_check rc=$?"; tail -25 "$OUT/multi_gpu.txt" ;;
esac
case " $STEPS " in *" bench "*|*" benchop "*)
  log "bench op"
  timeout 300 build/src/hcwarm bench op --backend cuda --min-seconds 0.1 --json-out "$OUT/bench_op.json" \
    >"$OUT/bench_op.txt" 2>&1
  echo "bench op rc=$?"; grep -v "^\[" "$OUT/bench_op.txt" | tail -45 ;;
esac
case " $STEPS " in *" family "*)
  log "bench op --op all"
  timeout 300 build/src/hcwarm bench op --backend cuda --op all --tokens "${FAMILY_TOKENS:-1,8,64,512,2048,8192}" \
    --min-seconds 0.05 --json-out "$OUT/family.json" >"$OUT/family.txt" 2>&1
  echo "bench op --op all rc=$?"; grep -v "^\[" "$OUT/family.txt" | tail -40 ;;
esac
case " $STEPS " in *" head "*)
  log "bench op --op head"
  timeout 300 build/src/hcwarm bench op --backend cuda --op head \
    --tokens "${HEAD_TOKENS:-1,8,64,512,1024,1536,2048,3072,4096,8192,16384}" --min-seconds 0.03 \
    --json-out "$OUT/head.json" >"$OUT/head.txt" 2>&1
  echo "bench op --op head rc=$?"; grep -v "^\[" "$OUT/head.txt" | tail -30 ;;
esac
case " $STEPS " in *" buckets "*)
  log "bench op --buckets"
  timeout 300 build/src/hcwarm bench op --backend cuda --buckets 16384 --min-seconds 0.05 \
    --json-out "$OUT/bench_buckets.json" >"$OUT/bench_buckets.txt" 2>&1
  echo "bench op --buckets rc=$?"; grep -v "^\[" "$OUT/bench_buckets.txt" | tail -50 ;;
esac
case " $STEPS " in *" bench "*|*" benchpy "*)
  log "python bench"
  timeout 240 "$PY" bench/python/bench_ops.py --part kernels --json "$OUT/bench_py.json" >"$OUT/bench_py.txt" 2>&1
  echo "bench py rc=$?"; grep -v "^\[" "$OUT/bench_py.txt" | tail -26 ;;
esac
case " $STEPS " in *" bench "*|*" calls "*)
  log "python per-call cost"
  # 84 fresh processes (14 forms and routes, idle and busy, 3 each) take over 300 s on an H100's host.
  timeout 540 "$PY" bench/python/bench_ops.py --part calls --json "$OUT/bench_calls.json" >"$OUT/bench_calls.txt" 2>&1
  echo "bench calls rc=$?"; grep -v "^\[" "$OUT/bench_calls.txt" | tail -16 ;;
esac
case " $STEPS " in *" ncu "*)
  op=${NCU_OP:-pre}  # bench op --op: pre (hc_pre) or pre-embed (the first layer's, from the embedding)
  log "ncu: the kernels of --op $op"
  mkdir -p "$OUT/ncu"
  for d in ${NCU_HIDDEN:-4096 7168}; do
    for t in ${NCU_TOKENS:-1 512 2048 16384}; do
      # Eager calls only (no graph), specialized kernels; skip the warm-up calls, then profile a few.
      timeout 300 ncu --clock-control none --kernel-name regex:mhc_pre --launch-skip 10 --launch-count 3 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --csv --page details \
        build/src/hcwarm bench op --backend cuda --op "$op" --variant specialized --hidden "$d" --tokens "$t" \
        --min-seconds 0.01 --graph-replays 0 >"$OUT/ncu/${op}_${d}_${t}.csv" 2>"$OUT/ncu/${op}_${d}_${t}.log"
      echo "ncu $op D=$d T=$t rc=$?"
      "$PY" - "$OUT/ncu/${op}_${d}_${t}.csv" <<'PY'
import csv, sys
wanted = ("Duration", "DRAM Throughput", "L2 Cache Throughput", "Memory Throughput", "Compute (SM) Throughput")
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"'))]
for r in rows:
    if r.get("Metric Name") in wanted:
        print(f'  {r["Kernel Name"][:48]:<48} {r["Metric Name"]:<24} {r["Metric Value"]:>10} {r["Metric Unit"]}')
PY
      timeout 300 ncu --clock-control none --kernel-name regex:mhc_pre --launch-skip 10 --launch-count 2 --csv \
        --metrics regex:smsp__pcsamp_warps_issue_stalled_.*,smsp__pcsamp_sample_count,gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        build/src/hcwarm bench op --backend cuda --op "$op" --variant specialized --hidden "$d" --tokens "$t" \
        --min-seconds 0.01 --graph-replays 0 >"$OUT/ncu/stalls_${op}_${d}_${t}.csv" 2>"$OUT/ncu/stalls_${op}_${d}_${t}.log"
      echo "ncu stalls $op D=$d T=$t rc=$?"
      "$PY" - "$OUT/ncu/stalls_${op}_${d}_${t}.csv" <<'PY'
import csv, sys
kernels = {}
for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"')):
    kernels.setdefault(r["Kernel Name"].split("(")[0], {}).setdefault(r["Metric Name"], r["Metric Value"])
num = lambda v: float(v.replace(",", ""))
for name, m in kernels.items():
    total = num(m.get("smsp__pcsamp_sample_count", "0")) or 1.0
    stalls = sorted(((num(v) / total, k.replace("smsp__pcsamp_warps_issue_stalled_", "")) for k, v in m.items()
                     if k.startswith("smsp__pcsamp_warps_issue_stalled_") and not k.endswith("_not_issued")), reverse=True)
    print(f'  {name[5:48]:<44} DRAM read {num(m["dram__bytes_read.sum"]) / 1e6:.1f} MB, write {num(m["dram__bytes_write.sum"]) / 1e6:.1f} MB;',
          ", ".join(f"{k} {100 * v:.0f}%" for v, k in stalls[:4]))
PY
    done
  done ;;
esac
log done
