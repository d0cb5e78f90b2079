"""Scale-up inputs whose copies are distinct text: N copies of a real crawl, each keeping the
crawl's structure, none repeating another's text.

Copying a crawl under new URLs (what bench_build did before) scales nothing after URL dedup:
line dedup removes every line of every copy after the first, so language ID, bad words and
near-dedup run on one copy's worth of text at any scale. Here copy 0 is the real crawl, byte for
byte, and copy k >= 1 is the same records with

- every letter word replaced through a per-copy bijection of the crawl's own vocabulary: words
  are classed by the language of the pages they occur in (fastText lid.176, the model the
  pipeline uses), their length and script, ranked by frequency within the class, and permuted
  within bands of ``BAND`` neighbouring ranks, so "the" becomes another frequent English word
  of three letters, never a rare or a German one; casing is kept letter by letter;
- scripts written without spaces (Han, kana, Hangul, Thai) mapped character by character the
  same way; every ASCII digit through a per-copy permutation of 0-9;
- the words C4's rules look for (lorem, ipsum, javascript, the policy phrases) and every word of
  the bad-word lists left as they are, and never produced from another word, so the rules fire
  on the same lines and pages;
- every URL's host renamed ``c<k>.<host>``.

A bijection keeps what dedup and the rules see within a copy: a line repeated in copy 0 is
repeated in copy k, near-duplicate pages stay near-duplicates, word and line lengths, terminal
punctuation, sentence marks and braces are unchanged. Across copies the text differs, so a real
crawl's cost is paid once per copy. tests/test_distinct_inputs.py checks both: every counter's
share per copy within a stated tolerance of the real crawl's, and cross-copy duplicate lines
near zero.

Copies are written once under .cache/bench-distinct/ (one folder per copy, reused by every
scale) and are the same bytes on every machine for the same base files (seeded).

    .venv/bin/python benchmarks/distinct_inputs.py 16     # prints the files of 16 copies
"""
from __future__ import annotations

import gzip
import hashlib
import os
import random
import re
import shutil
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "bench-distinct"
VERSION = 1
SEED = 20261125
BAND = 16
WORD = re.compile(r"[^\W\d_]+")
DIGITS = "0123456789"
UNSPACED = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "THAI")
# Words C4's rules and our bad-word lists key on: never mapped, never produced.
RULE_WORDS = {"lorem", "ipsum", "javascript", "terms", "of", "use", "privacy", "policy",
              "cookie", "cookies", "uses"}

sys.path.insert(0, str(ROOT))
# ../shared/data, or where C4FORGE_SHARED_DATA says (as tests/conftest.py reads it); not imported
# from the tests: `make bench`'s venv has no pytest
SHARED = Path(os.environ.get("C4FORGE_SHARED_DATA", ROOT.parent / "shared" / "data"))


def base_files() -> list[str]:
    """The 1x base: every WET file of the shared crawl and of crawl-extra (5,351 real pages)."""
    files = sorted(str(p) for p in (SHARED / "crawl").glob("*.wet.gz"))
    files += sorted(str(p) for p in (SHARED / "crawl-extra").glob("*.wet.gz"))
    missing = [p for p in ("crawl", "crawl-extra") if not (SHARED / p).exists()]
    if missing:
        raise SystemExit(f"shared data not found under {SHARED} (set C4FORGE_SHARED_DATA)")
    return files


def fixed_words(badwords_dir: Path) -> set[str]:
    words = set(RULE_WORDS)
    for path in badwords_dir.glob("*"):
        if path.is_file() and len(path.name) <= 3:
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                words.update(w.lower() for w in WORD.findall(line))
    return words


def script(char: str) -> str:
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else "OTHER"


def unspaced(char: str) -> bool:
    return script(char) in UNSPACED


def page_records(files: list[str]):
    from c4forge.corpus.read.records import iter_records

    for path in files:
        for record in iter_records(path):
            yield Path(path).name, record


