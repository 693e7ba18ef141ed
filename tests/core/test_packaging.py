"""The built wheel carries every non-Python file the code loads at run time (the Lua sandbox,
the queue's scripts): an editable install would not notice one missing."""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_wheel_contains_runtime_data_files(tmp_path):
    # Build from a clean copy: a stale build/ directory in the checkout would hide a miss.
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", "build", "*.egg-info", "__pycache__", ".hypothesis", "appendonlydir"))
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                    str(source)], check=True, capture_output=True)
    [wheel] = out.glob("minired-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {"minired/scripting/sandbox.lua"} | {
        f"minired_queue/lua/{p.name}" for p in (ROOT / "queue" / "minired_queue" / "lua").glob("*.lua")}
    assert len(expected) > 10
    assert expected <= names, sorted(expected - names)
    assert "queue/__init__.py" not in names and not any(n.startswith("queue/") for n in names)
