"""Keep secrets out of the record: params, tags, config.yaml, result.json and log lines.

URI passwords and query tokens, ``name=value`` where the name says secret, and the values of
secret environment variables become ``***``; every MLflow client write goes through
:func:`redact_client_call`. Pure functions of their input (and of ``os.environ`` when ``env`` is
not given). What is masked where: docs/reliability.md, section 10.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any, Mapping

from dabench.runtime.sinks import write_text

MASK = "***"
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|CREDENTIAL|AUTH", re.IGNORECASE)
#: scheme://user:password@  (the password is the group to hide); also as Hydra escapes it in the
#: command lines it writes: ``http\://user\:password@``
_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.\-]*\\?://[^/\s:@]*:)(?P<secret>[^@\s/]+)(?P<at>@)")
#: ?token=... or &password=... in a URL query
_QUERY = re.compile(
    r"(?P<head>[?&](?:[a-z_]*(?:password|passwd|token|secret|access_key|api_key|sig|signature)"
    r"[a-z_]*)=)(?P<secret>[^&\s#]+)",
    re.IGNORECASE,
)
#: name=value where the name says it is a secret (command-line overrides, env dumps)
_ASSIGN = re.compile(
    r"(?P<head>(?<![\w.])[\w.]*(?:token|secret|password|passwd|api_?key|access_?key|credential)"
    r"[\w.]*=)(?P<secret>[^\s&'\"]+)",
    re.IGNORECASE,
)
MIN_SECRET_CHARS = 6  #: shorter environment values are not searched for (too many false hits)


def redact_uri(uri: str) -> str:
    """A URI with its password and query tokens masked (other text unchanged)."""
    return _QUERY.sub(lambda m: m.group("head") + MASK, _USERINFO.sub(lambda m: m.group("head") + MASK + "@", uri))


def secret_env_values(env: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names say they are secrets (longest first); for
    ``os.environ``, kept until the environment changes."""
    raw = getattr(os.environ, "_data", None) if env is None else None
    if isinstance(raw, dict):
        return list(_environ_secrets(tuple(raw.items())))
    return _secret_values(os.environ if env is None else env)


@lru_cache(maxsize=1)
def _environ_secrets(raw_items: tuple) -> list[str]:
    """:func:`_secret_values` of ``os.environ``, once per state of it (``raw_items``, the key)."""
    return _secret_values(os.environ)


def _secret_values(env: Mapping[str, str]) -> list[str]:
    values = {value for name, value in env.items() if SECRET_NAME.search(name) and len(value) >= MIN_SECRET_CHARS}
    return sorted(values, key=len, reverse=True)


def redact_text(text: str, env: Mapping[str, str] | None = None) -> str:
    """Free text with every URI password, query token and secret environment value masked."""
    out = _ASSIGN.sub(lambda m: m.group("head") + MASK, redact_uri(text))
    for value in secret_env_values(env):
        out = out.replace(value, MASK)
    return out


def redact_pair(key: str, value: Any, env: Mapping[str, str] | None = None) -> str:
    """A param or tag value as text: masked outright when its key names a secret
    (``tracking.tags.api_token``), else :func:`redact_text`."""
    text = str(value)
    if text and SECRET_NAME.search(str(key).rsplit(".", 1)[-1]):
        return MASK
    return redact_text(text, env)


def redact_override(text: str, env: Mapping[str, str] | None = None) -> str:
    """One Hydra override ``key=value`` with its value redacted as :func:`redact_pair`
    (the ``+``/``~`` prefix and the key kept); other text as :func:`redact_text`."""
    key, sep, value = text.partition("=")
    if not sep or not key or any(c.isspace() for c in key):
        return redact_text(text, env)
    return key + sep + redact_pair(key.lstrip("+~"), value, env)


def redact_overrides(overrides: Any, env: Mapping[str, str] | None = None) -> list[str]:
    """A list of override strings, each through :func:`redact_override`."""
    return [redact_override(str(o), env) for o in overrides]