class Vocabulary:
    """Per-copy bijections of the base crawl's words (and unspaced characters)."""

    def __init__(self, files: list[str], fixed: set[str]) -> None:
        from c4forge.corpus.langid.lid176 import predict

        counts: dict[str, Counter] = defaultdict(Counter)   # word -> language -> occurrences
        chars: Counter = Counter()
        for _, record in page_records(files):
            if record.type != "conversion":
                continue
            text = record.body.decode("utf-8", "replace")
            language = predict(text)[0]
            for token, n in Counter(WORD.findall(text)).items():
                if unspaced(token[0]):
                    chars.update({c: k * n for c, k in Counter(token).items()})
                    continue
                lower = token.lower()
                if len(lower) == len(token) and lower not in fixed:
                    counts[lower][language] += n
        classes: dict[tuple, list[tuple[int, str]]] = defaultdict(list)
        for word, by_language in counts.items():
            language, _ = by_language.most_common(1)[0]
            classes[(language, len(word), script(word[0]))].append((-sum(by_language.values()), word))
        self.word_classes = {key: [w for _, w in sorted(members)] for key, members in classes.items()}
        char_classes: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for char, n in chars.items():
            char_classes[script(char)].append((-n, char))
        self.char_classes = {key: [c for _, c in sorted(members)]
                             for key, members in char_classes.items()}

    @staticmethod
    def _permute(ranked: list[str], rng: random.Random) -> dict[str, str]:
        table = {}
        for start in range(0, len(ranked), BAND):
            band = ranked[start:start + BAND]
            shuffled = band[:]
            rng.shuffle(shuffled)
            table.update(zip(band, shuffled))
        return table

    def tables(self, copy: int) -> tuple[dict[str, str], dict[str, str], dict[int, int]]:
        """(word map, character map, digit translation) of copy ``copy`` (>= 1)."""
        words: dict[str, str] = {}
        for key in sorted(self.word_classes):
            words.update(self._permute(self.word_classes[key], random.Random(f"{SEED}/{copy}/w/{key}")))
        chars: dict[str, str] = {}
        for key in sorted(self.char_classes):
            chars.update(self._permute(self.char_classes[key], random.Random(f"{SEED}/{copy}/c/{key}")))
        digits = list(DIGITS)
        random.Random(f"{SEED}/{copy}/d").shuffle(digits)
        return words, chars, str.maketrans(DIGITS, "".join(digits))


def cased_like(word: str, model: str) -> str:
    """``word`` with the casing of ``model`` (same length) letter by letter."""
    return "".join(c.upper() if m.isupper() and len(c.upper()) == 1 else c
                   for c, m in zip(word, model))


def map_text(text: str, words: dict[str, str], chars: dict[str, str], digits: dict[int, int]) -> str:
    def replace(match: re.Match) -> str:
        token = match.group(0)
        if unspaced(token[0]):
            return "".join(chars.get(c, c) for c in token)
        lower = token.lower()
        mapped = words.get(lower)
        if mapped is None or len(lower) != len(token):
            return token
        return cased_like(mapped, token)

    return WORD.sub(replace, text).translate(digits)


def rewrite(record, copy: int, tables) -> bytes:
    """The record as copy ``copy`` (>= 1) holds it (WARC bytes, one record)."""
    headers = dict(record.headers)
    body = record.body
    uri = headers.get("WARC-Target-URI")
    if uri and "://" in uri:
        scheme, rest = uri.split("://", 1)
        headers["WARC-Target-URI"] = f"{scheme}://c{copy}.{rest}"
    if record.type == "conversion":
        body = map_text(body.decode("utf-8", "replace"), *tables).encode("utf-8")
    headers["Content-Length"] = str(len(body))
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return f"WARC/1.0\r\n{head}\r\n".encode() + body + b"\r\n\r\n"


def tag_of(files: list[str]) -> str:
    digest = hashlib.sha1(f"v{VERSION}/{SEED}/{BAND}".encode())
    for path in files:
        digest.update(Path(path).name.encode() + str(os.path.getsize(path)).encode())
    return digest.hexdigest()[:10]


def distinct_copies(copies: int, files: list[str] | None = None, log=None) -> list[str]:
    """The WET files of copies 0..``copies``-1 (written where missing; one gzip member per
    record, as in Common Crawl)."""
    files = files or base_files()
    root = CACHE / tag_of(files)
    vocabulary = None
    out = []
    for copy in range(copies):
        folder = root / f"copy-{copy:03d}"
        done = folder / "complete"
        if not done.exists():
            if copy and vocabulary is None:
                if log:
                    log("classing the base crawl's vocabulary (once)")
                vocabulary = Vocabulary(files, fixed_words(SHARED / "badwords"))
            if log:
                log(f"writing distinct copy {copy}")
            folder.mkdir(parents=True, exist_ok=True)
            if not copy:  # the real crawl, byte for byte
                for path in files:
                    shutil.copyfile(path, folder / f"c000-{Path(path).name}")
                done.write_text("ok\n")
                out += sorted(str(p) for p in folder.glob("*.wet.gz"))
                continue
            tables = vocabulary.tables(copy)
            by_file: dict[str, list] = defaultdict(list)
            for name, record in page_records(files):
                by_file[name].append(record)
            for name, records in by_file.items():
                with open(folder / f"c{copy:03d}-{name}", "wb") as handle:
                    for record in records:
                        handle.write(gzip.compress(rewrite(record, copy, tables), 6, mtime=0))
            done.write_text("ok\n")
        out += sorted(str(p) for p in folder.glob("*.wet.gz"))
    return out


if __name__ == "__main__":
    for path in distinct_copies(int(sys.argv[1]) if len(sys.argv) > 1 else 2, log=print):
        print(os.path.relpath(path, ROOT))
