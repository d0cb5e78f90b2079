"""datatrove's English words without building spaCy Docs: spaCy 3.8's blank ``en`` tokenizer
(``spacy/tokenizer.pyx``), step for step, over its own rules, with every whitespace-separated
chunk tokenized once per process.

What spaCy does to a text, and how this module does the same:

1. **Chunks.** The text is cut into maximal runs of whitespace and of anything else
   (``str.isspace``, as spaCy's loop); the one space right after a chunk is the chunk's trailing
   space, any other whitespace run is a token of its own. Here: one ``re`` pass with ``\\s+``
   (CPython's ``\\s`` is ``str.isspace``).
2. **A chunk's tokens** (``Tokenizer._tokenize``): a special case as a whole (the 1,347 rules:
   ``don't``, ``a.m.``, ``:-)``...); else prefixes and suffixes split off one by one
   (``_split_affixes``: spaCy's own compiled prefix and suffix regexes, stopping at a special
   case), then what is left is kept whole where it is a special case or a URL (``url_match``)
   and split at its infixes otherwise (``_attach_tokens``). The commonest chunks skip the regexes
   (``_letters``): letters only (``str.isalpha``) are one token, as every prefix, suffix and
   infix of spaCy's English needs a character that is not a letter; letters with one mark
   that spaCy always splits off (``word,`` ``(word``) are two; tests/test_en_words.py asks
   spaCy so of letters from every script. A chunk's
   tokens depend on the chunk
   alone (spaCy caches them by the chunk's hash the same way), so each distinct chunk is worked
   out once per process and looked up after that (``CACHE_CHUNKS``).
3. **Special cases across tokens** (``_apply_special_cases``): spaCy's PhraseMatcher finds every
   run of tokens equal to a special case's own tokenization (for the rules that affixes or
   infixes would split), keeps the longest non-overlapping ones, and replaces each whose text is
   a rule by the rule's pieces. A run that crosses whitespace is never a rule, but it can shadow
   a shorter one it overlaps: so this runs over the whole text's tokens, as spaCy's does, and
   only on texts holding a token a pattern starts with.

datatrove then strips every token and leaves out the empty ones (the whitespace tokens).
``tests/test_en_words.py`` checks the words are spaCy's, token for token, on every real page and
on generated strings biased to the rules' edges; ``self_check`` does so at start on a fixed set.
"""
from __future__ import annotations

import functools
import importlib.metadata
import json
import re
import unicodedata
from collections.abc import Callable
from itertools import chain
from pathlib import Path
from typing import NamedTuple, Optional

from c4forge.core.io import atomic_write
from c4forge.corpus.text.affix_search import InfixSearch, SuffixSearch

RULES_FILE = Path(__file__).parents[1] / "data" / "spacy-en-tokenizer.json"

CACHE_CHUNKS = 1 << 20  # distinct chunks kept per process (then the table starts again)
WHITESPACE = re.compile(r"\s+")
# one character spaCy's English splits off letters whatever they are (:meth:`EnglishWords._letters`)
ALWAYS_SUFFIX = frozenset(',:?)!;"”\'’…]}>*')
ALWAYS_PREFIX = frozenset('("“[\'‘{<*¿¡#$')
RUN_BREAK = re.compile(r"[^\S ]\s*| \s+")  # whitespace other than one space: a token of its own
IS_ALPHA = "IS_ALPHA"  # spaCy raises on this string (datatrove's workaround): left to spaCy


class TokenizerRules(NamedTuple):
    """What spaCy's blank English tokenizer is made of, as data (corpus/data/spacy-en-tokenizer.json
    holds spaCy 3.8.18's, so a process that splits words need not import spaCy: 1.8 CPU s and
    0.5 GB): its prefix, suffix, infix and URL regexes (Python ``re``, as spaCy compiles them),
    its special cases, and spaCy's own words for the self-check texts."""

    spacy: str
    prefix: Optional[str]
    suffix: Optional[str]
    infix: Optional[str]
    token_match: Optional[str]
    url_match: Optional[str]
    flags: int
    faster_heuristics: bool
    rules: dict[str, tuple[str, ...]]
    checks: dict[str, tuple[str, ...]]
    sentence_ends: tuple[str, ...] = ()  # the sentencizer's punctuation (``punct_chars``)


