"""Settings: the one grammar every stage's config dataclass is set through.

A config is a (nested) frozen dataclass with documented defaults. It is changed by a YAML
mapping (``--config FILE``), by ``--set key.sub=value`` words, or by a dict from another
config (the ablation's per-variant settings, GLUE's per-task settings); all three go through
:func:`apply_settings`, which coerces strings to the field's type and refuses unknown keys.
"""
from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional

from c4forge.core.errors import C4forgeError


class ConfigError(C4forgeError, ValueError):
    """A preset, key or value that does not fit a config dataclass, or a settings file that
    cannot be read: a usage error (exit 2), reported before any work starts."""

    exit_code = 2


# A field's rule, written beside it: ``steps: int = setting(100, POSITIVE)``. ``check_fields``
# applies every rule of a config (and of the configs nested in it) with one message format,
# ``KEY=VALUE: must be RULE``; ``Literal[...]`` fields take one of their values
# (``KEY=VALUE: choose a, b or c``).
POSITIVE = "> 0"
NON_NEGATIVE = ">= 0"
UNIT_INTERVAL = "between 0 and 1"
OPEN_UNIT_INTERVAL = "between 0 and 1 (exclusive)"
POSITIVE_INT_OR_NULL = "a positive integer or null"
_RULES: dict[str, Callable[[Any], bool]] = {
    POSITIVE: lambda v: v > 0,
    NON_NEGATIVE: lambda v: v >= 0,
    UNIT_INTERVAL: lambda v: 0 <= v <= 1,
    OPEN_UNIT_INTERVAL: lambda v: 0 < v < 1,
}


def setting(default: Any, rule: Optional[str] = None) -> Any:
    """A config dataclass field with its default and the rule its values must meet."""
    if rule is not None and rule not in _RULES and rule != POSITIVE_INT_OR_NULL:
        raise ValueError(f"unknown rule {rule!r}")
    return dataclasses.field(default=default, metadata={"rule": rule} if rule else {})


