"""Settings: the one grammar every stage's config dataclass is set through.

A config is a (nested) frozen dataclass with documented defaults. It is changed by a YAML
mapping (``--config FILE``), by ``--set key.sub=value`` words, or by a dict from another
config (the ablation's per-variant settings, GLUE's per-task settings); all three go through
:func:`apply_settings`, which coerces strings to the field's type and refuses unknown keys.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional

import yaml

from c4forge.core.errors import C4forgeError


class ConfigError(C4forgeError, ValueError):
    """A preset, key or value that does not fit a config dataclass, or a settings file that
    cannot be read: a usage error (exit 2), reported before any work starts."""

    exit_code = 2


# A field's rule, written beside it: ``steps: int = setting(100, POSITIVE)``. ``check_fields``
# applies every rule of a config (and of the configs nested in it) with one message format,
# ``KEY=VALUE: must be RULE``; ``Literal[...]`` fields take one of their values
# (``KEY=VALUE: choose a, b or c``). A number is also finite (NaN fails every comparison, so a
# NaN threshold would switch its rule off without a word; inf is no limit anyone means), and a
# ``None`` passes only where the field is ``Optional`` (there it switches the rule off).


@dataclasses.dataclass(frozen=True)
class Rule:
    """What a setting's value must be: ``says`` (shown in the error) and ``holds`` (the test)."""

    says: str
    holds: Callable[[Any], bool]
    integer: bool = False  # the value must be a whole number (bools are not numbers here)

    def __str__(self) -> str:
        return self.says


POSITIVE = Rule("> 0", lambda v: v > 0)
NON_NEGATIVE = Rule(">= 0", lambda v: v >= 0)
UNIT_INTERVAL = Rule("between 0 and 1", lambda v: 0 <= v <= 1)
OPEN_UNIT_INTERVAL = Rule("between 0 and 1 (exclusive)", lambda v: 0 < v < 1)
POSITIVE_INT = Rule("a positive integer", lambda v: v > 0, integer=True)
NON_NEGATIVE_INT = Rule("an integer >= 0", lambda v: v >= 0, integer=True)
POSITIVE_INT_OR_NULL = Rule("a positive integer or null", lambda v: v > 0, integer=True)
SHARE = Rule("a share in (0, 1]", lambda v: 0 < v <= 1)  # a share that drops pages above it
# datatrove's way to switch a count rule off
OFF_OR_POSITIVE_INT = Rule("-1 (off) or a positive integer", lambda v: v == -1 or v > 0, integer=True)
OFF_OR_NON_NEGATIVE_INT = Rule("-1 (off) or an integer >= 0", lambda v: v >= -1, integer=True)


PATH = "path"  # a local path a worker elsewhere must open absolute (a model file, a folder)
NAMED_PATHS = "named paths"  # NAME=PATH entries (evaluation sets)


def setting(default: Any, rule: Optional[Rule] = None, path: Optional[str] = None) -> Any:
    """A config dataclass field with its default, the rule its values must meet and, for a
    local file setting, its ``path`` kind (``PATH`` or ``NAMED_PATHS``: what ``worker_paths``
    makes absolute for workers that start in folders of their own)."""
    if rule is not None and not isinstance(rule, Rule):
        raise ValueError(f"unknown rule {rule!r}")
    metadata: dict[str, Any] = {"rule": rule} if rule else {}
    if path is not None:
        metadata["path"] = path
    return dataclasses.field(default=default, metadata=metadata)


def worker_path(path: Optional[str]) -> Optional[str]:
    """``path`` as a worker elsewhere on this machine opens it: a local path absolute; URLs
    (gs://, s3://, https://), names that are not paths (a list's name) and empty values as
    they are."""
    if not path or "://" in path:
        return path
    return os.path.abspath(path) if os.path.exists(path) or os.sep in path else path


def worker_paths(settings: Any) -> Any:
    """``settings`` (a config dataclass) with every field marked a path made absolute
    (:func:`worker_path`), nested dataclasses included."""
    changes = {}
    for field in dataclasses.fields(settings):
        value = getattr(settings, field.name)
        kind = field.metadata.get("path")
        if dataclasses.is_dataclass(value):
            changes[field.name] = worker_paths(value)
        elif kind == PATH and isinstance(value, str):
            changes[field.name] = worker_path(value)
        elif kind == NAMED_PATHS:
            changes[field.name] = tuple(_named(entry) for entry in value)
    return dataclasses.replace(settings, **changes) if changes else settings


def _named(entry: str) -> str:
    name, sep, path = entry.partition("=")
    return f"{name}={worker_path(path.strip())}" if sep else entry


def _choices(values: tuple) -> str:
    shown = [str(v) for v in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def is_number(value: Any) -> bool:
    """A finite int or float, not a bool."""
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value))


