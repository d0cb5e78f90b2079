"""The corpus stage's config: the chain, one settings object per step keyed by the step's name,
the reader's bounds and the rule samples; named presets, YAML files and ``key=value`` overrides.

    chain: [length, url-dedup, clean-page, line-dedup, language-id, bad-words, near-dedup]
    language-id: {languages: [en, de], threshold: 0.7}
    clean-page: {min_words_per_line: 3}

Presets are configs, not code paths:

- ``c4``: tfds c4 ``en`` v3.1.0 - length limit, URL dedup (newest), clean_page, line dedup,
  language ID, bad words (fraction 1.0) - then MinHash near-dedup, which tfds does not do
  (``near-dedup.on=false`` gives exactly tfds' documents).
- ``c4-noclean``: what T5 called C4 unfiltered (tfds ``en.noclean``) - only the length limit,
  URL dedup and language ID.
- ``mc4``: the mC4 recipe on our LID - paragraph filter, line dedup without the sentence check,
  every language, soft bad words (0.999).
- ``c4-warc``: C4's rules on main text extracted from WARC HTML.
- ``gopher``, ``fineweb``: MassiveWeb's and FineWeb's chains, exact to datatrove 0.10.

Every setting is checked where it is declared (each step's settings type carries its rules;
c4forge.core.settings), and a setting of a step that the chain does not hold is an error
naming the chains that hold it: a value never switches a rule off silently. The flat names of
earlier releases (``near_dedup``, ``badwords_fraction``, ``languages``, ``rules.*``...) are
read as the step settings they became (``LEGACY``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from c4forge.core.settings import (
    ConfigError,
    Rule,
    apply_settings,
    check_fields,
    load_yaml_mapping,
    merge_settings,
    nest,
    parse_overrides,
    setting,
    unknown_key_message,
    worker_paths,
)
from c4forge.corpus.chain.chains import C4_CHAIN, CHAINS, chain_names, chains_with, plan, step_of
from c4forge.corpus.chain.step import Step
from c4forge.corpus.extract.html import EXTRACTORS, missing_extractor
from c4forge.corpus.output.samples import SampleOptions
from c4forge.corpus.read.options import INPUT_FORMATS, ReadOptions
from c4forge.corpus.steps import REGISTRY

PER_MILLE = Rule("an integer from 0 to 1000", lambda v: 0 <= v <= 1000, integer=True)


@dataclasses.dataclass(frozen=True)
class StepSettings:
    """Every step's settings, keyed by the step's name: an immutable, hashable mapping (a worker
    keeps what a step loads per config: corpus/chain/step.py ``loaded``)."""

    items: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, mapping: Mapping[str, Any]) -> StepSettings:
        return cls(tuple(sorted(mapping.items())))

    def as_dict(self) -> dict[str, Any]:
        return dict(self.items)

    def get(self, name: str) -> Any:
        for key, value in self.items:
            if key == name:
                return value
        raise KeyError(name)

    def replace(self, name: str, value: Any) -> StepSettings:
        return StepSettings.of({**self.as_dict(), name: value})


def default_settings() -> StepSettings:
    """Each built-in step's settings at their defaults (the ``c4`` preset's)."""
    return StepSettings.of({name: step.settings() for name, step in REGISTRY.items()
                            if step.name != "read"})


@dataclasses.dataclass(frozen=True)
class CorpusConfig:
    """Every switch of the corpus stage (defaults = the ``c4`` preset; module doc).

    chain: the steps in order (``read`` first, implied): registered names (corpus/steps/) or a
        user's ``package.module:function``; a chain's name (c4, gopher, fineweb) in settings.
    steps: each step's settings by its name (``config.settings_of(name)``), set as
        ``<step>.<setting>`` (``--set language-id.threshold=0.7``).
    validation_per_mille: documents whose md5(normalised url) % 1000 is below this go to the
        validation split (tfds: 1, i.e. 0.1%).
    read: bounds of the crawl reader (corpus/read/options.py).
    rule_samples: what each rule did, sampled for ``corpus inspect`` (corpus/output/samples.py):
        per_rule (0: none), rate (share of pages traced), seed.
    """

    preset: str = "c4"
    chain: tuple[str, ...] = C4_CHAIN
    steps: StepSettings = dataclasses.field(default_factory=default_settings)
    validation_per_mille: int = setting(1, PER_MILLE)
    read: ReadOptions = ReadOptions()
    rule_samples: SampleOptions = SampleOptions()

    def settings_of(self, step: str | Step) -> Any:
        """The settings of a step, named or given: this config's; for a ``Step`` the config was
        not built with (a chain handed to a runner directly, as tests do), its defaults; for a
        name it does not hold, a ConfigError."""
        name = step.name if isinstance(step, Step) else step
        try:
            return self.steps.get(name)
        except KeyError:
            if isinstance(step, Step):
                return step.settings()
            raise ConfigError(f"no settings for step {name!r} (not in chain {', '.join(self.chain)})") from None

    def chain_steps(self) -> tuple[Step, ...]:
        """The steps of the chain (reading left out)."""
        return tuple(step_of(ref) for ref in self.chain)

    def runs(self, name: str) -> bool:
        """Whether the step named ``name`` is in the chain and switched on."""
        return any(step.name == name and step.enabled(self.settings_of(step)) for step in self.chain_steps())

    def to_dict(self) -> dict[str, Any]:
        """The config as its settings file would give it: the chain's steps' settings only."""
        out: dict[str, Any] = {"preset": self.preset, "chain": list(self.chain),
                               "validation_per_mille": self.validation_per_mille,
                               "read": dataclasses.asdict(self.read),
                               "rule_samples": dataclasses.asdict(self.rule_samples)}
        for step in self.chain_steps():
            out[step.name] = dataclasses.asdict(self.settings_of(step.name))
        return out

    def for_workers(self) -> CorpusConfig:
        """The same config with its local file paths made absolute (every setting declared a
        path): a portable runner's workers start in folders of their own, where a relative
        path names nothing."""
        steps = StepSettings.of({name: worker_paths(value) for name, value in self.steps.items})
        return dataclasses.replace(self, steps=steps, read=worker_paths(self.read))


PRESETS: dict[str, dict[str, Any]] = {
    "c4": {},
    "c4-noclean": {"clean-page": {"on": False}, "line-dedup": {"on": False},
                   "bad-words": {"on": False}, "near-dedup": {"on": False}},
    "mc4": {"clean-page": {"on": False}, "paragraph-filter": {"on": True},
            "language-id": {"languages": ()}, "bad-words": {"fraction": 0.999},
            "near-dedup": {"on": False}},
    # C4's rules on main text extracted from the WARC HTML (FineWeb's starting point) instead
    # of Common Crawl's WET text; every rule at C4's setting (README: "From WARC").
    "c4-warc": {"read": {"input_format": "warc", "extractor": "cascade"}},
    # MassiveWeb's rules (Rae et al. 2021) after language ID, then exact and MinHash dedup
    "gopher": {"chain": "gopher", "gopher-quality": {"on": True}, "gopher-repetition": {"on": True},
               "exact-dedup": {"on": True}},
    # FineWeb's chain in its order (Penedo et al. 2024; datatrove's examples/fineweb.py)
    "fineweb": {"chain": "fineweb", "url-dedup": {"on": False}, "length": {"on": False},
                "url-filter": {"on": True}, "gopher-repetition": {"on": True},
                "gopher-quality": {"on": True}, "c4-quality": {"on": True},
                "fineweb-quality": {"on": True}, "pii": {"on": True}},
}

GLOBAL_KEYS = ("chain", "validation_per_mille", "read", "rule_samples")
# The flat names of earlier releases -> the step settings they became (a whole group: "rules")
LEGACY: dict[str, str] = {
    "max_page_chars": "length.max_chars", "dedupe_urls": "url-dedup.on",
    "paragraph_filter": "paragraph-filter.on", "min_paragraphs": "paragraph-filter.min_paragraphs",
    "min_paragraph_len": "paragraph-filter.min_paragraph_len", "clean": "clean-page.on",
    "rules": "clean-page", "dedupe_exact": "exact-dedup.on", "dedupe_lines": "line-dedup.on",
    "languages": "language-id.languages", "lid_threshold": "language-id.threshold",
    "lid_model": "language-id.model", "badwords_fraction": "bad-words.fraction",
    "badwords": "bad-words.lists", "near_dedup": "near-dedup.on", "minhash": "near-dedup",
}


def canonical(updates: Mapping[str, Any], steps: Iterable[str]) -> dict[str, Any]:
    """``updates`` with step names spelled as registered (``gopher_quality`` ->
    ``gopher-quality``) and the flat names of earlier releases made the settings they became;
    an unknown key is a ConfigError with a did-you-mean."""
    steps = set(steps)
    out: dict[str, Any] = {}
    for key, value in updates.items():
        if not isinstance(key, str):
            raise ConfigError(unknown_key_message(str(key), key, ()))
        name = key.replace("_", "-")
        if key == "preset":
            raise ConfigError(f"preset={value!r}: a preset is chosen with --preset (a settings file "
                              "and --set go on top of it)")
        if key in GLOBAL_KEYS:
            found = {key: value}
        elif (key in steps or name in steps) and (isinstance(value, Mapping) or key not in LEGACY):
            found = {key if key in steps else name: value}  # (near_dedup=false is LEGACY's)
        elif key == "max_page_chars" and value in (None, "null", "none", "None"):
            found = {"length": {"on": False}}  # the old way to switch the limit off
        elif key in LEGACY:
            found = nest({LEGACY[key]: value}) if "." in LEGACY[key] else {LEGACY[key]: value}
        else:
            known = [*GLOBAL_KEYS, *sorted(steps), *LEGACY]
            raise ConfigError(unknown_key_message(key, key, known))
        out = merge_settings(out, found)
    return out


class Layers:
    """The settings given, layer by layer (preset, file, ``--set`` words, a variant's block,
    flags), merged; which steps each layer touched (a setting of a step the chain does not hold
    is refused by :func:`check_chain_holds`)."""

    def __init__(self) -> None:
        self.merged: dict[str, Any] = {}
        self.touched: dict[str, str] = {}  # step name -> who set it

    def add(self, updates: Mapping[str, Any], who: str) -> None:
        if not updates:
            return
        if "chain" in updates:  # resolved against the chain the layers below set (an extension)
            updates = {**updates, "chain": chain_names(updates["chain"], self.merged.get("chain", C4_CHAIN))}
        chain = updates.get("chain", self.merged.get("chain", C4_CHAIN))
        names = {*REGISTRY, *(step_of(ref).name for ref in chain_names(chain))}
        found = canonical(updates, names)
        for key in found:
            if key not in GLOBAL_KEYS:
                self.touched.setdefault(key, who)
        self.merged = merge_settings(self.merged, found)


def build_config(preset: str = "c4", file: Optional[str] = None,
                 overrides: Iterable[str] = (), updates: Optional[Mapping[str, Any]] = None,
                 flags: Optional[Mapping[str, tuple[str, Any]]] = None, **settings: Any) -> CorpusConfig:
    """Preset, then the YAML file, then ``key=value`` overrides, then a nested mapping of
    ``updates`` (an ablation variant's ``set:`` block), then the command line's flags (``flags``:
    flag -> (the setting it sets, its value); None means not given), then keyword settings
    (a caller's shorthand, the flat names of earlier releases included: ``badwords=DIR``).
    Every value is checked before any input is read."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    layers = Layers()
    layers.add(PRESETS[preset], f"preset {preset}")
    if file:
        layers.add(nest(load_yaml_mapping(file)), file)
    layers.add(parse_overrides(overrides), "--set")
    layers.add(updates or {}, "the variant's settings")
    for flag, (key, value) in (flags or {}).items():
        if value is not None:
            layers.add(nest({key: value}), flag)
    given = {k: v for k, v in settings.items() if v is not None}
    layers.add(nest(given), " and ".join(f"--{k.replace('_', '-')}" for k in given))
    config = apply_corpus_settings(CorpusConfig(preset=preset), layers.merged)
    return check_config(config, layers.touched)


def apply_corpus_settings(config: CorpusConfig, updates: Mapping[str, Any]) -> CorpusConfig:
    """``config`` with ``updates`` (canonical keys: :func:`canonical`) applied: the chain first
    (a user's steps bring their settings types), then the reader's and samples' settings,
    then each step's."""
    updates = dict(updates)
    if "chain" in updates:
        refs = chain_names(updates.pop("chain"))
        steps = config.steps.as_dict()
        for ref in refs:
            step = step_of(ref)
            steps.setdefault(step.name, step.settings())
        config = dataclasses.replace(config, chain=refs, steps=StepSettings.of(steps))
    globals_ = {key: updates.pop(key) for key in list(updates) if key in GLOBAL_KEYS}
    config = apply_settings(config, globals_)
    steps = config.steps.as_dict()
    for name, value in updates.items():
        if not isinstance(value, Mapping):
            fields = ", ".join(f.name for f in dataclasses.fields(steps[name]))
            raise ConfigError(f"{name} is a step's settings ({fields}); set {name}.<setting>=VALUE")
        steps[name] = apply_settings(steps[name], value, f"{name}.")
    return dataclasses.replace(config, steps=StepSettings.of(steps))


def check_config(config: CorpusConfig, touched: Mapping[str, str] = {}) -> CorpusConfig:
    """Every value of ``config`` where it is declared (each field's rule; each step's ``check``),
    and nothing set for a step its chain does not hold."""
    check_fields(config.read, "read.")
    check_fields(config.rule_samples, "rule_samples.")
    check_fields(dataclasses.replace(config, steps=StepSettings(), read=ReadOptions(),
                                     rule_samples=SampleOptions()))
    chain = config.chain_steps()
    check_chain_holds(config, chain, touched)
    for step in chain:
        settings = config.settings_of(step.name)
        check_fields(settings, f"{step.name}.")
        if step.check is not None:
            step.check(settings, config)
    plan(config)  # the chain's own rules (check_chain)
    return check_read_options(check_samples(config))


def check_chain_holds(config: CorpusConfig, chain: tuple[Step, ...], touched: Mapping[str, str]) -> None:
    """A step set by a preset or the user that the chain does not hold would do nothing: an
    error naming the chains that hold it."""
    names = {step.name for step in chain}
    for name, who in touched.items():
        if name in names or name == "read":
            continue
        holding = chains_with(name)
        where = (f"it runs in the {' and '.join(holding)} chain{'s' if len(holding) > 1 else ''} "
                 f"(--preset {holding[0]} or --set chain={holding[0]}), or add it to your chain's list"
                 if holding else "add it to the chain's list")
        raise ConfigError(f"{name}: set by {who}, but this config's chain ({_shown_chain(config)}) "
                          f"does not hold it, so it would do nothing; {where}")


def _shown_chain(config: CorpusConfig) -> str:
    for name, names in CHAINS.items():
        if tuple(config.chain) == names:
            return name
    return ", ".join(config.chain)


def check_samples(config: CorpusConfig) -> CorpusConfig:
    try:
        config.rule_samples.check()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return config


def check_read_options(config: CorpusConfig) -> CorpusConfig:
    if config.read.input_format not in INPUT_FORMATS:
        raise ConfigError(f"read.input_format={config.read.input_format!r}: choose {', '.join(INPUT_FORMATS)}")
    if config.read.extractor not in EXTRACTORS:
        raise ConfigError(f"read.extractor={config.read.extractor!r}: choose {', '.join(EXTRACTORS)}")
    missing = missing_extractor(config.read.extractor) if config.read.input_format != "wet" else None
    if missing:
        raise ConfigError(f"read.extractor: {missing}")
    if config.read.extract_timeout < 0 or config.read.max_html_bytes <= 0:
        raise ConfigError("read.extract_timeout must be >= 0 and read.max_html_bytes > 0")
    if not 0 <= config.read.max_slow_share <= 1:
        raise ConfigError("read.max_slow_share must be within [0, 1]")
    return config