def rules_of(tokenizer, checks: dict[str, tuple[str, ...]], sentence_ends=()) -> TokenizerRules:
    """The rules of a live spaCy tokenizer (``spacy.blank("en").tokenizer``) and sentencizer."""
    from spacy.attrs import ORTH  # lazy: spaCy's import is 1.8 CPU s; only to read its rules

    def pattern(function) -> Optional[str]:
        return function.__self__.pattern if function is not None else None

    flags = {f.__self__.flags for f in (tokenizer.prefix_search, tokenizer.suffix_search,
                                        tokenizer.infix_finditer, tokenizer.url_match) if f is not None}
    if len(flags) > 1:
        raise ValueError(f"spaCy's tokenizer regexes have different flags {flags}")
    return TokenizerRules(
        spacy=installed_spacy(), prefix=pattern(tokenizer.prefix_search), suffix=pattern(tokenizer.suffix_search),
        infix=pattern(tokenizer.infix_finditer), token_match=pattern(tokenizer.token_match),
        url_match=pattern(tokenizer.url_match), flags=flags.pop() if flags else 0,
        faster_heuristics=bool(tokenizer.faster_heuristics),
        rules={key: tuple(spec.get(ORTH, spec.get("ORTH")) for spec in pieces)
               for key, pieces in tokenizer.rules.items()},
        checks=checks, sentence_ends=tuple(sorted(sentence_ends)))


def installed_spacy() -> Optional[str]:
    try:
        return importlib.metadata.version("spacy")
    except importlib.metadata.PackageNotFoundError:
        return None


def load_rules(path: Optional[Path] = None) -> TokenizerRules:
    """The rules stored with the package (or in ``path``); raises OSError, ValueError (JSON),
    KeyError or TypeError (a file of another shape): corpus/text/words.py says which file."""
    data = json.loads((path or RULES_FILE).read_text(encoding="utf-8"))
    return TokenizerRules(**{**data, "rules": {k: tuple(v) for k, v in data["rules"].items()},
                             "checks": {k: tuple(v) for k, v in data["checks"].items()},
                             "sentence_ends": tuple(data.get("sentence_ends", ()))})


def save_rules(rules: TokenizerRules, path: Path = RULES_FILE) -> None:
    with atomic_write(str(path)) as handle:
        handle.write(json.dumps(rules._asdict(), ensure_ascii=False, indent=0, sort_keys=True) + "\n")


