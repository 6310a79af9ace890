"""The dataclass-method cache of the `kadmin` process (kadmin/cli/codecache.py): a later process builds the same
classes from the code an earlier one compiled, and whatever is wrong with the cache file leaves kadmin working as
Python does without it. Each case is fresh interpreters over a cache directory of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Classes with every kind of generated method kadmin's use (frozen, defaults, a factory, a field kept out of eq
# and repr, order), then what an operator's scripts rely on them for, printed; and how many method texts this
# process had to compile ("new")
CLASSES = """
import dataclasses, sys
if sys.argv[1] == "cache":
    from kadmin.cli import codecache
    codecache.install()

@dataclasses.dataclass(frozen=True)
class Registration:
    broker_id: int
    host: str = "localhost"
    rack: str | None = None
    endpoints: tuple[str, ...] = dataclasses.field(default_factory=tuple)
    seen: float = dataclasses.field(default=0.0, compare=False, repr=False)

@dataclasses.dataclass(order=True)
class Epoch:
    czxid: int
    broker_id: int = -1

a, b = Registration(1, "h1", endpoints=("PLAINTEXT://h1:9092",), seen=1.0), Registration(1, "h1", seen=2.0)
print(repr(a), a == Registration(1, "h1", endpoints=("PLAINTEXT://h1:9092",)), a == b, hash(a) == hash(
    Registration(1, "h1", endpoints=("PLAINTEXT://h1:9092",))))
try:
    a.host = "h2"
except dataclasses.FrozenInstanceError as e:
    print("frozen:", e)
print(sorted([Epoch(5, 2), Epoch(3), Epoch(5, 1)]), Epoch(3) < Epoch(4))
try:
    Registration()
except TypeError as e:
    print("init:", e)
print(Registration.__init__.__annotations__)
if sys.argv[1] == "cache":
    print("new", codecache._state["new"])
"""


def run(args: list[str], cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "XDG_CACHE_HOME": str(cache), **env}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=environ, timeout=120)


def classes(cache: Path, mode: str = "cache") -> tuple[list[str], int]:
    """What CLASSES prints (the behaviour) and how many method texts it compiled."""
    out = run(["-c", CLASSES, mode], cache)
    assert out.returncode == 0 and not out.stderr, out.stderr
    lines = out.stdout.splitlines()
    if mode != "cache":
        return lines, -1
    assert lines[-1].startswith("new ")
    return lines[:-1], int(lines[-1].split()[1])


def cache_file(cache: Path) -> Path:
    (found,) = (cache / "kadmin").glob("dataclass-code-*.bin")
    return found


def test_a_later_process_builds_the_classes_from_the_cache_and_they_behave_the_same(tmp_path: Path) -> None:
    plain, _ = classes(tmp_path, mode="plain")
    first, compiled = classes(tmp_path)
    second, again = classes(tmp_path)
    assert compiled >= 8  # __init__, __repr__, __eq__, __setattr__, __delattr__, __hash__; __init__, the orders...
    assert again == 0  # every method text found compiled
    assert plain == first == second
    assert "frozen: cannot assign to field 'host'" in plain
    assert plain[0].endswith(" True False True")  # eq and hash ignore `seen`, repr leaves it out
    assert "seen" not in plain[0]
    assert plain[-1].startswith("{'broker_id': <class 'int'>, 'host': <class 'str'>")  # types, not their names


def test_the_kadmin_command_fills_the_cache_once(tmp_path: Path) -> None:
    first = run(["-m", "kadmin", "brokers", "--help"], tmp_path)
    assert first.returncode == 0 and not first.stderr
    made = cache_file(tmp_path).stat()
    second = run(["-m", "kadmin", "brokers", "--help"], tmp_path)
    assert second.returncode == 0 and second.stdout == first.stdout and not second.stderr
    kept = cache_file(tmp_path).stat()
    assert (kept.st_ino, kept.st_mtime_ns) == (made.st_ino, made.st_mtime_ns)  # nothing new: not written again


@pytest.mark.parametrize("damage", ["truncated", "foreign", "not_a_table", "empty", "entries_not_code",
                                    "entries_truncated"])
def test_a_damaged_cache_file_is_compiled_past_and_replaced(tmp_path: Path, damage: str) -> None:
    import marshal

    _, compiled = classes(tmp_path)
    path = cache_file(tmp_path)
    data = path.read_bytes()
    table = marshal.loads(data[4:])  # after the magic number: text -> marshalled code
    assert table and all(type(k) is str and type(v) is bytes for k, v in table.items())
    path.write_bytes({"truncated": data[:len(data) // 2], "foreign": b"\0\0\r\n" + data[4:],
                      "not_a_table": data[:4] + marshal.dumps([1, 2, 3]), "empty": b"",
                      "entries_not_code": data[:4] + marshal.dumps({k: marshal.dumps(7) for k in table}),
                      "entries_truncated": data[:4] + marshal.dumps({k: v[:9] for k, v in table.items()})}[damage])
    after, recompiled = classes(tmp_path)
    assert recompiled == compiled  # nothing usable in it: compiled as without a cache, and no error
    assert after == classes(tmp_path, mode="plain")[0]
    assert classes(tmp_path)[1] == 0  # and written whole again


def test_a_cache_file_of_another_user_is_not_read(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to give the file to another user")
    _, compiled = classes(tmp_path)
    os.chown(cache_file(tmp_path), 65534, 65534)
    assert classes(tmp_path)[1] == compiled


def test_no_place_to_keep_the_cache_changes_nothing_the_user_sees(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would be")
    out = run(["-m", "kadmin", "brokers", "--help"], blocked)
    assert out.returncode == 0 and not out.stderr
    assert out.stdout == run(["-m", "kadmin", "brokers", "--help"], tmp_path / "ok").stdout
    before, compiled = classes(blocked)
    assert compiled > 0 and before == classes(tmp_path, mode="plain")[0]


def test_processes_that_write_at_once_leave_a_whole_file(tmp_path: Path) -> None:
    environ = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", CLASSES, "cache"], stdout=subprocess.DEVNULL, env=environ)
             for _ in range(6)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 6
    assert [p.name for p in (tmp_path / "kadmin").iterdir()] == [cache_file(tmp_path).name]  # no temporary left
    assert classes(tmp_path)[1] == 0


def test_past_its_bound_the_file_keeps_what_the_last_process_used(tmp_path: Path) -> None:
    """Texts of classes no kadmin creates any more (an older version's) would fill the file for good: once it
    would hold more than MAX_ENTRIES, a process writes only the texts it asked for."""
    import marshal

    _, compiled = classes(tmp_path)
    first = set(marshal.loads(cache_file(tmp_path).read_bytes()[4:]))
    # the same Registration; Epoch's field renamed: other method texts
    bounded = CLASSES.replace("czxid", "mzxid").replace(
        "codecache.install()", f"codecache.MAX_ENTRIES = {compiled}; codecache.install()")
    out = run(["-c", bounded, "cache"], tmp_path)
    assert out.returncode == 0 and not out.stderr, out.stderr
    kept = set(marshal.loads(cache_file(tmp_path).read_bytes()[4:]))
    assert any("mzxid" in text for text in kept) and not any("czxid" in text for text in kept)
    assert first & kept and len(kept) <= compiled  # Registration's, used again, stayed
    assert classes(tmp_path)[1] == len(first - kept)  # the czxid texts went: compiled again, and only they
