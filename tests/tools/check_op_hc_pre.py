#!/usr/bin/env python3
"""`hcwarm op hc-pre` against the independent NumPy float64 reference on awkward shapes.

Usage: check_op_hc_pre.py HCWARM_BINARY BACKEND [MODEL]
For T in (1, 37, 65), with and without a norm weight: y within 1 bf16 ulp,
post and comb within 1e-5 relative.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import mhc_reference  # noqa: E402


def main():
    binary, backend = sys.argv[1], sys.argv[2]
    model = sys.argv[3] if len(sys.argv) > 3 else "dsv4-flash"
    hidden = {"dsv4-flash": 4096, "dsv4-pro": 7168}[model]
    hc = 4
    failures = 0
    rng = np.random.default_rng(2026)
    with tempfile.TemporaryDirectory() as tmp:
        # A private kernel cache: the fast backends compile into it, nothing outside is touched.
        os.environ["HCWARM_CACHE_DIR"] = os.path.join(tmp, "cache")
        for tokens in (1, 37, 65):
            for with_norm in (False, True):
                case = f"T={tokens} norm={'yes' if with_norm else 'no'}"
                d_in, d_got, d_want = (os.path.join(tmp, f"{case}-{x}") for x in ("in", "got", "want"))
                os.makedirs(d_in)
                np.save(os.path.join(d_in, "residual.npy"), rng.standard_normal((tokens, hc, hidden), dtype=np.float32))
                np.save(os.path.join(d_in, "fn.npy"),
                        (1e-3 * rng.standard_normal((hc * (2 + hc), hc * hidden))).astype(np.float32))
                np.save(os.path.join(d_in, "scale.npy"), (0.1 * rng.standard_normal(3)).astype(np.float32))
                np.save(os.path.join(d_in, "base.npy"), (0.1 * rng.standard_normal(hc * (2 + hc))).astype(np.float32))
                if with_norm:
                    np.save(os.path.join(d_in, "norm_weight.npy"),
                            (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
                subprocess.run([binary, "op", "hc-pre", "--model", model, "--backend", backend, "--in", d_in,
                                "--out", d_got], check=True, stdout=subprocess.DEVNULL)
                r = {n: np.load(os.path.join(d_in, f"{n}.npy")) for n in ("residual", "fn", "scale", "base")}
                norm = np.load(os.path.join(d_in, "norm_weight.npy")) if with_norm else None
                y, post, comb = mhc_reference.hc_pre(r["residual"], r["fn"], r["scale"], r["base"], norm,
                                                     1e-6, 1e-6, 1e-6, 20)
                os.makedirs(d_want)
                for name, v in (("y", y), ("post", post), ("comb", comb)):
                    np.save(os.path.join(d_want, f"{name}.npy"), v.astype(np.float32))
                print(f"[{backend}] {case}:")
                if not mhc_reference.compare(d_got, d_want):
                    failures += 1
                    print("  FAILED")
    print(f"{6 - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
