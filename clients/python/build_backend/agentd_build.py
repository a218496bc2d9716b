"""A PEP 517 build backend of the standard library alone, so that `pip install ./clients/python`
needs nothing from a package index, not even setuptools or wheel (CONTRACT.md §22: no dependency
outside the standard library). It builds the one pure-Python package as a wheel (PEP 427) and an
sdist, with the metadata of pyproject.toml's [project] table (name, version, description,
requires-python; read with a small parser, since tomllib is not in Python 3.10)."""
from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "agentd_client"


def _project() -> dict[str, str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    table = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if table is None:
        raise RuntimeError("pyproject.toml has no [project] table")
    return dict(re.findall(r'^([A-Za-z-]+)\s*=\s*"([^"]*)"\s*$', table.group(1), re.M))


def _metadata() -> str:
    project = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}", f"Summary: {project.get('description', '')}", f"Requires-Python: {project.get('requires-python', '>=3.10')}", "Classifier: Typing :: Typed"]
    readme = ROOT / "README.md"
    if readme.exists():
        lines += ["Description-Content-Type: text/markdown", "", readme.read_text(encoding="utf-8")]
    return "\n".join(lines) + "\n"


def _dist_name() -> str:
    project = _project()
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _package_files() -> list[Path]:
    return sorted(path for path in (ROOT / PACKAGE).rglob("*") if path.is_file() and "__pycache__" not in path.parts)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def _write_wheel(wheel_directory: str, files: list[tuple[str, bytes]]) -> str:
    dist = _dist_name()
    info = f"{dist}.dist-info"
    files = files + [
        (f"{info}/METADATA", _metadata().encode()),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: agentd_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = [_record_line(name, data) for name, data in files] + [f"{info}/RECORD,,"]
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    filename = f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files:
            wheel.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return filename


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(path.relative_to(ROOT).as_posix(), path.read_bytes()) for path in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # a .pth file naming the source directory: the package is imported from the checkout
    return _write_wheel(wheel_directory, [(f"_{PACKAGE}_editable.pth", (str(ROOT) + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    dist = _dist_name()
    filename = f"{dist}.tar.gz"
    members = [ROOT / "pyproject.toml", ROOT / "README.md", *sorted((ROOT / "build_backend").glob("*.py")), *_package_files()]
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as sdist:
        for path in members:
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{dist}/{path.relative_to(ROOT).as_posix()}")
            info.size = len(data)
            sdist.addfile(info, io.BytesIO(data))
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo(f"{dist}/PKG-INFO")
        info.size = len(pkg_info)
        sdist.addfile(info, io.BytesIO(pkg_info))
    return filename
