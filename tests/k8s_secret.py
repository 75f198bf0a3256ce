"""A Kubernetes Secret volume as the kubelet lays it out, for rotation tests (no tests here).

``<dir>/password`` → ``..data/password``; ``..data`` → ``..<version>``. An update
writes a new version directory and renames a fresh ``..data`` link over the old
one, so the path stays and the file behind it changes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


class SecretVolume:
    def __init__(self, folder: Path, value: str, key: str = "password") -> None:
        self.folder, self.key, self._n = folder, key, 0
        folder.mkdir(parents=True, exist_ok=True)
        self._write(value)
        (folder / key).symlink_to(Path("..data") / key)

    @property
    def path(self) -> str:
        return str(self.folder / self.key)

    def _write(self, value: str) -> None:
        self._n += 1
        version = self.folder / f"..2030_01_01_00_00_{self._n:02d}"
        version.mkdir()
        (version / self.key).write_text(value + "\n", encoding="utf-8")
        tmp = self.folder / "..data_tmp"
        tmp.symlink_to(version.name)
        old = (self.folder / "..data").resolve() if (self.folder / "..data").exists() else None
        os.replace(tmp, self.folder / "..data")  # atomic, as the kubelet does
        if old is not None:
            shutil.rmtree(old)

    def rotate(self, value: str) -> None:
        self._write(value)
