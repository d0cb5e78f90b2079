"""``tokenizer``: train SentencePiece vocabularies, encode corpora, inspect tokenizers."""
from __future__ import annotations

import json
import sys
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
    set_option,
)
from c4forge.core.settings import apply_settings, load_yaml_mapping, parse_overrides
from c4forge.tokenizer.encode import encode_corpus
from c4forge.tokenizer.exports import EXPORTS, export_tokens
from c4forge.tokenizer.inspect import format_report, inspect_tokenizer, read_text_file
from c4forge.tokenizer.kinds import TokenizerSpec
from c4forge.tokenizer.train import TokenizerConfig, train_tokenizer


def tokenizer_config(config_file: Optional[str], overrides, **flags) -> TokenizerConfig:
    """Defaults, then --config YAML, then --set, then the explicit flags."""
    config = TokenizerConfig()
    if config_file:
        config = apply_settings(config, load_yaml_mapping(config_file))
    config = apply_settings(config, parse_overrides(overrides))
    return apply_settings(config, {k: v for k, v in flags.items() if v is not None})


@group
def cli() -> None:
    """Train SentencePiece vocabularies from corpus shards and encode corpora into token shards.

    Needs the [tokenizer] extra: pip install 'c4forge[tokenizer]'."""


CORPUS = click.option("--input", "-i", "--corpus", "corpus", required=True,
                      type=click.Path(exists=True, file_okay=False),
                      help="Corpus directory (from `corpus build`).")


@cli.command("train")
@CORPUS
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False))
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="YAML file of TokenizerConfig settings; flags and --set override it.")
@set_option
@click.option("--library", type=click.Choice(["sentencepiece", "tokenizers"]), default=None,
              help="The trainer: SentencePiece, or Hugging Face `tokenizers` (a tokenizer.json "
                   "that transformers opens as it is). [default: sentencepiece]")
@click.option("--model-type", type=click.Choice(["bpe", "unigram", "byte-bpe", "wordpiece"]), default=None,
              help="sentencepiece: bpe or unigram; tokenizers: byte-bpe (GPT-2's byte-level BPE), "
                   "wordpiece or unigram. [default: bpe; byte-bpe with --library tokenizers]")
@click.option("--vocab-size", type=int, default=None,
              help="Pieces in total: 6 specials + 256 bytes + learned pieces. [default: 8000]")
@click.option("--sample-bytes", type=int, default=None,
              help="UTF-8 bytes of text to sample for training (deterministic). "
                   "[default: 1000000000]")
@click.option("--seed", type=int, default=None, help="Picks the sample. [default: 0]")
@click.option("--split", default=None, help="[default: train]")
@click.option("--t5-sentinels", type=int, default=None,
              help="T5 sentinels <extra_id_0>..<extra_id_{N-1}> (ids 6..5+N), used by the span "
                   "objective. [default: 100]")
@click.option("--character-coverage", type=float, default=None, help="[default: 0.9995]")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Trainer threads (default: all cores).")
@click.option("--overwrite", is_flag=True, help="Replace a tokenizer already in --output.")
@output_options
def train_command(corpus, output, config_file, overrides, threads, overwrite, **flags) -> None:
    """Train a vocabulary (SentencePiece BPE or unigram; or with Hugging Face `tokenizers`: GPT-2's
    byte-level BPE, WordPiece, unigram) on a deterministic sample of a corpus.

    Needs the [tokenizer] extra: pip install 'c4forge[tokenizer]'."""
    require_extra("sentencepiece")
    if flags.get("library") == "tokenizers" and not flags.get("model_type"):
        flags["model_type"] = "byte-bpe"
    config = tokenizer_config(config_file, overrides, **flags)
    lock_outputs(output)
    info = train_tokenizer(corpus, output, config, overwrite=overwrite, num_threads=threads)
    sample = info["sample"]
    say(f"{config.model_type} vocabulary of {config.vocab_size:,} trained in "
        f"{info['train_seconds']}s on {sample['documents']:,} documents "
        f"({sample['bytes'] / 1e6:.1f} MB" + (f", {sample['lines']:,} lines" if sample["lines"] else "")
        + f") -> {output}")


