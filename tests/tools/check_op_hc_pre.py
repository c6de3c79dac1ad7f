#!/usr/bin/env python3
"""`hcwarm op hc-pre` against the independent NumPy float64 reference on awkward shapes.

Usage: check_op_hc_pre.py HCWARM_BINARY BACKEND [MODEL]
For T in (1, 37, 65), residual streams and the first layer's embedding, with and
without a norm weight: the tolerances of docs/MATH.md, section 5
(tools/mhc_reference.py --compare).
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import mhc_reference  # noqa: E402


def main():
    binary, backend = sys.argv[1], sys.argv[2]
    model = sys.argv[3] if len(sys.argv) > 3 else "dsv4-flash"
    hidden = {"dsv4-flash": 4096, "dsv4-pro": 7168}[model]
    cases = failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        # A private kernel cache: the fast backends compile into it, nothing outside is touched.
        os.environ["HCWARM_CACHE_DIR"] = os.path.join(tmp, "cache")
        for tokens in (1, 37, 65):
            for embed in (False, True):
                for with_norm in (False, True):
                    case = f"T={tokens} input={'embed' if embed else 'residual'} norm={'yes' if with_norm else 'no'}"
                    d_in, d_got = (os.path.join(tmp, f"{cases}-{x}") for x in ("in", "got"))
                    mhc_reference.generate(d_in, tokens, 4, hidden, embed=embed, norm=with_norm, seed=2026 + cases)
                    cases += 1
                    subprocess.run([binary, "op", "hc-pre", "--model", model, "--backend", backend, "--in", d_in,
                                    "--out", d_got], check=True, stdout=subprocess.DEVNULL)
                    print(f"[{backend}] {case}:")
                    if not mhc_reference.compare(d_got, None, in_dir=d_in):
                        failures += 1
                        print("  FAILED")
    print(f"{cases - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