def _choices(values: tuple) -> str:
    shown = [str(v) for v in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def check_fields(config: Any, prefix: str = "") -> None:
    """Every field of ``config`` (and of the dataclasses nested in it) meets the rule beside it
    and, for ``Literal`` fields, is one of their values; the first that does not is a
    ConfigError naming it."""
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        key = f"{prefix}{field.name}"
        if dataclasses.is_dataclass(value):
            check_fields(value, f"{key}.")
            continue
        allowed = _literal_values(hints[field.name])
        if allowed is not None and value not in allowed:
            raise ConfigError(f"{key}={value!r}: choose {_choices(allowed)}")
        rule = field.metadata.get("rule")
        if rule is None:
            continue
        if rule == POSITIVE_INT_OR_NULL:
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ConfigError(f"{key}={value!r}: must be {rule}")
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:  # NaN
            raise ConfigError(f"{key}={value!r}: must be a number")
        if not _RULES[rule](value):
            raise ConfigError(f"{key}={value!r}: must be {rule}")


def _literal_values(annotation: Any) -> Optional[tuple]:
    """The values of a ``Literal[...]`` (or ``Optional[Literal[...]]``) annotation, else None."""
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            if typing.get_origin(arg) is typing.Literal:
                return (*typing.get_args(arg), None)
    return None


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    """Turn a YAML/CLI value into the field's type (str 'true' -> bool, 'en,de' -> tuple...)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"{key}={value!r}: choose {_choices(args)}")
        return value
    if origin is typing.Union:
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        inner = [a for a in args if a is not type(None)][0]
        return _coerce(value, inner, key)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("1", "true", "yes", "on"):
            return True
        if str(value).lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{key}: expected true/false, got {value!r}")
    if origin in (tuple, tuple):
        if isinstance(value, str):
            text = value.strip()
            if text[:1] == "[" and text[-1:] == "]":  # a YAML list typed on the command line
                text = text[1:-1]
            value = [v.strip().strip("'\"") for v in text.split(",") if v.strip().strip("'\"")]
        return tuple(value or ())
    if annotation in (int, float, str):
        try:
            return annotation(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{key}: expected {annotation.__name__}, got {value!r}") from exc
    return value


def apply_settings(obj: Any, updates: Mapping[str, Any], prefix: str = "") -> Any:
    """A copy of dataclass ``obj`` with nested ``updates`` coerced to the fields' types."""
    return _apply(obj, updates, prefix)


def parse_overrides(items: Iterable[str],
                    parse_value: Optional[Callable[[str], Any]] = None) -> dict[str, Any]:
    """``["a.b=1", "c=x"]`` -> ``{"a": {"b": "1"}, "c": "x"}``: the ``--set KEY=VALUE`` grammar
    of every command. Values stay strings (a config dataclass coerces them to its field types)
    unless ``parse_value`` reads them (the ablation's YAML spec: ``seeds=[0,1,2]``)."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"setting {item!r} is not KEY=VALUE")
        value = value.strip()
        if parse_value is not None:
            try:
                pairs[key.strip()] = parse_value(value)
            except ValueError as exc:
                raise ConfigError(f"{key.strip()}: {value!r} is not a valid value ({exc})") from exc
        else:
            pairs[key.strip()] = value
    return nest(pairs)


def merge_settings(base: Mapping[str, Any], updates: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``updates`` over ``base``, nested mappings merged key by key: how a settings file, then
    ``--set`` words, then per-task or per-variant blocks stack. A group replaced by a value, or
    a value by a group, is a mistake in the settings and refused."""
    if not isinstance(updates, Mapping):
        where = prefix.rstrip(".") or "the settings"
        raise ConfigError(f"{where}: expected a group of settings (name: value), got {updates!r}")
    out = dict(base)
    for key, value in updates.items():
        current = out.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = merge_settings(current, value, f"{prefix}{key}.")
        elif isinstance(value, Mapping) and current is not None:
            raise ConfigError(f"{prefix}{key} is a value, not a group of settings")
        else:
            out[key] = value
    return out


def unknown_key_message(shown: str, key: str, known: Iterable[str]) -> str:
    """``unknown setting 'lr'; did you mean 'optim.lr'? known: ...`` for any settings grammar."""
    known = sorted(known)
    if not isinstance(key, str):  # a YAML key such as `?` or `1:` is not a setting's name
        return f"a setting's name is text, not {key!r} (at {shown!r})"
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown setting {shown!r}{hint}; known: {', '.join(k for k in known if not k.startswith('_'))}"


def check_keys(mapping: Mapping[str, Any], known: Iterable[str], prefix: str = "") -> None:
    """Refuse keys of a plain settings mapping (not a dataclass) that are not ``known``."""
    known = list(known)
    for key in mapping:
        if key not in known:
            raise ConfigError(unknown_key_message(f"{prefix}{key}", key, known))


def _apply(obj: Any, updates: Mapping[str, Any], prefix: str = "") -> Any:
    hints = typing.get_type_hints(type(obj))
    changes = {}
    for key, value in updates.items():
        if key not in hints:
            raise ConfigError(unknown_key_message(f"{prefix}{key}", key, hints))
        current = getattr(obj, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{prefix}{key} is a group; set {prefix}{key}.<name>=VALUE")
            changes[key] = _apply(current, value, f"{prefix}{key}.")
        else:
            changes[key] = _coerce(value, hints[key], f"{prefix}{key}")
    return dataclasses.replace(obj, **changes)


def nest(dotted: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1, "c": 2}`` -> ``{"a": {"b": 1}, "c": 2}``; a name set both to a value and as a
    group (``m=x`` and ``m.r=y``, in either order) is a ConfigError naming it."""
    nested: dict[str, Any] = {}
    for key, value in dotted.items():
        node = nested
        parts = key.split(".")
        for depth, part in enumerate(parts[:-1], 1):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"setting {key!r}: {'.'.join(parts[:depth])} is set to a value, "
                                  "not a group of settings")
            node = child
        if isinstance(node.get(parts[-1]), dict):
            raise ConfigError(f"setting {key!r}: {key} is a group of settings; set one of its "
                              f"names ({key}.NAME=VALUE)")
        node[parts[-1]] = value
    return nested


def load_yaml_mapping(path: str) -> dict:
    """A YAML file of settings as a dict; a syntax error, an unreadable file or a file that is
    not a mapping is a ConfigError with one line saying what and where. Every ``--config`` of
    every command is read through here."""
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError(f"{path} is not valid YAML: {problem}{where}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping of settings")
    return dict(data)