def redact_value(value: Any, env: Mapping[str, str] | None = None) -> Any:
    """Strings redacted, containers recursed (a mapping's string value masked outright when its
    key names a secret; a mapping comes back a dict), everything else unchanged."""
    if isinstance(value, str):
        return redact_text(value, env)
    if isinstance(value, Mapping):
        return {
            key: MASK if isinstance(item, str) and SECRET_NAME.search(str(key)) and item else redact_value(item, env)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v, env) for v in value)
    return value


def _redact_entities(entities: Any, env: Mapping[str, str] | None = None) -> Any:
    """MLflow ``Param``/``RunTag`` entities (key, value) with their values as :func:`redact_pair`."""
    if not entities:
        return entities
    return [
        type(e)(e.key, redact_pair(e.key, e.value, env)) if hasattr(e, "key") and hasattr(e, "value") else e
        for e in entities
    ]


def _redact_tags(tags: Any, env: Mapping[str, str] | None = None) -> Any:
    return {k: redact_pair(k, v, env) for k, v in tags.items()} if isinstance(tags, Mapping) else tags


#: MlflowClient method -> {argument: how it is redacted}; anything else passes through unchanged
_CLIENT_WRITES: dict[str, dict[str, Any]] = {
    "create_run": {"run_name": redact_text, "tags": _redact_tags},
    "update_run": {"name": redact_text},
    "set_tag": {"value": "pair"},
    "log_param": {"value": "pair"},
    "set_experiment_tag": {"value": "pair"},
    "log_batch": {"params": _redact_entities, "tags": _redact_entities},
    "log_text": {"text": redact_text},
    "log_dict": {"dictionary": redact_value},
}


def redact_client_call(method: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``(args, kwargs)`` of a call to the MLflow client ``method``, secret-bearing arguments redacted."""
    rules = _CLIENT_WRITES.get(getattr(method, "__name__", ""))
    if not rules:
        return args, kwargs
    import inspect

    try:
        bound = inspect.signature(method).bind(*args, **kwargs)
    except (TypeError, ValueError):  # a signature we do not know: let MLflow report the misuse
        return args, kwargs
    for name, rule in rules.items():
        value = bound.arguments.get(name)
        if value is not None:
            bound.arguments[name] = (
                redact_pair(bound.arguments.get("key", ""), value) if rule == "pair" else rule(value)
            )
    return bound.args, bound.kwargs


class RedactingFilter:
    """``logging.Filter`` that masks secrets in every record it passes (attach to a handler)."""

    def filter(self, record: Any) -> Any:
        """Redact a LogRecord's message in place (args are merged first); the record (true: kept)."""
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to logging to report
            return record
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return record


def install_log_redaction(logger_names: tuple[str, ...] = ("", "dabench")) -> None:
    """Mask secrets in every log record of this process from now on: a record factory (it survives
    Hydra's logging reconfiguration) and :class:`RedactingFilter` on the loggers' handlers. Idempotent."""
    import logging

    current = logging.getLogRecordFactory()
    if not getattr(current, "dabench_redacting", False):

        def factory(*args: Any, **kwargs: Any) -> Any:
            return RedactingFilter().filter(current(*args, **kwargs))

        factory.dabench_redacting = True  # type: ignore[attr-defined]
        logging.setLogRecordFactory(factory)
    for name in logger_names:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(RedactingFilter())


def redact_hydra_output(folder) -> None:
    """Rewrite the YAML files Hydra saved for a job (``.hydra/*.yaml``) with secrets masked."""
    from pathlib import Path

    for path in Path(folder).glob("*.yaml"):  # none when the folder is missing
        if path.is_symlink() or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        cleaned = "\n".join(_redact_yaml_line(line) for line in text.split("\n"))
        if cleaned != text:
            write_text("run_dir", path, cleaned)


def _redact_yaml_line(line: str) -> str:
    """One YAML line: a ``secret_name: value`` pair masked, and secrets in any value."""
    key, sep, value = line.partition(":")
    if sep and value.strip() and SECRET_NAME.search(key.strip(" -'\"")) and not value.strip().endswith(":"):
        return f"{key}{sep} {MASK}"
    return redact_text(line)
