"""Fuzz harnesses for the code that reads bytes nobody here wrote (issue 42). Each takes one
input (bytes) and checks the contract, not just "no crash":

- ``records``: the WARC/WET record reader (gzip layer + record parser) on raw bytes, plain and
  gzip, one or many members: only the project's own errors, bounded output per input;
- ``resync``: valid records from the seed files with fuzzed garbage between them: every valid
  record is still read, and the garbage is counted (``skipped:*``) when it is not itself a record;
- ``response``: a WARC response block (HTTP headers, chunked/compressed bodies, charsets) to
  extracted text: str or None with a counted reason, only the project's errors;
- ``manifests``: corpus and token manifest readers on arbitrary JSON-ish bytes: a dict or the
  format's own error;
- ``settings``: ``--set`` words and YAML settings files to the stage configs: a config or a
  ConfigError;
- ``words``: any text to datatrove's English words (corpus/text/en_words.py): exactly spaCy's.

Driven by atheris (``make fuzz``: coverage-guided, tests/fuzz/run.py) and by a short smoke run
in ``make test`` (tests/test_fuzz_smoke.py: the seeds and random mutations of them).
"""
from __future__ import annotations

import gzip
import io
import os
import random
import tempfile
from collections.abc import Callable

from c4forge.core.counters import Counters
from c4forge.core.errors import C4forgeError
from c4forge.corpus.read.gzip_members import BREAK, decompressed_pieces
from c4forge.corpus.read.options import ReadOptions
from c4forge.corpus.read.records import _RecordParser

# Small bounds: a fuzz input may claim gigabytes; the reader must not take them.
OPTIONS = ReadOptions(max_record_bytes=1 << 16, max_member_bytes=1 << 20)
MAX_OUTPUT = 64 << 20  # bytes of records one input may produce (inputs are at most a few MB)


class ContractBroken(AssertionError):
    """A harness's contract does not hold for this input (a finding)."""


def read_records(data: bytes, options: ReadOptions = OPTIONS) -> tuple[list, dict]:
    """(records, counters) of ``data`` read as a crawl file, through the reader's own layers."""
    counters = Counters()
    inc = counters.inc_fn("r")
    parser = _RecordParser("fuzz", inc, options)
    records = []
    for piece in decompressed_pieces(io.BytesIO(data), inc, options):
        if piece is BREAK:
            parser.brk()
        else:
            records.extend(parser.feed(*piece))
    records.extend(parser.finish())
    return records, counters.as_dict()


def records(data: bytes) -> None:
    try:
        found, _ = read_records(data)
    except C4forgeError:
        return
    if sum(len(r.body) for r in found) > MAX_OUTPUT:
        raise ContractBroken("the reader produced more than its bound")
    for record in found:
        if len(record.body) > OPTIONS.max_record_bytes:
            raise ContractBroken(f"a record of {len(record.body)} bytes passed max_record_bytes")


