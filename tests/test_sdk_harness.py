"""The SDK workers' data messages are capped (pipelines/engines/workers/sdk_harness.py): regression for flink-local
running out of Java heap at 64x distinct input, where 10 MB messages queued in the JVM."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

# What a worker's output stream sends for 3 MB of 100 kB elements, with and without the cap;
# run in a child so that the cap does not reach this process's DirectRunner tests.
PROBE = """
import json, sys
from apache_beam.runners.worker import data_plane
if sys.argv[1] == "capped":
    from c4forge.pipelines.engines.workers.sdk_harness import cap_outbound_messages
    cap_outbound_messages()
sent = {}
for limit_ms in (0, 60_000):  # Beam's size-based stream, and its time-based one
    messages = []
    stream = data_plane.ClosableOutputStream.create(None, messages.append, limit_ms)
    for _ in range(30):
        stream.write(b"x" * 100_000)
        stream.maybe_flush()
    sent[limit_ms] = [len(m) for m in messages]
    stream.close()
print(json.dumps(sent))
"""


def messages_sent(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                         cwd=ROOT, check=True, timeout=120).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_worker_messages_are_capped_at_one_megabyte():
    capped = messages_sent("capped")
    for sizes in capped.values():
        assert len(sizes) == 2 and all(1 << 20 < n <= (1 << 20) + 100_000 for n in sizes)
    for sizes in messages_sent("beam").values():  # Beam's own 10 MB: nothing sent before close
        assert sizes == []


def test_the_private_names_the_cap_changes_exist_with_the_meaning_it_assumes():
    """Fails loudly on a Beam release that renamed or changed them: the cap must then be
    measured again before MEASURED_RELEASES names that release."""
    from c4forge.pipelines.engines.workers import sdk_harness

    assert sdk_harness.internals_problem() is None
    assert sdk_harness.applies("2.62.0") in (None, sdk_harness.internals_problem())
    assert "not a release it was measured on" in sdk_harness.applies("2.77.0")
