"""Line claims as arrays (corpus/dedup/line_claims.py): each key's owner is its smallest claim, compared
as the bytes of md5(url) and then the line's index, whatever the records' integer layout; the
buckets are the pipelines' digest buckets; combining in parts gives what combining at once does."""
import collections
import random

import numpy as np

from c4forge.corpus.dedup import digest_records, line_claims

BUCKETS = 5


def digest_bucket(digest: bytes, buckets: int) -> int:
    return int.from_bytes(digest[:8], "little") % buckets


def made_up_pages(seed: int = 7, pages: int = 60):
    """(md5(url), line keys) pages built to catch a wrong order: ranks whose bytes order differs
    from their little-endian value's (they differ only in their first or ninth byte), keys
    that share their first 8 bytes, lines repeated within a page and across pages."""
    rng = random.Random(seed)
    keys = [bytes([k]) * 8 + bytes(rng.randrange(256) for _ in range(8)) for k in range(6)]
    keys += [keys[0][:8] + bytes([200 + k]) * 8 for k in range(4)]  # key0 shared with keys[0]
    keys += [bytes(rng.randrange(256) for _ in range(16)) for _ in range(30)]
    out = []
    for page in range(pages):
        rank = bytearray(bytes(rng.randrange(256) for _ in range(16)))
        if page % 3 == 0:
            rank[1:8] = bytes(7)  # ranks equal but for the first byte
        if page % 4 == 0:
            rank[:8], rank[9:] = bytes(8), bytes(7)  # equal but for the ninth byte
        lines = [rng.choice(keys) for _ in range(rng.randrange(0, 12))]
        out.append((bytes(rank), lines))
    return out


def reference_owners(pages) -> dict[bytes, tuple[bytes, int]]:
    """Every key's smallest (md5(url) bytes, index): the definition, in dicts."""
    owners: dict[bytes, tuple[bytes, int]] = {}
    for rank, lines in pages:
        for index, key in enumerate(lines):
            claim = (rank, index)
            if key not in owners or claim < owners[key]:
                owners[key] = claim
    return owners


def claims_of(pages) -> np.ndarray:
    return line_claims.page_claims([rank for rank, _ in pages], [b"".join(lines) for _, lines in pages])


def as_owners(records: np.ndarray) -> dict[bytes, tuple[bytes, int]]:
    raw, size = records.tobytes(), records.dtype.itemsize
    return {raw[i * size:i * size + 16]: (raw[i * size + 16:i * size + 32], int(records["index"][i]))
            for i in range(len(records))}


def test_the_smallest_claim_of_every_key_is_its_owner():
    pages = made_up_pages()
    expected = reference_owners(pages)
    claims = claims_of(pages)
    assert len(claims) == sum(len(lines) for _, lines in pages)
    smallest = line_claims.smallest_claims(claims)
    assert as_owners(smallest) == expected
    # the made-up pages do reach the cases where a wrong order would show
    assert any(rank[1:8] == bytes(7) for rank, _ in expected.values())
    assert len({key[:8] for key in expected}) < len(expected)
    assert any(index > 0 for _, index in expected.values())


def test_combining_in_parts_as_the_engine_does_gives_the_same_owners():
    """Per bundle, then per line bucket (the records crossing as bytes), then per page bucket."""
    pages = made_up_pages(seed=11, pages=90)
    by_line_bucket = collections.defaultdict(list)
    for bundle in range(4):
        part = pages[bundle::4]
        for bucket, blob in digest_records.by_bucket(line_claims.smallest_claims(claims_of(part)), BUCKETS):
            by_line_bucket[bucket].append(blob)
    kept: dict[bytes, set[int]] = {}
    for line_bucket, blobs in by_line_bucket.items():
        claims = digest_records.join(blobs, line_claims.CLAIM)
        assert all(digest_bucket(key, BUCKETS) == line_bucket for key in as_owners(claims))
        for page_bucket, blob in digest_records.by_bucket(line_claims.owners(claims), BUCKETS):
            part = line_claims.kept_lines(digest_records.join([blob], line_claims.OWNER))
            assert part and all(digest_bucket(rank, BUCKETS) == page_bucket for rank in part)
            for rank, indices in part.items():
                kept.setdefault(rank, set()).update(indices)
    expected: dict[bytes, set[int]] = collections.defaultdict(set)
    for rank, index in reference_owners(pages).values():
        expected[rank].add(index)
    assert kept == expected


def test_by_bucket_keeps_every_record_once():
    claims = claims_of(made_up_pages(seed=3))
    parts = digest_records.by_bucket(claims, BUCKETS)
    assert sorted(bucket for bucket, _ in parts) == sorted({bucket for bucket, _ in parts})
    back = digest_records.join([blob for _, blob in parts], line_claims.CLAIM)
    assert sorted(back.tobytes()[i:i + 36] for i in range(0, len(back) * 36, 36)) == \
        sorted(claims.tobytes()[i:i + 36] for i in range(0, len(claims) * 36, 36))


def test_no_claims_anywhere():
    empty = line_claims.page_claims([], [])
    assert len(empty) == 0 and digest_records.by_bucket(empty, BUCKETS) == []
    assert len(line_claims.smallest_claims(empty)) == 0 and len(line_claims.owners(empty)) == 0
    assert line_claims.kept_lines(digest_records.join([], line_claims.OWNER)) == {}
    pages_without_lines = line_claims.page_claims([bytes(16), bytes([1]) * 16], [b"", b""])
    assert len(pages_without_lines) == 0
