"""The `hcwarm` console script: runs the C++ CLI that the wheel carries
(hcwarm/bin/hcwarm), so a pip install has `hcwarm cache build`, `cache check`,
`cache import`, `warm`, `info`, ... without a source build. A package of its own:
starting the CLI imports neither hcwarm (its extension, NumPy) nor anything else.

The CLI looks for NVIDIA's NVRTC wheels in a Python's site-packages through
PYTHONPATH / VIRTUAL_ENV; it is given this interpreter's site-packages, so an
NVRTC wheel installed beside hcwarm is found as `import hcwarm` finds it."""
import importlib.util
import os
import site
import sys
from pathlib import Path


def executable() -> Path:
    """The bundled CLI's path, found without importing the hcwarm package
    (it may be absent in a build without it)."""
    spec = importlib.util.find_spec("hcwarm")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        exe = Path(root) / "bin" / "hcwarm"
        if exe.exists():
            return exe
    return Path(roots[0] if roots else ".") / "bin" / "hcwarm"


def cli_environment(env=None) -> dict:
    """The environment the CLI runs in: env (default os.environ) with this
    interpreter's site-packages appended to PYTHONPATH where missing."""
    env = dict(os.environ if env is None else env)
    dirs = [d for d in env.get("PYTHONPATH", "").split(os.pathsep) if d]
    sites = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    for d in sites + ([user] if user else []):
        if d not in dirs and os.path.isdir(d):
            dirs.append(d)
    if dirs:
        env["PYTHONPATH"] = os.pathsep.join(dirs)
    return env


def main() -> None:
    exe = executable()
    if not os.access(exe, os.X_OK):
        sys.exit(f"hcwarm: {exe} is missing or not executable: this installation of the hcwarm package "
                 "was built without its CLI (pip install . builds it; see the README)")
    os.execve(exe, [str(exe)] + sys.argv[1:], cli_environment())


if __name__ == "__main__":
    main()