class EnglishWords:
    """spaCy's tokenizer of a ``spacy.blank("en")`` pipeline (module doc), from its rules."""

    def __init__(self, rules: TokenizerRules) -> None:
        def compiled(pattern: Optional[str]):
            return re.compile(pattern, rules.flags) if pattern is not None else None

        prefix, suffix, infix = compiled(rules.prefix), compiled(rules.suffix), compiled(rules.infix)
        token_match, url_match = compiled(rules.token_match), compiled(rules.url_match)
        self.prefix_search: Optional[Callable] = prefix.search if prefix else None
        # the suffix's length and the infixes as the patterns' search and finditer give them,
        # asked only where a match can be (corpus/text/affix_search.py)
        self.suffix_length: Optional[Callable[[str], int]] = \
            SuffixSearch(suffix.pattern, suffix.flags).length if suffix else None
        self.infix_list: Optional[Callable[[str], list]] = \
            InfixSearch(infix.pattern, infix.flags).finditer if infix else None
        self.token_match: Optional[Callable] = token_match.match if token_match else None
        self.url_match: Optional[Callable] = url_match.match if url_match else None
        self.rules: dict[str, tuple[str, ...]] = dict(rules.rules)
        self.spacy, self.checks = rules.spacy, rules.checks  # spaCy's words for the self-check
        self.sentence_ends = frozenset(rules.sentence_ends)
        self.cache: dict[str, tuple[str, ...]] = {}
        self.unsafe: set[str] = set()  # cached chunks a special case inside would change (step 3)
        # words chunk by chunk (:meth:`words`) hold only while no rule's key has whitespace
        # beside other characters (spaCy 3.8's English: none; its whitespace keys are one character)
        self.chunkwise = not any(len(key) > 1 and any(c.isspace() for c in key) for key in self.rules)
        self.patterns: dict[str, list[tuple[str, ...]]] = {}  # first token -> the patterns it starts
        for key in sorted(self.rules):
            if (not rules.faster_heuristics or self._prefix(key) or self._suffix(key)
                    or self._infixes(key) or " " in key):
                pattern = tuple(self.text_tokens(key, specials=False))
                self.patterns.setdefault(pattern[0], []).append(pattern)
        self.alone = {p[0] for found in self.patterns.values() for p in found if len(p) == 1}

    # ------------------------------------------------------------------ one chunk

    def _prefix(self, string: str) -> int:
        match = self.prefix_search(string) if self.prefix_search is not None else None
        return match.end() - match.start() if match is not None else 0

    def _suffix(self, string: str) -> int:
        return self.suffix_length(string) if self.suffix_length is not None else 0

    def _infixes(self, string: str) -> list:
        return self.infix_list(string) if self.infix_list is not None else []

    def chunk(self, string: str, specials: bool = True) -> tuple[str, ...]:
        """The tokens of one span between whitespace (``_tokenize``), cached per process (the
        table is emptied between texts, in :meth:`words`, once it holds ``CACHE_CHUNKS``)."""
        if not specials:
            prefixes, rest, suffixes = self._split_affixes(string, specials)
            return (*prefixes, *self._attach(rest, specials), *reversed(suffixes))
        found = self.cache.get(string)
        if found is not None:
            return found
        tokens, unsafe = self.work_out(string)
        self.cache[string] = tokens
        if unsafe:
            self.unsafe.add(string)
        return tokens

    def work_out(self, string: str) -> tuple[tuple[str, ...], bool]:
        """A chunk's tokens, not cached, and whether the special-case pass could change them in
        context (:meth:`_changed_inside`): what :meth:`chunk` keeps, and what
        corpus/text/chunk_table.py keeps in its own table."""
        tokens = self.rules.get(string)
        if tokens is None:
            tokens = self._letters(string)
        if tokens is None:
            prefixes, rest, suffixes = self._split_affixes(string, True)
            tokens = (*prefixes, *self._attach(rest, True), *reversed(suffixes))
        if len(tokens) == 1 and tokens[0] not in self.alone:
            return tokens, False  # the commonest case of _changed_inside, without the call
        return tokens, self._changed_inside(tokens)

    def _letters(self, string: str) -> Optional[tuple[str, ...]]:
        """The tokens of the commonest chunks without the regexes: letters only (one token), or
        letters with one punctuation mark before or after that spaCy's English always splits off
        (``word,`` ``(word`` ``word?``; ``word.`` where the last letter is a-z and ``word`` is no
        special case), the letters then a special case's pieces where they are one; ASCII words
        joined by hyphens (``state-of-the-art``), split at each. None for
        any other chunk (the regexes decide). tests/test_en_words.py asks spaCy so."""
        if string.isalpha():
            return (string,)  # no prefix, suffix or infix of spaCy's English is letters only
        if len(string) < 2:
            return None
        if "-" in string:  # well-known: the hyphen between ASCII letters is an infix
            parts = string.split("-")
            if all(part.isascii() and part.isalpha() for part in parts):
                return tuple(piece for part in parts for piece in ("-", part))[1:]
            return None
        stem, last = string[:-1], string[-1]
        if stem.isalpha():
            if last in ALWAYS_SUFFIX:
                return (*self.rules.get(stem, (stem,)), last)
            if last == "." and "a" <= stem[-1] <= "z" and stem not in self.rules:
                return (stem, last)
            return None
        first, rest = string[0], string[1:]
        if first in ALWAYS_PREFIX and rest.isalpha():
            return (first, *self.rules.get(rest, (rest,)))
        return None

    def _changed_inside(self, tokens: tuple[str, ...]) -> bool:
        """Whether any special-case pattern found among one chunk's tokens has a rule other
        than those tokens (step 3). Where none has, the pass cannot change the chunk's tokens
        whatever surrounds it: a match across chunks holds whitespace, and no rule's key with
        whitespace is longer than that one character (``chunkwise``); and a match that
        shadows another only keeps tokens the other would have kept."""
        if len(tokens) == 1 and tokens[0] not in self.alone or self.patterns.keys().isdisjoint(tokens):
            return False  # (one token: only a one-token pattern could match it)
        for start, token in enumerate(tokens):
            for pattern in self.patterns.get(token, ()):
                if tokens[start:start + len(pattern)] == pattern and self.rules.get("".join(pattern)) != pattern:
                    return True
        return False

    def _split_affixes(self, string: str, specials: bool) -> tuple[list[str], str, list[str]]:
        prefixes: list[str] = []
        suffixes: list[str] = []
        last_size = 0
        rules = self.rules if specials else {}
        while string and len(string) != last_size:
            if self.token_match is not None and self.token_match(string):
                break
            if string in rules:
                break
            last_size = len(string)
            pre_len = self._prefix(string)
            if pre_len:
                prefix, minus_pre = string[:pre_len], string[pre_len:]
                if minus_pre and minus_pre in rules:
                    prefixes.append(prefix)
                    string = minus_pre
                    break
            suf_len = self._suffix(string[pre_len:])
            if suf_len:
                suffix, minus_suf = string[-suf_len:], string[:-suf_len]
                if minus_suf and minus_suf in rules:
                    suffixes.append(suffix)
                    string = minus_suf
                    break
            if pre_len and suf_len and pre_len + suf_len <= len(string):
                string = string[pre_len:-suf_len]
                prefixes.append(prefix)
                suffixes.append(suffix)
            elif pre_len:
                string = minus_pre
                prefixes.append(prefix)
            elif suf_len:
                string = minus_suf
                suffixes.append(suffix)
        return prefixes, string, suffixes

    def _attach(self, string: str, specials: bool) -> tuple[str, ...]:
        """What is left between the affixes (``_attach_tokens``)."""
        if not string:
            return ()
        if specials and string in self.rules:
            return self.rules[string]
        if (self.token_match is not None and self.token_match(string)) or \
                (self.url_match is not None and self.url_match(string)):
            return (string,)
        matches = self._infixes(string)
        if not matches:
            return (string,)
        tokens = []
        start = 0
        for match in matches:
            infix_start, infix_end = match.start(), match.end()
            if infix_start == 0:  # spaCy: an infix at the very start is no split
                continue
            if infix_start != start:
                tokens.append(string[start:infix_start])
            if infix_start != infix_end:
                tokens.append(string[infix_start:infix_end])
            start = infix_end
        if string[start:]:
            tokens.append(string[start:])
        return tuple(tokens)

    # ------------------------------------------------------------------ a whole text

    def text_tokens(self, text: str, specials: bool = True) -> list[str]:
        """Every token spaCy's tokenizer gives ``text`` before its special-case pass, whitespace
        tokens included (``_tokenize_affixes``)."""
        tokens: list[str] = []
        at = 0
        for space in WHITESPACE.finditer(text):
            start, end = space.span()
            if start > at:
                tokens.extend(self.chunk(text[at:start], specials))
            if start > 0 and text[start] == " ":
                start += 1  # the space after a chunk is its trailing space, not a token
            if end > start:
                tokens.extend(self.chunk(text[start:end], specials))
            at = end
        if at < len(text):
            tokens.extend(self.chunk(text[at:], specials))
        return tokens

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``spacy.blank("en").make_doc(text)``, whitespace tokens included."""
        tokens = self.text_tokens(text)
        patterns = self.patterns
        if any(token in patterns for token in tokens):
            tokens = self._special_spans(tokens, text)
        return tokens

    def _special_spans(self, tokens: list[str], text: str) -> list[str]:
        """spaCy's ``_apply_special_cases``: the matches of the special cases' patterns, longest
        first (then the leftmost), each kept unless a longer or earlier one took its first or
        last token, and a kept one replaced by its rule where its text is a rule's key."""
        matches = []
        firsts = self.patterns.keys() & set(tokens)
        for start in [i for i, token in enumerate(tokens) if token in firsts]:
            for pattern in self.patterns[tokens[start]]:
                end = start + len(pattern)
                if tuple(tokens[start:end]) == pattern:
                    matches.append((start, end))
        if not matches:
            return tokens
        matches.sort(key=lambda m: (m[1] - m[0], -m[0]))
        seen: set[int] = set()
        kept = []
        for start, end in reversed(matches):
            if start not in seen and end - 1 not in seen:
                kept.append((start, end))
            seen.update(range(start, end))
        spacing: Optional[list[bool]] = None  # worked out only for a span that could be a rule
        out: list[str] = []
        at = 0
        for start, end in sorted(kept):
            out.extend(tokens[at:start])
            piece = tokens[start:end]
            rule = self.rules.get("".join(piece))
            if self.chunkwise and (rule is None or list(rule) == piece):
                out.extend(piece)  # spaced, its text is no rule's key; unspaced, the rule is the piece
            else:
                spacing = spacing or _trailing_spaces(tokens, text)
                span_text = "".join(tokens[i] + (" " if spacing[i] and i < end - 1 else "") for i in range(start, end))
                out.extend(self.rules.get(span_text, piece))
            at = end
        out.extend(tokens[at:])
        return out

    def words(self, text: str) -> tuple[str, ...]:
        """datatrove's ``split_into_words(text, "eng")``: the tokens stripped, the empty ones left
        out. Those are the whitespace tokens (a chunk's tokens hold no whitespace), so the words
        are the chunks' cached tokens one after another, unless a chunk holds a special case
        that step 3 would change: then the whole pass, as spaCy's."""
        if len(self.cache) >= CACHE_CHUNKS:
            self.cache.clear()
            self.unsafe.clear()
        chunks = text.split()
        cache = self.cache
        if not chunks:
            return ()
        try:
            parts = list(map(cache.__getitem__, chunks))
        except KeyError:  # the chunks new to this process worked out once each, then looked up
            found = {new: self.chunk(new) for new in set(chunks).difference(cache)}
            try:
                parts = list(map(cache.__getitem__, chunks))
            except KeyError:  # a chunk() that keeps nothing (tests replace it)
                parts = [found.get(c) or cache[c] for c in chunks]
        if not self.chunkwise:
            return stripped(self.tokens(text))
        if self.unsafe and not self.unsafe.isdisjoint(chunks):
            return self._words_by_run(text)
        return tuple(chain.from_iterable(parts))

    def _words_by_run(self, text: str) -> tuple[str, ...]:
        """The words of a text holding a chunk that step 3 changes: step 3 over each run of
        chunks joined by single spaces that holds one, the cached tokens elsewhere. No
        special-case pattern crosses a whitespace token (the only pattern holding one is
        ``(" ",)`` alone), and any other whitespace than one space between chunks is a token, so
        step 3's matches, and which of them shadow which, stay inside a run."""
        words: list[str] = []
        cache, unsafe = self.cache, self.unsafe
        for run in RUN_BREAK.split(text):
            chunks = run.split()
            if unsafe.isdisjoint(chunks):
                words.extend(chain.from_iterable(map(cache.__getitem__, chunks)))
            else:
                words.extend(stripped(self.tokens(run)))
        return tuple(words)


