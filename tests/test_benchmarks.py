"""Every benchmark that `make bench` runs still runs: `benchmarks/run_all.py --quick` (a few
inputs, one repeat, nothing written). No timing is asserted; the tables must come out."""
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import shared_path

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_every_benchmark_runs_in_quick_mode():
    shared_path("crawl-extra", "wcxb-dev.warc.gz")  # skips with the reason when the data is absent
    before = (ROOT / "benchmarks" / "RESULTS.md").read_bytes()
    result = subprocess.run([sys.executable, "benchmarks/run_all.py", "--quick"], cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "| c4forge --extractor cascade |" in out and "F1 per page type" in out
    assert "| c4forge (verified, default) | 14 x 8 |" in out and "cost / shingling alone" in out
    assert "FastWARC x c4forge" in out
    assert "c4forge output identical to the plain tfds loop: True" in out
    assert "| 1x |" in out and "| direct |" in out and "| yes |" in out  # build vs clean, same output
    assert "| loopback, 20% faults |" in out  # remote reads, bytes checked equal to local files
    assert "| tokenizer encode, " in out and "tokens written" in out
    assert "| gopher_quality |" in out and "c4forge / datatrove" in out  # rule sets beside datatrove
    assert "c4forge / system, CPU" in out and "| fineweb | pii (emails, IPs replaced) |" in out  # peer tools
    assert (ROOT / "benchmarks" / "RESULTS.md").read_bytes() == before  # quick writes nothing


def test_generated_sections_are_replaced_in_place(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import harness

    results = tmp_path / "RESULTS.md"
    results.write_text("# Results\n\nhand-written analysis\n")
    harness.write_section("demo", "| a |\n|---|\n| 1 |", "python x.py", "2 cores", path=results)
    harness.write_section("demo", "| a |\n|---|\n| 2 |", "python x.py", "2 cores", path=results)
    text = results.read_text()
    assert text.count("<!-- generated:demo -->") == 1 and "| 2 |" in text and "| 1 |" not in text
    assert text.startswith("# Results\n\nhand-written analysis\n") and "python x.py" in text
    assert harness.spread([3.0, 1.0, 2.0]) == "2.00 (1.00-3.00)"
    assert harness.ratios([2.0, 4.0], [1.0, 2.0]) == [2.0, 2.0]
    assert harness.mean_std([1.0, 2.0, 3.0]) == "2.00 ± 1.00" and harness.mean_std([5.0]) == "5.00"


def test_the_growth_table_shows_a_stage_whose_cost_per_page_grows():
    """bench_presets.growth_table (issue 81): cost per input page at each scale, and its growth
    from the first scale to the last; a stage that only some presets run is 0 where absent."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_presets

    def run(read: float, dedup: float) -> dict:
        return {"seconds": {"read": read, "near-dup-clusters": dedup}, "total": read + dedup}

    measured = [{"scale": s, "pages": 1000 * s,
                 "runs": {p: [run(0.5 * s, 0.1 * s * s), run(0.5 * s, 0.1 * s * s)] for p in bench_presets.PRESETS}}
                for s in (1, 4)]
    rows = {line.split(" | ")[1]: line for line in bench_presets.growth_table(measured) if line.startswith("| c4 |")}
    assert rows["read"].endswith("| 500 | 500 | 1.00x |")
    assert rows["near-dup-clusters"].endswith("| 100 | 400 | 4.00x |")
    assert rows["**chain**"].endswith("| 600 | 900 | 1.50x |")
