"""Fit the cascade extractor's router (corpus/extract/router.py) on the tune half of the WCXB dev pages
and write corpus/data/extract-router.json.

Per tune page: resiliparse's fast pass (main and whole-page text from one parse), the router's
signals, trafilatura's text and its CPU time, and both texts' WCXB F1 against the human-reviewed
main content. Fitted: a ridge regression of the F1 gain (trafilatura - resiliparse) on the
standardised signals, a power law of trafilatura's CPU time in the HTML size, and the threshold
on gain-per-cost that sends ``--slow-share`` of the tune pages to trafilatura. The held-out half
is never read here: benchmarks/bench_extract.py reports on it. Deterministic up to the CPU
timings the cost exponent is fitted on.

Run: .venv/bin/python scripts/train_extract_router.py [--slow-share 0.11] [--alpha 1.0]
     [--slow rs-trafilatura --slow-share 0.26]  (cascade-rs: corpus/data/extract-router-rs.json)
Needs scikit-learn (the [dev] extra); the router it writes needs nothing at run time.
"""
from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_extract import SHARED, load_dev_pages, prf  # noqa: E402

from c4forge.core.io import atomic_write  # noqa: E402
from c4forge.corpus.extract.html import extract_main_text, fast_pass  # noqa: E402
from c4forge.corpus.extract.router import ROUTER_FILES, Router, page_signals  # noqa: E402
from c4forge.corpus.read.wet import page_text  # noqa: E402

VERSION = "1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warc", default=str(SHARED / "crawl-extra" / "wcxb-dev.warc.gz"))
    parser.add_argument("--truth", default=str(SHARED / "extraction" / "wcxb-dev.jsonl.gz"))
    parser.add_argument("--slow-share", type=float, default=0.11,
                        help="Share of tune pages sent to trafilatura (sets the threshold).")
    parser.add_argument("--alpha", type=float, default=1.0, help="Ridge penalty.")
    parser.add_argument("--slow", choices=tuple(ROUTER_FILES), default="trafilatura",
                        help="The cascade's slow extractor the router is fitted for.")
    parser.add_argument("-o", "--output", help="default: corpus/data/ file of --slow's router")
    args = parser.parse_args()
    args.output = args.output or str(ROUTER_FILES[args.slow])
    from sklearn.linear_model import LinearRegression, Ridge

    records, rows, html = load_dev_pages(args.warc, args.truth, "tune")
    signals, gains, log_size, log_cost = [], [], [], []
    for r, row, page in zip(records, rows, html):
        url = r.header("WARC-Target-URI")
        fast, full, title = fast_pass(page)
        fast, full = page_text(fast, True), page_text(full, True)
        started = time.process_time()
        try:
            slow = page_text(extract_main_text(page, url, args.slow), True)
        except Exception:  # noqa: BLE001 (a crash is an empty slow text, as the cascade keeps fast)
            slow = ""
        log_cost.append(np.log(time.process_time() - started + 1e-4))
        s = page_signals(page, url, title, fast, full)
        signals.append(s)
        log_size.append([s["log_html_chars"]])
        gains.append(prf(slow, row["main_content"])[2] - prf(fast, row["main_content"])[2])
    names = tuple(signals[0])
    x = np.array([[s[n] for n in names] for s in signals], float)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = Ridge(alpha=args.alpha).fit((x - mean) / scale, gains)
    exponent = float(LinearRegression().fit(log_size, log_cost).coef_[0])
    router = Router(version=VERSION, features=names, mean=tuple(map(float, mean)),
                    scale=tuple(map(float, scale)), coef=tuple(map(float, model.coef_)),
                    intercept=float(model.intercept_), cost_exponent=exponent, threshold=0.0)
    scores = np.array([router.score(s) for s in signals])
    threshold = float(np.quantile(scores, 1 - args.slow_share))
    router = Router(**{**router.__dict__, "threshold": threshold})
    text = router.to_json(trained={
        "date": datetime.date.today().isoformat(), "pages": len(records),
        "data": "WCXB dev pages whose sha1(file_id) starts with an even byte (the tune half)",
        "script": "scripts/train_extract_router.py", "slow": args.slow, "slow_share": args.slow_share,
        "alpha": args.alpha, "mean_gain": float(np.mean(gains))})
    with atomic_write(args.output) as handle:
        handle.write(text)
    print(f"{len(records)} tune pages; cost exponent {exponent:.3f}; threshold {threshold:.3g} "
          f"sends {np.mean(scores > threshold):.1%} slow; wrote {Path(args.output).resolve().relative_to(ROOT) if Path(args.output).resolve().is_relative_to(ROOT) else Path(args.output).name}")


if __name__ == "__main__":
    main()
