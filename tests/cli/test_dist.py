"""Issue 21 §2: the README's install from a clone works as written: `make dist` builds a wheel and an sdist, and
the wheel installed in a fresh virtualenv (its dependencies from PyPI) gives a working `kadmin` command. Both ship
the LICENSE pyproject.toml declares (issue 35 §5)."""

from __future__ import annotations

import subprocess
import tarfile
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_installs_in_a_fresh_venv_and_runs(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    # make's own virtualenv in tmp_path: `make dist` installs kadmin (editable) and `build` into it, never into the
    # one running the tests (shared by every checkout of this repository)
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "dist", f"DIST={out}", f"VENV={tmp_path / 'make-venv'}"],
                       capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-3000:]
    wheels, sdists = list(out.glob("kadmin_kafka-*.whl")), list(out.glob("kadmin_kafka-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    license_text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    with zipfile.ZipFile(wheels[0]) as whl:  # PEP 639: <name>.dist-info/licenses/LICENSE, named in METADATA
        info = next(n.split("/")[0] for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        assert whl.read(f"{info}/licenses/LICENSE").decode() == license_text, whl.namelist()
        metadata = whl.read(f"{info}/METADATA").decode()
        assert "License-File: LICENSE" in metadata and "License-Expression: Apache-2.0" in metadata, metadata[:2000]
    with tarfile.open(sdists[0]) as sdist:
        top = sdists[0].name.removesuffix(".tar.gz")
        member = sdist.extractfile(f"{top}/LICENSE")
        assert member is not None and member.read().decode() == license_text, sdist.getnames()
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
