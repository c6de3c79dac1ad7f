"""The wheel scripts/setup.sh builds, as a pip user gets it: installed into a clean
virtual environment (no NumPy, no hcwarm source tree, nothing but the wheel), its
`hcwarm` console script runs the C++ CLI it carries, and that CLI loads only the
libraries the wheel carries besides the C and C++ runtimes.

Skips when no wheel was built (run scripts/setup.sh)."""
import glob
import json
import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import hcwarm_cli  # noqa: E402  (the launcher, from the source tree)

# What the CLI may load from the system: the C library, the C++ runtime, the loader.
SYSTEM_LIBS = ("linux-vdso", "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "ld-linux", "libdl.so",
               "libpthread.so", "librt.so")


def built_wheel():
    wheels = sorted(glob.glob(os.path.join(ROOT, "build-python", "wheelhouse", "hcwarm-*.whl")) or
                    glob.glob(os.path.join(ROOT, "build-python", "dist", "hcwarm-*.whl")))
    if not wheels:
        pytest.skip("no wheel in build-python/wheelhouse or build-python/dist: run scripts/setup.sh")
    return wheels[-1]


@pytest.fixture(scope="module")
def clean_venv(tmp_path_factory):
    wheel = built_wheel()
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=120)
    # No index, no dependencies: the CLI needs none, and nothing of this checkout leaks in.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "--no-index", "--no-deps", wheel], check=True, timeout=300, env=env)
    return venv, wheel


def run_cli(venv, *args, env=None):
    e = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    e.update(env or {})
    return subprocess.run([str(venv / "bin" / "hcwarm"), *args], capture_output=True, text=True, timeout=120, env=e)


def test_wheel_carries_the_cli_launcher_and_entry_point():
    wheel = built_wheel()
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert "hcwarm/bin/hcwarm" in names
        assert "hcwarm_cli/__init__.py" in names
        eps = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert eps, names
        text = z.read(eps[0]).decode()
        assert "hcwarm = hcwarm_cli:main" in text, text
        # Executable in the archive, so pip installs it executable.
        assert (z.getinfo("hcwarm/bin/hcwarm").external_attr >> 16) & 0o111


def test_console_script_runs_the_cli_in_a_clean_venv(clean_venv):
    venv, _ = clean_venv
    r = run_cli(venv, "--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "hcwarm 0.1.0", r.stdout
    r = run_cli(venv, "info", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["hcwarm_version"] == "0.1.0"
    assert "nvrtc" in info and "host_compiler" in info


def test_cli_from_the_wheel_refuses_a_bad_command_naming_it(clean_venv):
    venv, _ = clean_venv
    r = run_cli(venv, "cache", "check", "--cache-dir", str(venv / "no-such-dir"))
    assert r.returncode != 0
    assert "no-such-dir" in r.stderr + r.stdout


def test_cli_loads_only_what_the_wheel_carries(clean_venv):
    venv, wheel = clean_venv
    if "manylinux" not in os.path.basename(wheel):
        pytest.skip(f"{os.path.basename(wheel)} was not repaired by auditwheel (setup.sh says why)")
    exe = glob.glob(str(venv / "lib" / "python*" / "site-packages" / "hcwarm" / "bin" / "hcwarm"))
    assert exe
    r = subprocess.run(["ldd", exe[0]], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    outside = [l.strip() for l in r.stdout.splitlines()
               if l.strip() and str(venv) not in l and not any(s in l for s in SYSTEM_LIBS)]
    assert not outside, f"the CLI loads libraries from outside the wheel: {outside}"
    assert "hcwarm.libs" in r.stdout  # spdlog, fmt, OpenSSL, grafted by auditwheel


def test_launcher_adds_site_packages_to_the_cli_path_and_keeps_the_callers():
    env = hcwarm_cli.cli_environment({"PYTHONPATH": "/opt/mine", "OTHER": "1"})
    parts = env["PYTHONPATH"].split(os.pathsep)
    assert parts[0] == "/opt/mine"
    assert env["OTHER"] == "1"
    assert all(os.path.isdir(p) for p in parts[1:])
    # Nothing added twice.
    again = hcwarm_cli.cli_environment(env)
    assert again["PYTHONPATH"] == env["PYTHONPATH"]


def test_launcher_without_the_binary_exits_naming_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(hcwarm_cli, "executable", lambda: tmp_path / "bin" / "hcwarm")
    with pytest.raises(SystemExit) as e:
        hcwarm_cli.main()
    assert "without its CLI" in str(e.value)
    assert str(tmp_path) in str(e.value)