def special_token_pairs(values) -> tuple[tuple[str, int], ...]:
    """--special-token TEXT=ID pairs."""
    pairs = []
    for value in values or ():
        text, sep, number = value.rpartition("=")
        if not sep or not text or not number.isdigit():
            raise click.BadParameter(f"{value!r}: give TEXT=ID, e.g. '<|endoftext|>=50256'",
                                     param_hint="--special-token")
        pairs.append((text, int(number)))
    return tuple(pairs)


TOKENIZER_OPTIONS = [
    click.option("--tokenizer", "tokenizer_path", required=True, type=click.Path(exists=True),
                 help="A tokenizer: a `tokenizer train` directory, a Hugging Face tokenizer.json "
                      "(or a folder holding one), a SentencePiece .model, or a tiktoken ranks file."),
    click.option("--eos", default=None, metavar="TOKEN",
                 help="The end-of-document token appended to every document (its text or id). "
                      "[default: the tokenizer's own]"),
    click.option("--bos", default=None, metavar="TOKEN",
                 help="A token put before every document (its text or id; 'auto': the "
                      "tokenizer's own). [default: none]"),
    click.option("--tiktoken-encoding", default=None,
                 help="tiktoken ranks file: the encoding whose split pattern and special tokens "
                      "it has (gpt2, r50k_base, p50k_base, cl100k_base, o200k_base)."),
    click.option("--tiktoken-pattern", default=None, metavar="REGEX",
                 help="tiktoken ranks file: its split pattern, when it is not a known encoding's."),
    click.option("--special-token", "special_tokens", multiple=True, metavar="TEXT=ID",
                 help="tiktoken ranks file: a special token (repeatable), e.g. '<|endoftext|>=50256'."),
]


def tokenizer_options(command):
    for option in reversed(TOKENIZER_OPTIONS):
        command = option(command)
    return command


def tokenizer_spec(tokenizer_path, eos, bos, tiktoken_encoding, tiktoken_pattern, special_tokens):
    return TokenizerSpec(tokenizer_path, eos=eos, bos=bos, tiktoken_encoding=tiktoken_encoding,
                         tiktoken_pattern=tiktoken_pattern,
                         special_tokens=special_token_pairs(special_tokens))


@cli.command("encode", context_settings={"ignore_unknown_options": True})
@CORPUS
@tokenizer_options
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False))
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Parallel workers (default: all cores); with --runner the plan's parallelism "
                   "(the same value gives the same shards) and flink-local/spark-local's slots.")
@click.option("--mode", type=click.Choice(["processes", "threads"]), default="processes", show_default=True,
              help="Without --runner: worker processes (one library thread each), or one process "
                   "with the tokenizer library's own threads.")
@click.option("--runner", default=None,
              help="Encode as a Beam pipeline on this runner, as `corpus build` does: DirectRunner, "
                   "flink-local, spark-local, FlinkRunner, SparkRunner, PortableRunner, "
                   "DataflowRunner; Beam options follow (docs/distributed.md). [default: no Beam]")
@click.option("--docs-per-shard", type=click.IntRange(min=1), default=20_000, show_default=True,
              help="Most documents per token shard (shards are smaller where that spreads the "
                   "work: about 8 per worker, at least 256 documents each).")
