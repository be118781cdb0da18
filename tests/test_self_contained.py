"""The repository is self-contained: a fresh clone with nothing beside it runs the tests.

Every data file a test reads lives in ``tests/data/`` with its licence and a SOURCE.md, and
no tracked file points outside the clone at the project's own machines.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
#: paths that exist only on this project's own machines (spelled in pieces so that this
#: file does not match itself)
FORBIDDEN = ("../" + "shared", "/work/" + "shared", "shared" + "/data")


def _tracked():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [ROOT / p for p in out.stdout.decode().split("\0") if p]


def test_no_tracked_file_points_outside_the_clone():
    hits = []
    for path in _tracked():
        if not path.is_file() or path.suffix in {".gz", ".png", ".parquet", ".nc"}:
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        hits += [f"{path.relative_to(ROOT)}: {f}" for f in FORBIDDEN if f in text]
    assert not hits, hits


def test_every_data_folder_has_licence_and_source():
    folders = [p for p in DATA.iterdir() if p.is_dir()]
    assert len(folders) >= 4
    for folder in folders:
        names = {p.name for p in folder.iterdir()}
        assert "SOURCE.md" in names, folder
        assert any(n.upper().startswith("LICENSE") for n in names), folder
        source = (folder / "SOURCE.md").read_text(encoding="utf-8").lower()
        for word in ("origin", "licence", "cut"):   # where from, under which licence, what cut
            assert word in source, (folder, word)
        size = sum(p.stat().st_size for p in folder.iterdir())
        assert size < 500_000, (folder, size)   # slices, not whole corpora
