"""Guarded reads of the files dabench takes as data: a regular file of bounded size, decoded
strictly (:func:`read_text`, :func:`read_json`, :func:`read_yaml`), then checked by the one class
of its format beside its writer (constant sets: perfmodel/constants.py; the calibration cache:
host/cache.py; outbox journals: tracking/outbox.py; sweep files: config/files.py) with
:func:`mapping` and :func:`finite`. Damage is :class:`DamagedFile` (one line: the file and what is
wrong); a missing file is FileNotFoundError. docs/reliability.md, section 15."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from dabench.core.numbers import bad_number

MAX_BYTES = 8 * 2**20  #: default bound of one data file


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
        with open(fd, "rb", closefd=False) as file:  # reads until max_bytes + 1 bytes or the end
            data = file.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise DamagedFile(path, f"grew past the {max_bytes} bytes a file of this kind may have")
        return data
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


def text_or_empty(path: Path | str) -> str:
    """The text of ``path``, or "" when it cannot be read (a /proc or /sys file that may be absent)."""
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def read_json(path: Path | str, max_bytes: int = MAX_BYTES, allow_nan: bool = False) -> Any:
    """The JSON document in ``path`` (NaN/Infinity refused unless ``allow_nan``)."""
    text = read_text(path, max_bytes)
    try:
        return json.loads(text, **({} if allow_nan else {"parse_constant": _no_constant}))
    except (ValueError, RecursionError) as error:
        raise DamagedFile(path, f"not valid JSON ({error})") from None


def safe_yaml(text: str) -> Any:
    """``yaml.safe_load`` of ``text``, by libyaml where PyYAML has it (the same values, ~10x faster:
    every run hashes its platform's presets, every fit reads them)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def read_yaml(path: Path | str, text: str) -> Any:
    """The YAML document ``text`` of ``path`` (OmegaConf's reading of numbers), aliases refused."""
    import yaml
    from omegaconf._utils import get_yaml_loader

    try:
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader)):
            raise DamagedFile(path, "uses a YAML alias (*name); write the values out")
        return yaml.load(text, Loader=get_yaml_loader())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise DamagedFile(path, f"not valid YAML{where} ({str(error).splitlines()[0]})") from None
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
    """``value`` as a finite float within the bounds given; DamagedFile naming ``where``
    (the number itself checked by the one guard, :func:`dabench.core.numbers.bad_number`)."""
    why = bad_number(where, value)
    if why:
        raise DamagedFile(path, why)
    number = float(value)
    if positive and not number > 0:
        raise DamagedFile(path, f"{where}={number:g}: must be > 0")
    if low is not None and number < low:
        raise DamagedFile(path, f"{where}={number:g}: must be >= {low:g}")
    if high is not None and number > high:
        raise DamagedFile(path, f"{where}={number:g}: must be <= {high:g}")
    return number


def is_number(value: Any) -> bool:
    """An int or float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
