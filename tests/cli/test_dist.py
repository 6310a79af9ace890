"""Issue 21 §2: the README's install from a clone works as written: `make dist` builds a wheel and an sdist, and
the wheel installed in a fresh virtualenv (its dependencies from PyPI) gives a working `kadmin` command."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_installs_in_a_fresh_venv_and_runs(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "dist", f"DIST={out}", f"PY={sys.executable}"],
                       capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-3000:]
    wheels, sdists = list(out.glob("kadmin_kafka-*.whl")), list(out.glob("kadmin_kafka-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    pip = env_dir / "bin" / "pip"
    r = subprocess.run([str(pip), "install", "--quiet", str(wheels[0])], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    kadmin = env_dir / "bin" / "kadmin"
    version = subprocess.run([str(kadmin), "--version"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("kadmin "), version.stderr
    helped = subprocess.run([str(kadmin), "brokers", "list", "--help"], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path)
    assert helped.returncode == 0 and "Usage: kadmin brokers list" in helped.stdout, helped.stderr
    # the installed command is the wheel's, not this checkout's
    where = subprocess.run([str(env_dir / "bin" / "python"), "-c", "import kadmin; print(kadmin.__file__)"],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert str(env_dir) in where.stdout, where.stdout
