"""benchmarks/bench_build.py's CPU accounting: a process orphaned during a measured command (an
SDK worker outliving its engine's JVM) still counts; measured in a separate interpreter, since
adopting orphans changes the process that asks (the pytest process must not)."""
import subprocess
import sys
import textwrap

from tests.conftest import ROOT

MEASURE_AN_ORPHAN = textwrap.dedent("""
    import sys
    sys.path.insert(0, {benchmarks!r})
    import bench_build

    burn = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 1.0: pass\\ntime.sleep(30)"
    # the shell starts a child that burns 1 CPU s and then sleeps, and exits without waiting for it
    cmd = ["sh", "-c", f"{{sys.executable!r}} -c '{{burn}}' & sleep 2; exit 0"]
    print(bench_build.measure(cmd)["cpu"])
""")


def test_an_orphaned_descendants_cpu_is_counted():
    script = MEASURE_AN_ORPHAN.format(benchmarks=str(ROOT / "benchmarks"))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    cpu = float(out.stdout.strip().splitlines()[-1])
    assert cpu >= 0.9, cpu  # without adopting the orphan: about 0.05 (the shell and the start)