@click.option("--overwrite", is_flag=True, help="Replace token shards already in --output.")
@click.argument("beam_args", nargs=-1, type=click.UNPROCESSED)
@output_options
def encode_command(corpus, output, workers, mode, runner, docs_per_shard, overwrite, beam_args,
                   **given) -> None:
    """Encode every document (EOS appended) into token shards that keep document boundaries,
    with the tokenizer's own library: ids equal to what it gives the same text.

    Needs the [tokenizer] extra: pip install 'c4forge[tokenizer]' (with --runner, [beam] too)."""
    require_extra("sentencepiece")
    spec = tokenizer_spec(**given)
    if beam_args and not runner:
        raise click.UsageError(f"unknown option(s) {' '.join(beam_args)}: Beam options go with --runner")
    if runner:
        require_extra("apache_beam")
        build, encode = beam_stage()
        try:
            inputs, options = build.split_beam_args(beam_args)
            if inputs:
                raise build.BuildError(f"unexpected argument(s): {' '.join(inputs)}")
            build.runner_and_args(runner, options, Console.verbose,
                                  workers if runner in ("flink-local", "spark-local") else None)
        except build.BuildError as exc:
            raise click.UsageError(str(exc)) from exc
        lock_outputs(output)
        with filtered_stderr():
            manifest = encode.run_encode(corpus, spec, output, runner=runner, beam_args=options,
                                              workers=workers, max_docs_per_shard=docs_per_shard,
                                              overwrite=overwrite, log=say, verbose=Console.verbose)
    else:
        lock_outputs(output)
        manifest = encode_corpus(corpus, spec, output, workers=workers,
                                 max_docs_per_shard=docs_per_shard, overwrite=overwrite, log=say,
                                 mode=mode)
    for split, info in manifest["splits"].items():
        say(f"{split}: {info['documents']:,} documents, {info['tokens']:,} tokens, "
            f"{info['bytes'] / 1e6:.2f} MB, {info['bytes_per_token']} bytes/token, "
            f"{len(info['shards'])} shard(s)")
    where = f" on {manifest['runner']}" if manifest.get("runner") else ""
    say(f"encoded in {manifest['seconds']}s with {manifest['workers']} worker(s){where} -> {output} "
        f"({manifest['dtype']})")


@cli.command("export")
@click.option("--input", "-i", "token_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="Token directory (from `tokenizer encode`).")
@click.option("--format", "fmt", required=True, type=click.Choice(list(EXPORTS)),
              help="megatron (Megatron-LM, NeMo), memmap (nanoGPT, OLMo), datatrove (nanotron), "
                   "mds (llm-foundry), litdata (LitGPT).")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False))
@click.option("--split", "splits", multiple=True, help="Split(s) to export (default: every split).")
@click.option("--seq-len", type=click.IntRange(min=1), default=None,
              help="mds: llm-foundry's concatenated samples of exactly N ids (default: one sample "
                   "per document).")
@click.option("--overwrite", is_flag=True, help="Replace an earlier export in --output (only its files).")
@output_options
def export_command(token_dir, fmt, output, splits, seq_len, overwrite) -> None:
    """Write a token directory in the format another trainer reads, checked against the token
    manifest (documents, tokens) before it is swapped in; prints how to open it."""
    lock_outputs(output)
    manifest = export_tokens(token_dir, output, fmt, splits=splits, overwrite=overwrite,
                             options={"seq_len": seq_len} if seq_len else {})
    for split, info in manifest["splits"].items():
        say(f"{split}: {info['documents']:,} documents, {info['tokens']:,} tokens -> {info['opens_with']}")


@cli.command("inspect")
@click.option("--input", "-i", "given", type=click.Path(exists=True, file_okay=False),
              help="Tokenizer directory.")
@click.argument("positional", required=False, metavar="[TOKDIR]",
                type=click.Path(exists=True, file_okay=False))
@click.option("--text", "text_file", type=click.Path(exists=True, dir_okay=False),
              help="Held-out text to measure on (e.g. WikiText-2 test).")
@json_option(help="Print the report as JSON.")
@output_options
def inspect_command(given, positional, text_file, as_json) -> None:
    """Vocabulary, bytes per token, tokens per word, byte-fallback share, longest pieces and a
    round trip.

    Needs the [tokenizer] extra: pip install 'c4forge[tokenizer]'."""
    require_extra("sentencepiece")
    directory = given or positional
    if not directory:
        raise click.UsageError("give a tokenizer directory (-i TOKDIR or TOKDIR)")

    report = inspect_tokenizer(directory, read_text_file(text_file) if text_file else None)
    click.echo(json.dumps(report, ensure_ascii=False, indent=2) if as_json else format_report(report))


def main(argv: Optional[Sequence[str]] = None) -> None:
    guarded_main(cli, argv, "tokenizer")


if __name__ == "__main__":
    main(sys.argv[1:])