def rule_problem(value: Any, rule: Rule, optional: bool = False) -> Optional[str]:
    """Why ``value`` breaks ``rule`` (``must be ...``), or None when it keeps it."""
    if value is None:
        return None if optional else f"must be {rule} (not null)"
    if not is_number(value):
        return f"must be {'a whole number' if rule.integer else 'a finite number'} ({rule})"
    if rule.integer and value != int(value):
        return f"must be {rule}"
    return None if rule.holds(value) else f"must be {rule}"


def check_fields(config: Any, prefix: str = "") -> None:
    """Every field of ``config`` (and of the dataclasses nested in it) meets the rule beside it
    and, for ``Literal`` fields, is one of their values; every float is finite; the first that
    does not is a ConfigError naming it."""
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
        if rule is not None:
            problem = rule_problem(value, rule, _is_optional(hints[field.name]))
            if problem:
                raise ConfigError(f"{key}={value!r}: {problem}")
        elif isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}={value!r}: must be a finite number")


def _is_optional(annotation: Any) -> bool:
    return typing.get_origin(annotation) is typing.Union and type(None) in typing.get_args(annotation)


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
    if origin is tuple:
        return _coerce_tuple(value, args, key)
    if annotation in (int, float, str):
        if isinstance(value, (list, tuple, dict)) or (annotation is not str and isinstance(value, bool)):
            raise ConfigError(f"{key}: expected {annotation.__name__}, got {value!r}")
        if annotation is int and isinstance(value, float) and not value.is_integer():
            raise ConfigError(f"{key}: expected a whole number, got {value!r}")
        try:
            return annotation(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{key}: expected {annotation.__name__}, got {value!r}") from exc
    return value


def _coerce_tuple(value: Any, args: tuple, key: str) -> tuple:
    """A list setting: ``a,b`` or ``[a, b]`` on the command line, a YAML list in a file; each
    item coerced to the element type (``tuple[str, ...]``), or a fixed shape checked item by
    item (``tuple[int, float]``: ``top_n_grams=[[2, 0.2], [3, 0.18]]``)."""
    if isinstance(value, str):
        text = value.strip()
        nested = text[:1] == "[" and "[" in text[1:]
        if nested:  # a list of lists, typed on the command line: read as YAML
            try:
                value = read_settings_yaml(text)
            except yaml.YAMLError:
                raise ConfigError(f"{key}={value!r}: not a list ([[a, b], ...])") from None
        else:
            if text[:1] == "[" and text[-1:] == "]":  # a YAML list typed on the command line
                text = text[1:-1]
            value = [v.strip().strip("'\"") for v in text.split(",") if v.strip().strip("'\"")]
    if value is None:
        value = ()
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{key}={value!r}: expected a list")
    if len(args) == 2 and args[1] is Ellipsis:
        inner = typing.get_args(args[0]) if typing.get_origin(args[0]) is tuple else None
        if inner and any(not isinstance(item, (list, tuple)) for item in value):
            shape = ", ".join(getattr(a, "__name__", str(a)) for a in inner)
            raise ConfigError(f"{key}={list(value)!r}: expected a list of [{shape}] items, "
                              f"e.g. [[{', '.join('1' for _ in inner)}], ...]")
        return tuple(_coerce(item, args[0], f"{key}[{i}]") for i, item in enumerate(value))
    if args and len(value) != len(args):
        raise ConfigError(f"{key}={list(value)!r}: expected {len(args)} values "
                          f"({', '.join(getattr(a, '__name__', str(a)) for a in args)})")
    return tuple(_coerce(item, arg, f"{key}[{i}]") for i, (item, arg) in enumerate(zip(value, args))) \
        if args else tuple(value)


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


class _SettingsLoader(yaml.SafeLoader):
    """YAML as settings files are written: a key is the name the user typed. YAML 1.1 (PyYAML)
    reads a plain ``on``, ``off``, ``yes``, ``no`` (and ``y``, ``n``, ``true``...) as booleans, so
    ``near-dedup: {on: false}`` would name the setting True; here such a key stays its text.
    Values keep YAML's meaning (``on: yes`` is on = True)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            for key, _ in node.value:
                if (isinstance(key, yaml.ScalarNode) and key.tag == "tag:yaml.org,2002:bool"
                        and not key.style):
                    key.tag = "tag:yaml.org,2002:str"
        return super().construct_mapping(node, deep=deep)


def read_settings_yaml(stream: Any) -> Any:
    """YAML text (or a stream) read as a settings file: keys are the names written."""
    return yaml.load(stream, Loader=_SettingsLoader)  # noqa: S506 - a SafeLoader subclass


def load_yaml_mapping(path: str) -> dict:
    """A YAML file of settings as a dict; a syntax error, an unreadable file or a file that is
    not a mapping is a ConfigError with one line saying what and where. Every ``--config`` of
    every command is read through here (keys as written: :class:`_SettingsLoader`)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = read_settings_yaml(handle)
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
