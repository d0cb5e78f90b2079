"""Near-dedup's band buckets as arrays (corpus/dedup/near_dedup.py ``band_members``, ``shared_bands``):
the buckets that make edges, with their members, as a dict of sets finds them; the records
cross a shuffle as bytes (corpus/dedup/digest_records.py) and come back the same."""
import collections
import random

from c4forge.corpus.dedup import digest_records
from c4forge.corpus.dedup.near_dedup import BAND_MEMBER, band_members, shared_bands

BANDS = 4


def made_up(seed: int = 5, pages: int = 80):
    """(band keys, member) per page: ids repeat (two crawls of one URL share an id, with other
    signature digests), keys repeat across pages and share their first 8 bytes."""
    rng = random.Random(seed)
    pool = [bytes([band]) + bytes(rng.randrange(256) for _ in range(15)) for band in range(BANDS) for _ in range(6)]
    pool += [pool[0][:8] + bytes([k]) * 8 for k in range(3)]
    out = []
    for _ in range(pages):
        node = rng.randrange(25)
        member = node.to_bytes(8, "big") + bytes(rng.randrange(256) for _ in range(8))
        out.append(([rng.choice(pool) for _ in range(BANDS)], member))
    alone = [bytes([band]) + bytes([0xEE]) * 15 for band in range(BANDS)]  # keys no other page has
    for digest in (b"\x01" * 8, b"\x02" * 8):  # one id, two crawls: a bucket that makes no edge
        out.append((alone, (999).to_bytes(8, "big") + digest))
    return out


def reference(pages) -> dict[bytes, set[bytes]]:
    by_key = collections.defaultdict(set)
    for keys, member in pages:
        for key in keys:
            by_key[key].add(member)
    return {key: members for key, members in by_key.items() if len({m[:8] for m in members}) >= 2}


def test_shared_bands_are_the_buckets_of_two_or_more_ids():
    pages = made_up()
    records = band_members([key for keys, _ in pages for key in keys], [member for _, member in pages])
    assert len(records) == len(pages) * BANDS and records.dtype == BAND_MEMBER
    expected = reference(pages)
    found = dict(shared_bands(records))
    assert found == expected and len(found) == len(shared_bands(records))
    by_key = collections.defaultdict(set)
    for keys, member in pages:
        for key in keys:
            by_key[key].add(member)
    # the made-up pages hold a bucket of one id in two members, which makes no edge
    assert any(len(m) > 1 and len({x[:8] for x in m}) == 1 for m in by_key.values())


def test_shared_bands_after_crossing_a_shuffle_in_parts():
    pages = made_up(seed=9, pages=120)
    parts = collections.defaultdict(list)
    for start in range(0, len(pages), 25):
        part = pages[start:start + 25]
        records = band_members([key for keys, _ in part for key in keys], [member for _, member in part])
        for bucket, blob in digest_records.by_bucket(records, 3):
            parts[bucket].append(blob)
    found = {}
    for bucket, blobs in parts.items():
        for key, members in shared_bands(digest_records.join(blobs, BAND_MEMBER)):
            assert int.from_bytes(key[:8], "little") % 3 == bucket
            found[key] = members
    assert found == reference(pages) and found


def test_no_bands():
    empty = band_members([], [])
    assert len(empty) == 0 and shared_bands(empty) == []
    one = band_members([bytes(16)], [bytes(16)])
    assert shared_bands(one) == []