def stripped(tokens: list[str]) -> tuple[str, ...]:
    return tuple(token for token in (t.strip() for t in tokens) if token)


def _trailing_spaces(tokens: list[str], text: str) -> list[bool]:
    """Whether each token is followed by the one space spaCy keeps as its ``whitespace_`` (what
    a span's ``.text`` puts between its tokens): the last token of a chunk that a space follows.
    Tokens lie in the text in order, a skipped space at most between two."""
    spaces = []
    at = 0
    for token in tokens:
        if not text.startswith(token, at):
            at += 1  # the space after the chunk before
        at += len(token)
        spaces.append(at < len(text) and text[at] == " " and not token.isspace())
    return spaces


def sentences_among(tokens: list[str], sentence_ends: frozenset) -> int:
    """The sentences spaCy's sentencizer finds among a text's tokens (``Sentencizer.predict``):
    after a token in its punctuation, the next token that is neither that nor punctuation
    (``is_punct``: every character in a Unicode P category) starts a sentence; whitespace tokens
    count as tokens, as in spaCy."""
    if not tokens:
        return 0
    sentences, seen_end = 1, False
    for token in tokens:
        is_end = token in sentence_ends
        if seen_end and not is_end and not _is_punct(token):
            sentences += 1
            seen_end = False
        elif is_end:
            seen_end = True
    return sentences


@functools.lru_cache(maxsize=1 << 16)
def _is_punct(token: str) -> bool:
    """spaCy's ``lex_attrs.is_punct``."""
    return all(unicodedata.category(c).startswith("P") for c in token)