def _split(data: bytes, parts: int) -> list[bytes]:
    step = max(1, len(data) // max(1, parts))
    return [data[i:i + step] for i in range(0, len(data), step)][:parts] or [b""]


def resync(data: bytes, seeds: list[bytes] | None = None) -> None:
    """Valid records (gzip members of the seed WET file) with ``data``'s pieces of garbage
    between them: every valid record is read, in order."""
    valid = seeds or SEED_RECORDS()
    garbage = [g.replace(b"WARC/", b"WARC.").replace(b"\x1f\x8b", b"\x1f\x00") for g in _split(data, len(valid))]
    stream = b"".join(member + junk for member, junk in zip(valid, garbage + [b""] * len(valid)))
    found, counters = read_records(stream)
    want = [read_records(member)[0][0].header("WARC-Record-ID") for member in valid]
    got = [r.header("WARC-Record-ID") for r in found]
    missing = [w for w in want if w not in got]
    if missing:
        raise ContractBroken(f"{len(missing)} valid record(s) lost to garbage between records: {missing[:2]}")
    if any(g.strip() for g in garbage) and not any(k.startswith("r/skipped:") for k in counters):
        raise ContractBroken("garbage between records was not counted")


def response(data: bytes) -> None:
    from c4forge.corpus.extract.html import response_text

    counters = Counters()
    for extractor in ("resiliparse", "trafilatura"):
        try:
            text = response_text(data, "https://fuzz.example/page", lambda name: "", extractor,
                                 timeout=5.0, max_html_bytes=1 << 20, inc=counters.inc_fn("r"))
        except C4forgeError:
            continue
        if text is not None and not isinstance(text, str):
            raise ContractBroken(f"{extractor}: extracted {type(text).__name__}, not text")


def manifests(data: bytes) -> None:
    from c4forge.corpus.output.shards import CorpusFormatError, manifest_path, read_manifest
    from c4forge.tokenizer.formats import MANIFEST, TokenFormatError, read_token_manifest

    with tempfile.TemporaryDirectory() as tmp:
        with open(manifest_path(tmp), "wb") as handle:
            handle.write(data)
        with open(os.path.join(tmp, MANIFEST), "wb") as handle:
            handle.write(data)
        for read, error in ((read_manifest, CorpusFormatError), (read_token_manifest, TokenFormatError)):
            try:
                manifest = read(tmp)
            except error:
                continue
            if not isinstance(manifest, dict):
                raise ContractBroken(f"{read.__name__} returned {type(manifest).__name__}")


def settings(data: bytes) -> None:
    from c4forge.core.settings import ConfigError, load_yaml_mapping, parse_overrides
    from c4forge.corpus.config import build_config
    from c4forge.train.config import build_train_config

    text = data.decode("utf-8", "replace")
    words = [w for w in text.split() if w][:16]
    for build in (lambda o: build_config("c4", overrides=o), lambda o: build_train_config(overrides=o)):
        try:
            build(words)
        except ConfigError:
            pass
    try:
        parse_overrides(words)
    except ConfigError:
        pass
    with tempfile.NamedTemporaryFile("wb", suffix=".yaml", delete=False) as handle:
        handle.write(data)
    try:
        try:
            mapping = load_yaml_mapping(handle.name)
        except ConfigError:
            return
        if not isinstance(mapping, dict):
            raise ContractBroken(f"load_yaml_mapping returned {type(mapping).__name__}")
        for build in (lambda m: build_config("c4", updates=m), lambda m: build_train_config(base=m)):
            try:
                build(mapping)
            except ConfigError:
                pass
    finally:
        os.unlink(handle.name)


def words(data: bytes) -> None:
    """Any text: the words corpus/text/en_words.py splits are spaCy's (corpus/text/words.py's reference)."""
    from c4forge.corpus.text.words import english_words, spacy_words

    text = data.decode("utf-8", "replace")
    if "IS_ALPHA" in text:  # left to spaCy by design (corpus/text/words.py)
        return
    ours, theirs = english_words().words(text), spacy_words(text)
    if ours != theirs:
        raise ContractBroken(f"words of {text[:200]!r}: {ours[:20]} != spaCy's {theirs[:20]}")


HARNESSES: dict[str, Callable[[bytes], None]] = {
    "records": records, "resync": resync, "response": response, "manifests": manifests,
    "settings": settings, "words": words}


_SEED_RECORDS: list[bytes] = []


def SEED_RECORDS() -> list[bytes]:  # noqa: N802 - a constant computed once
    """Eight gzip members of the embedded sample crawl, one record each (the resync base)."""
    if not _SEED_RECORDS:
        from c4forge.corpus.read.records import iter_records

        sample = os.path.join(os.path.dirname(__file__), "..", "..", "corpus", "data", "sample.warc.wet.gz")
        for record in iter_records(sample):
            if record.type == "conversion":
                head = "".join(f"{k}: {v}\r\n" for k, v in record.headers.items())
                raw = f"WARC/1.0\r\n{head}\r\n".encode() + record.body + b"\r\n\r\n"
                _SEED_RECORDS.append(gzip.compress(raw, mtime=0))
            if len(_SEED_RECORDS) == 8:
                break
    return _SEED_RECORDS


def seed_inputs(name: str) -> list[bytes]:
    """Seeds per harness: real bytes from the repository (and ../shared/data when present)."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    out: list[bytes] = []
    if name in ("records", "resync"):
        with open(os.path.join(root, "corpus", "data", "sample.warc.wet.gz"), "rb") as handle:
            data = handle.read()
        out += [data[:20000], gzip.decompress(data)[:20000], data[:3000] + b"junk" + data[3000:9000]]
        out += SEED_RECORDS()[:3]
    if name == "response":
        out += [b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body><p>"
                + b"Hello world. " * 40 + b"</p></body></html>",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n<html\r\n0\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n" + gzip.compress(b"<p>text</p>" * 30),
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=shift_jis\r\n\r\n<p>\x82\xa0\x82\xa2</p>"]
    if name == "manifests":
        with open(os.path.join(root, "tests", "golden", "build-shared-crawl.json"), "rb") as handle:
            out.append(handle.read()[:4000])
        out += [b'{"format": "c4forge-tokens", "version": 1}', b"[]", b'{"splits": null}', b"\xff\xfe"]
    if name == "words":
        out += [b"Hello, world!  It's 3.5 km.\n\nOK", "Don't (:-) a.m. 10km 1,000 \u00a0x".encode(),
                "See https://www.example.com/a?b=c#d, e-mail foo@bar.com; \u201cquoted\u201d\u2026".encode(),
                "\u65e5\u672c\u8a9e\u3002 \u041f\u0440\u0438\u0432\u0435\u0442! \U0001f600\U0001f44d\U0001f3fd y'all gonna?".encode()]
    if name == "settings":
        out += [b"max_page_chars=5000 languages=en,de", b"steps: 10\nmodel:\n  d_model: 64\n",
                b"optim.lr=abc", b"- a\n- b\n", b"a: [1, 2\n"]
    return out


def mutate(data: bytes, rng: random.Random) -> bytes:
    """A random edit of ``data`` (flip, insert, delete, duplicate, splice): the smoke run's
    stand-in for a coverage-guided fuzzer."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(5)
        pos = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(pos, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == 2 and b:
            del b[pos:pos + rng.randint(1, 64)]
        elif op == 3 and b:
            b[pos:pos] = b[max(0, pos - 32):pos]
        else:
            b[pos:pos] = rng.choice([b"WARC/1.0\r\n", b"Content-Length: 99999999\r\n", b"\r\n\r\n",
                                     b"\x1f\x8b\x08", b"WARC-Type: conversion\r\n", b"{", b"]", b": "])
    return bytes(b)
