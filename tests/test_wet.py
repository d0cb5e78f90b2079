"""The crawl reader: every listed fault is a counted skip, and the good records around it are read."""
import collections
import gzip
import random
import tracemalloc
import types
import zlib

import pytest

from c4forge.core.counters import Counters
from c4forge.corpus.read.inputs import expand_inputs
from c4forge.corpus.read.options import CrawlReadError, ReadOptions
from c4forge.corpus.read.records import iter_records
from c4forge.corpus.read.warc import http_payload
from c4forge.corpus.read.wet import iter_crawl_documents, iter_file_documents, page_text
from tests.conftest import shared_path
from tests.wetfiles import WARCINFO, gzip_member, page, record, wet_file


def read(path, options=ReadOptions()):
    counters = Counters()
    docs = list(iter_crawl_documents(str(path), counters.inc_fn("r"), options))
    return docs, {k[2:]: v for k, v in counters.as_dict().items()}


def urls(docs):
    return [d.url for d in docs]


def write(tmp_path, data, name="f.warc.wet.gz"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def good(i):
    return record(f"http://example.com/{i}", page(i))


def test_split_wet_file_with_warcinfo(tmp_path):
    docs, counters = read(write(tmp_path, wet_file([good(i) for i in range(6)])))
    assert urls(docs) == [f"http://example.com/{i}" for i in range(6)]
    assert counters == {"wet-file": 1, "passed": 6, "skipped:record_type:warcinfo": 1}
    assert docs[0].timestamp == "2019-04-24T09:23:58Z"
    assert docs[0].normalized_url == "example.com/0"


def test_only_warcinfo(tmp_path):
    docs, counters = read(write(tmp_path, gzip_member(WARCINFO)))
    assert docs == [] and counters == {"wet-file": 1, "skipped:record_type:warcinfo": 1}


def test_empty_file(tmp_path):
    docs, counters = read(write(tmp_path, b""))
    assert docs == [] and counters == {"wet-file": 1, "skipped:empty_file": 1}


def test_truncated_gzip_keeps_records_before_the_cut(tmp_path):
    data = wet_file([good(i) for i in range(4)])
    docs, counters = read(write(tmp_path, data[:-30]))
    assert urls(docs) == [f"http://example.com/{i}" for i in range(3)]
    assert counters["skipped:truncated_gzip"] == 1


def test_corrupt_member_in_the_middle(tmp_path):
    members = [gzip_member(WARCINFO)] + [gzip_member(good(i)) for i in range(5)]
    bad = bytearray(members[3])
    bad[len(bad) // 2: len(bad) // 2 + 8] = b"\xff" * 8
    members[3] = bytes(bad)
    docs, counters = read(write(tmp_path, b"".join(members)))
    assert urls(docs) == [f"http://example.com/{i}" for i in (0, 1, 3, 4)]
    assert counters["skipped:corrupt_gzip_member"] >= 1


def test_corrupt_crc_member(tmp_path):
    members = [gzip_member(good(i)) for i in range(3)]
    bad = bytearray(members[1])
    bad[-8] ^= 0xFF  # CRC32 of the member
    members[1] = bytes(bad)
    docs, counters = read(write(tmp_path, b"".join(members)))
    assert urls(docs) == ["http://example.com/0", "http://example.com/2"]
    assert counters["skipped:corrupt_gzip_member"] == 1


def test_junk_between_members(tmp_path):
    data = gzip_member(good(0)) + b"garbage bytes here" + gzip_member(good(1))
    docs, counters = read(write(tmp_path, data))
    assert urls(docs) == ["http://example.com/0", "http://example.com/1"]
    assert counters["skipped:junk_between_members"] == 1


@pytest.mark.parametrize("compressed", [True, False])
def test_truncated_record_then_next_record(tmp_path, compressed):
    short = record("http://example.com/short", page(9), length=len(page(9).encode()) + 500)
    records = [good(0), short, good(1), good(2)]
    data = wet_file(records) if compressed else WARCINFO + b"".join(records)
    docs, counters = read(write(tmp_path, data, "f.wet.gz" if compressed else "f.wet"))
    assert urls(docs) == ["http://example.com/0", "http://example.com/1", "http://example.com/2"]
    assert counters["skipped:truncated_record"] == 1


def test_missing_uri_or_date(tmp_path):
    records = [good(0), record(None, page(1)), record("http://example.com/2", page(2), date=None), good(3)]
    docs, counters = read(write(tmp_path, wet_file(records)))
    assert urls(docs) == ["http://example.com/0", "http://example.com/3"]
    assert counters["filtered:no_url"] == 1 and counters["filtered:no_timestamp"] == 1


def test_non_utf8_and_binary_bodies(tmp_path):
    latin1 = "Café résumé naïve, über alles.".encode("latin-1")
    binary = bytes(range(256)) * 8
    records = [good(0), record("http://example.com/l", latin1), record("http://example.com/b", binary), good(1)]
    docs, counters = read(write(tmp_path, wet_file(records)))
    assert urls(docs) == ["http://example.com/0", "http://example.com/1"]
    assert counters["skipped:non_utf8"] == 1 and counters["skipped:binary_body"] == 1


def test_single_50mb_line(tmp_path):
    huge = b"word" * (50 * 1024 * 1024 // 4)
    records = [good(0), record("http://example.com/huge", huge), good(1)]
    docs, counters = read(write(tmp_path, wet_file(records)))
    assert urls(docs) == ["http://example.com/0", "http://example.com/1"]
    assert counters["skipped:record_too_large"] == 1


def test_gzip_bomb_is_bounded_in_memory(tmp_path):
    # One member that inflates to 256 MB of zeros inside a record (about 250 KB on disk).
    zeros = zlib.compressobj(9, zlib.DEFLATED, 31)
    size = 256 << 20
    head = (b"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: http://bomb\r\n"
            b"WARC-Date: 2019-01-01T00:00:00Z\r\nContent-Length: " + str(size).encode() + b"\r\n\r\n")
    bomb = zeros.compress(head) + b"".join(zeros.compress(b"\0" * (1 << 20)) for _ in range(256))
    bomb += zeros.compress(b"\r\n\r\n") + zeros.flush()
    data = gzip_member(good(0)) + bomb + gzip_member(good(1))
    path = write(tmp_path, data)
    tracemalloc.start()
    docs, counters = read(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert urls(docs) == ["http://example.com/0", "http://example.com/1"]
    assert counters["skipped:record_too_large"] == 1
    assert peak < 32 << 20, f"peak {peak / 2**20:.0f} MiB"


def test_member_size_cap_skips_to_next_member(tmp_path):
    junk = gzip_member(b"\0" * (4 << 20))
    data = gzip_member(good(0)) + junk + gzip_member(good(1))
    docs, counters = read(write(tmp_path, data), ReadOptions(max_member_bytes=1 << 20))
    assert urls(docs) == ["http://example.com/0", "http://example.com/1"]
    assert counters["skipped:gzip_member_too_large"] == 1


def test_whole_file_single_gzip_member(tmp_path):
    data = gzip.compress(WARCINFO + b"".join(good(i) for i in range(50)))
    docs, counters = read(write(tmp_path, data))
    assert len(docs) == 50 and counters["passed"] == 50


def test_plain_uncompressed_file(tmp_path):
    docs, _ = read(write(tmp_path, WARCINFO + good(0) + good(1), "f.wet"))
    assert urls(docs) == ["http://example.com/0", "http://example.com/1"]
    assert docs[1].offset == len(WARCINFO) + len(good(0))


def test_offsets_point_at_gzip_members(tmp_path):
    data = wet_file([good(i) for i in range(3)])
    path = write(tmp_path, data)
    docs, _ = read(path)
    for doc in docs:
        member = zlib.decompressobj(31).decompress(data[doc.offset:])
        assert f"WARC-Target-URI: {doc.url}".encode() in member


def test_unreadable_path_is_a_clear_error(tmp_path):
    with pytest.raises(CrawlReadError, match="cannot open"):
        list(iter_crawl_documents(str(tmp_path / "missing.wet.gz")))
    with pytest.raises(CrawlReadError, match="no such file"):
        expand_inputs([str(tmp_path / "*.nothing")])


def _page_text_by_definition(body, keep_metadata_like_lines=False):
    """tfds ``split_wet_file``'s lines, one at a time: the definition page_text is held to."""
    from c4forge.corpus.read.wet import METADATA_PREFIXES, NEWLINES

    lines = [line.strip() for line in NEWLINES.split(body)]
    return "\n".join(line for line in lines
                     if line and (keep_metadata_like_lines or not line.startswith(METADATA_PREFIXES)))


def test_page_text_equals_its_definition_on_mixed_newlines_and_unicode_spaces():
    rng = random.Random(3)
    pieces = ["\n", "\r", "\r\n", "\n\r", " ", "\t", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2028",
              "\u3000", "word", "WARC-Type: x", "WARC", "CONTENT-LENGTH", "Content-", "content-", "x WARC",
              "é", "\u200b"]
    for _ in range(3000):
        body = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        for keep in (False, True):
            assert page_text(body, keep) == _page_text_by_definition(body, keep), repr(body)


def test_page_text_equals_its_definition_on_real_pages():
    count = 0
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        for crawl_record in iter_records(str(path)):
            body = crawl_record.body.decode("utf-8", "replace")
            for keep in (False, True):
                assert page_text(body, keep) == _page_text_by_definition(body, keep)
            count += 1
    assert count > 1800


def test_page_text_follows_tfds_split():
    body = "  First line  \r\n\r\nWARC-ish line dropped\rContent-Type: x\nSecond\n\n"
    assert page_text(body) == "First line\nSecond"
    assert page_text(body, keep_metadata_like_lines=True) == "First line\nWARC-ish line dropped\nContent-Type: x\nSecond"


def test_reads_over_http(tmp_path, local_server):
    write(tmp_path, wet_file([good(i) for i in range(3)]))
    base, _ = local_server(tmp_path)
    docs, counters = read(f"{base}/f.warc.wet.gz")
    assert len(docs) == 3


def test_real_wet_files():
    counts = {}
    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        docs, counters = read(path)
        counts[path.name] = len(docs)
        assert not any(k.startswith("skipped:") and "warcinfo" not in k for k in counters)
    assert counts == {"cc-2019-30-dolma.warc.wet.gz": 670, "cc-2024-22-whirlwind.warc.wet.gz": 1,
                      "web-readability.warc.wet.gz": 130, "web-trafilatura.warc.wet.gz": 1031}


def test_real_warc_response_records():
    path = shared_path("crawl", "warc", "cc-2020-34-sample.warc.gz")
    records = list(iter_records(str(path)))
    types = collections.Counter(r.type for r in records)
    assert types["response"] == 16
    headers, html = http_payload(next(r for r in records if r.type == "response"))
    assert b"<html" in html[:2000].lower() or b"<!doctype" in html[:2000].lower()


def _faulty_file():
    """Good members around a corrupt one, junk, and a truncated tail: every gzip-layer path."""
    members = [gzip_member(WARCINFO)] + [gzip_member(good(i)) for i in range(12)]
    bad = bytearray(members[4])
    bad[len(bad) // 2: len(bad) // 2 + 8] = b"\xff" * 8
    members[4] = bytes(bad)
    members[7] = b"junk between members" + members[7]
    return b"".join(members)[:-25]


@pytest.mark.parametrize("read_chunk,feed_chunk", [(7, 3), (64, 5), (1000, 1 << 14)])
def test_buffer_sizes_do_not_change_what_is_read(tmp_path, monkeypatch, read_chunk, feed_chunk):
    path = write(tmp_path, _faulty_file())
    expected = read(path)
    monkeypatch.setattr("c4forge.corpus.read.gzip_members.READ_CHUNK", read_chunk)
    monkeypatch.setattr("c4forge.corpus.read.gzip_members.FEED_CHUNK", feed_chunk)
    docs, counters = read(path)
    assert docs == expected[0]
    # How much of the corrupt member zlib decodes before the fault depends on the feed size, so
    # its partial record may or may not be counted as truncated; every other count is equal.
    partial = "skipped:truncated_record"
    assert {k: v for k, v in counters.items() if k != partial} == \
        {k: v for k, v in expected[1].items() if k != partial}
    assert len(expected[0]) == 10 and expected[1]["skipped:corrupt_gzip_member"] == 1


def test_reader_feeds_each_compressed_byte_about_once(tmp_path, monkeypatch):
    """Regression: every gzip member used to be fed the whole rest of the 1 MiB read buffer
    (a copy per member, most of the reader's time on Common Crawl's one-member-per-record files)."""
    import c4forge.corpus.read.gzip_members as gzip_layer  # the gzip layer of the reader

    fed = []
    real = gzip_layer.isal_zlib.decompressobj

    class Counting:
        def __init__(self, wbits):
            self.inner = real(wbits)

        def decompress(self, data, max_length=0):
            fed.append(len(data))
            return self.inner.decompress(data, max_length)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    members = [gzip_member(WARCINFO)] + [gzip_member(good(i)) for i in range(400)]
    path = write(tmp_path, b"".join(members))
    monkeypatch.setattr(gzip_layer, "isal_zlib", types.SimpleNamespace(decompressobj=Counting))
    docs, _ = read(path)
    assert len(docs) == 400
    size = path.stat().st_size
    assert sum(fed) <= size + len(members) * gzip_layer.FEED_CHUNK, (sum(fed), size)


def _damaged_copies(data: bytes, count: int, seed: int = 7):
    """``count`` copies of ``data``, each with a few bytes overwritten or a slice cut out at
    seeded random places: faults in headers, deflate streams, CRCs and lengths alike."""
    rng = random.Random(seed)
    for _ in range(count):
        copy = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(copy))
            if rng.random() < 0.7:
                copy[at:at + rng.randint(1, 6)] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
            else:
                del copy[at:at + rng.randint(1, 200)]
        yield bytes(copy)


def test_isal_and_zlib_read_the_same(tmp_path, monkeypatch):
    """ISA-L inflates the members it ends cleanly, zlib the others (corpus/read/gzip_members.py); zlib
    alone is the reference (``FAST_MEMBER_BYTES = 0``): on good files, every listed fault and
    300 randomly damaged files, both give the same pages and counters. Regression: ISA-L alone
    read 3 of the 300 damaged files on to their end, losing the good members after the fault."""
    import c4forge.corpus.read.gzip_members as gzip_layer

    members = [gzip_member(WARCINFO)] + [gzip_member(good(i)) for i in range(20)]
    files = [b"".join(members), _faulty_file(), gzip.compress(WARCINFO + b"".join(good(i) for i in range(30))),
             gzip_member(good(0)) + gzip_member(b"\0" * (4 << 20)) + gzip_member(good(1)),
             *_damaged_copies(b"".join(members), 300)]
    options = ReadOptions(max_member_bytes=1 << 20)
    faults = set()
    for i, data in enumerate(files):
        path = write(tmp_path, data, f"f{i}.warc.wet.gz")
        monkeypatch.setattr(gzip_layer, "FAST_MEMBER_BYTES", 0)
        expected = read(path, options)
        monkeypatch.undo()
        assert read(path, options) == expected, i
        faults.update(k for k in expected[1] if k.startswith("skipped:"))
    # the damaged files reached every fault of the gzip layer
    assert {"skipped:corrupt_gzip_member", "skipped:truncated_gzip", "skipped:junk_between_members",
            "skipped:gzip_member_too_large"} <= faults, faults


def test_isal_and_zlib_read_real_files_the_same(monkeypatch):
    import c4forge.corpus.read.gzip_members as gzip_layer

    for path in sorted(shared_path("crawl").glob("*.wet.gz")):
        monkeypatch.setattr(gzip_layer, "FAST_MEMBER_BYTES", 0)
        expected = read(path)
        monkeypatch.undo()
        assert read(path) == expected, path.name


def test_isal_and_zlib_keep_the_same_records_before_an_io_error(tmp_path, monkeypatch):
    """Regression: ISA-L held a member back until its end, so an I/O error inside a member lost
    the records zlib had already handed on (a whole file in one gzip member lost them all)."""
    import c4forge.corpus.read.gzip_members as gzip_layer
    import c4forge.corpus.read.records as records

    real = records.open_raw

    class FailingAfter:
        def __init__(self, raw, limit):
            self.raw, self.left = raw, limit

        def read(self, n=-1):
            if self.left <= 0:
                raise OSError(5, "Input/output error")
            data = self.raw.read(min(n, self.left) if n > 0 else self.left)
            self.left -= len(data)
            return data

        def close(self):
            self.raw.close()

    def read_all(path):  # as `corpus clean` reads: an I/O error ends the file, counted
        counters = Counters()
        docs = list(iter_file_documents(str(path), counters.inc_fn("r")))
        return docs, {k[2:]: v for k, v in counters.as_dict().items()}

    one_member = gzip.compress(WARCINFO + b"".join(good(i) for i in range(40)))
    per_record = wet_file([good(i) for i in range(40)])
    kept = 0
    for name, data in (("one.warc.wet.gz", one_member), ("many.warc.wet.gz", per_record)):
        path = write(tmp_path, data, name)
        for limit in range(200, len(data), max(1, len(data) // 23)):
            monkeypatch.setattr(records, "open_raw", lambda p, *a, limit=limit: FailingAfter(real(p, *a), limit))
            monkeypatch.setattr(gzip_layer, "FAST_MEMBER_BYTES", 0)
            expected = read_all(path)
            monkeypatch.setattr(gzip_layer, "FAST_MEMBER_BYTES", 8 << 20)
            assert read_all(path) == expected, (name, limit)
            assert expected[1]["skipped:read_error"] == 1
            kept += len(expected[0])
    assert kept > 100  # the errors fell after records that were kept, in both kinds of file
