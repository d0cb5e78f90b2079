"""The stage clock behind the per-stage cost table (benchmarks/bench_stages.py): every CPU
second goes to exactly one stage, nested generators included, and timing a chain changes
nothing it computes."""
import time

from c4forge.core.counters import Counters
from c4forge.core.stageclock import StageClock
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.config import build_config
from tests.conftest import ROOT

SAMPLE = str(ROOT / "corpus" / "data" / "sample.warc.wet.gz")
BADWORDS = str(ROOT / "corpus" / "data" / "demo-badwords")


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_nested_stages_count_each_second_once():
    clock = StageClock()

    def produce():
        for _ in range(3):
            _burn(0.02)  # the inner stage's own work
            yield 1

    def outer():
        for item in clock.timed("inner", produce()):
            _burn(0.01)  # the outer stage's own work, per item
            yield item

    started = time.process_time()
    with clock.stage("consumer"):
        items = list(clock.timed("outer", outer()))
        _burn(0.03)
    elapsed = time.process_time() - started
    assert items == [1, 1, 1]
    assert clock.items == {"consumer": 0, "outer": 3, "inner": 3}
    assert 0.06 <= clock.seconds["inner"] < 0.06 + 0.02
    assert 0.03 <= clock.seconds["outer"] < 0.03 + 0.02
    assert 0.03 <= clock.seconds["consumer"] < 0.03 + 0.02
    # the shares add up to the whole: nothing counted twice, nothing lost
    assert abs(sum(clock.seconds.values()) - elapsed) < 0.005


def test_a_timed_chain_gives_the_same_documents_and_counters():
    config = build_config("c4", badwords=BADWORDS)
    plain_counters, timed_counters, clock = Counters(), Counters(), StageClock()
    plain = run_chain([SAMPLE], config, plain_counters)
    timed = run_chain([SAMPLE], config, timed_counters, clock=clock)
    assert timed == plain and timed_counters.as_dict() == plain_counters.as_dict()
    assert set(clock.seconds) == {"read", "length", "url-dedup", "clean-page", "line-dedup",
                                  "language-id", "bad-words", "minhash-signatures", "near-dup-clusters"}
    assert clock.items["read"] == plain_counters.as_dict()["split-wet-file/passed"] == 171
    assert clock.items["language-id"] >= clock.items["bad-words"] > 0
    # every stage says how many pages came in (url-dedup's were counted as 0 before)
    assert clock.items["url-dedup"] == clock.items["length"] == 171
    assert clock.items["url-dedup"] >= clock.items["clean-page"] >= clock.items["line-dedup"] > 0
