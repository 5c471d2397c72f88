"""Guarded reads of the files dabench takes as data, one reader per kind (constant sets, the
calibration cache, outbox journals, sweep files): a regular file of bounded size, decoded strictly,
then its schema and values checked. Damage is :class:`DamagedFile` (one line: the file and what is
wrong); a missing file is FileNotFoundError. docs/reliability.md, section 15."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 8 * 2**20  #: default bound of one data file
MAX_RATE = 1e18  #: FLOP/s or bytes/s no one machine reaches (a calibration above it is damage)
MAX_BAND_FACTOR = 1e3  #: a band wider than x1000 either way says nothing (and overflows products)


class DamagedFile(ValueError):
    """``<path>: <what is wrong>`` (one line)."""

    def __init__(self, path: Path | str, problem: str):
        self.path, self.problem = Path(path), " ".join(str(problem).split())[:300]
        super().__init__(f"{self.path}: {self.problem}")


def read_bytes(path: Path | str, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of regular file ``path`` of at most ``max_bytes``, or DamagedFile."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)  # a FIFO opens at once, to be refused
    except FileNotFoundError:
        raise
    except OSError as error:
        raise DamagedFile(path, f"cannot be opened ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DamagedFile(path, "not a regular file")
        if info.st_size > max_bytes:
            raise DamagedFile(path, f"{info.st_size} bytes, more than the {max_bytes} a file of this kind may have")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise DamagedFile(path, f"grew past the {max_bytes} bytes a file of this kind may have")
        return b"".join(chunks)
    except OSError as error:
        raise DamagedFile(path, f"cannot be read ({error.strerror or error})") from None
    finally:
        os.close(fd)


def read_text(path: Path | str, max_bytes: int = MAX_BYTES) -> str:
    """:func:`read_bytes` decoded as UTF-8 (DamagedFile when it is not)."""
    data = read_bytes(path, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DamagedFile(path, f"not UTF-8 text (byte {error.start})") from None
    if "\x00" in text:
        raise DamagedFile(path, "holds a NUL character")
    return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def read_json(path: Path | str, max_bytes: int = MAX_BYTES, allow_nan: bool = False) -> Any:
    """The JSON document in ``path`` (NaN/Infinity refused unless ``allow_nan``)."""
    text = read_text(path, max_bytes)
    try:
        return json.loads(text, **({} if allow_nan else {"parse_constant": _no_constant}))
    except (ValueError, RecursionError) as error:
        raise DamagedFile(path, f"not valid JSON ({error})") from None


def _yaml(path: Path | str, text: str) -> Any:
    import yaml

    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise DamagedFile(path, "uses a YAML alias (*name); write the values out")
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DamagedFile(path, f"not valid YAML ({str(error).splitlines()[0]})") from None
    except RecursionError:
        raise DamagedFile(path, "nested too deeply") from None


def mapping(path: Path | str, value: Any, where: str = "the file") -> dict:
    """``value`` when it is a mapping with text keys; DamagedFile naming ``where`` otherwise."""
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise DamagedFile(path, f"{where} is not a mapping of names")
    return value


def finite(
    path: Path | str,
    value: Any,
    where: str,
    *,
    positive: bool = False,
    low: float | None = None,
    high: float | None = None,
) -> float:
    """``value`` as a finite float within the bounds given; DamagedFile naming ``where``."""
    if isinstance(value, bool):
        raise DamagedFile(path, f"{where}={value!r}: not a number")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise DamagedFile(path, f"{where}={str(value)[:40]!r}: not a number") from None
    if not math.isfinite(number):
        raise DamagedFile(path, f"{where}={number}: not finite")
    if positive and not number > 0:
        raise DamagedFile(path, f"{where}={number:g}: must be > 0")
    if low is not None and number < low:
        raise DamagedFile(path, f"{where}={number:g}: must be >= {low:g}")
    if high is not None and number > high:
        raise DamagedFile(path, f"{where}={number:g}: must be <= {high:g}")
    return number


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_constant_set(path: Path | str, fmt: str, version: int) -> dict:
    """A constant set (fit/constant_set.py) of format ``fmt``, version <= ``version``."""
    data = mapping(path, read_json(path, 16 * 2**20))
    if data.get("format") != fmt or not isinstance(data.get("format_version"), int):
        raise DamagedFile(path, f"not a {fmt} (format {str(data.get('format'))[:40]!r})")
    if not 1 <= data["format_version"] <= version:
        raise DamagedFile(path, f"format_version={data['format_version']}: this dabench reads 1..{version}")
    if "nominal_coverage" in data:
        coverage = finite(path, data["nominal_coverage"], "nominal_coverage", positive=True)
        if coverage > 1:
            raise DamagedFile(path, f"nominal_coverage={coverage:g}: must be <= 1")
    for arch, entry in mapping(path, data.get("platforms") or {}, "platforms").items():
        entry = mapping(path, entry, f"platforms.{arch}")
        for name, constant in mapping(path, entry.get("constants") or {}, f"platforms.{arch}.constants").items():
            where = f"platforms.{arch}.constants.{name}"
            constant = mapping(path, constant, where)
            value = constant.get("value")
            if constant.get("kind") == "fitted" and value is not None:
                finite(path, value, f"{where}.value", positive=True)
            elif _number(value):
                finite(path, value, f"{where}.value")
        band = mapping(path, entry.get("band") or {}, f"platforms.{arch}.band")
        if band.get("kind") in ("conformal", "wide", "near"):
            finite(path, band.get("factor"), f"platforms.{arch}.band.factor", low=1.0, high=MAX_BAND_FACTOR)
        _band_points(path, band, f"platforms.{arch}.band")
    bands = mapping(path, data.get("bands") or {}, "bands")
    finite(path, bands.get("wide", 0.0), "bands.wide", low=0.0, high=math.log(MAX_BAND_FACTOR))
    if not isinstance(bands.get("needs", []), list):
        raise DamagedFile(path, "bands.needs is not a list")
    for i, need in enumerate(bands.get("needs", [])):
        if need is not None:
            finite(path, need, f"bands.needs[{i}]", low=0.0, high=10.0)
    return data


def _band_points(path: Path | str, band: dict, where: str) -> None:
    """A band's calibration points (perfmodel/reach.py): id, reach coordinates, score >= 0 or null."""
    if "points" not in band:
        return
    if not isinstance(band["points"], list):
        raise DamagedFile(path, f"{where}.points is not a list")
    for i, point in enumerate(band["points"]):
        point = mapping(path, point, f"{where}.points[{i}]")
        coords = mapping(path, point.get("coords"), f"{where}.points[{i}].coords")
        for key, high in (("size", 20.0), ("chips", 30.0)):  # log10 parameters, log2 chips
            finite(path, coords.get(key), f"{where}.points[{i}].coords.{key}", low=0.0, high=high)
        for key in ("precision", "compile", "execution", "release", "generation"):
            if not isinstance(coords.get(key), str):
                raise DamagedFile(path, f"{where}.points[{i}].coords.{key} is not text")
        if not isinstance(point.get("id"), str):
            raise DamagedFile(path, f"{where}.points[{i}].id is not text")
        if point.get("score", 0.0) is not None or "score" not in point:
            finite(path, point.get("score"), f"{where}.points[{i}].score", low=0.0, high=50.0)


#: an outbox journal's fields and their types (tracking/outbox.py writes them)
_JOURNAL = {
    **dict.fromkeys(("id", "experiment", "run_name"), str),
    **dict.fromkeys(("tags", "params", "metrics", "logged_tags", "acked"), dict),
    "artifacts": list,
}


def read_journal(path: Path | str) -> dict:
    """An outbox journal (tracking/outbox.py), version 1 (NaN metrics kept: MLflow stores them)."""
    data = mapping(path, read_json(path, 64 * 2**20, allow_nan=True))
    if data.get("version") != 1:
        raise DamagedFile(path, f"version={str(data.get('version'))[:20]!r}: this dabench reads version 1")
    for field, kind in _JOURNAL.items():
        if not isinstance(data.get(field), kind):
            raise DamagedFile(path, f"{field} missing or not a {kind.__name__}")
    if Path(path).stem != data["id"]:
        raise DamagedFile(path, f"id={data['id'][:40]!r} is not the file's name")
    for name, value in data["metrics"].items():
        if not _number(value):
            raise DamagedFile(path, f"metrics.{name}={str(value)[:40]!r}: not a number")
    for field in ("start_ms", "end_ms"):
        value = data.get(field)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise DamagedFile(path, f"{field}={str(value)[:40]!r}: not a time in ms")
    if not all(isinstance(v, bool) for v in data["acked"].values()):
        raise DamagedFile(path, "acked holds a value other than true/false")
    return data


def read_sweep(path: Path | str) -> str:
    """A sweep file's text: a YAML mapping without aliases, its ``hydra.sweeper`` checked."""
    text = read_text(path, 2**20)
    document = _yaml(path, text)
    if document is None:
        return text
    data = mapping(path, document)
    sweeper = mapping(path, (mapping(path, data.get("hydra") or {}, "hydra")).get("sweeper") or {}, "hydra.sweeper")
    for field in ("n_trials", "n_jobs"):
        value = sweeper.get(field)
        if isinstance(value, str) and value.startswith("${"):
            continue
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise DamagedFile(path, f"hydra.sweeper.{field}={str(value)[:40]!r}: must be an integer >= 1")
    mapping(path, sweeper.get("params") or {}, "hydra.sweeper.params")
    return text
