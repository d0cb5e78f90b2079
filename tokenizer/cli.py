"""``tokenizer``: train SentencePiece vocabularies, encode corpora, inspect tokenizers."""
from __future__ import annotations

import json
import sys
from typing import Optional, Sequence

import click

from tokenizer.train import TokenizerConfig, TokenizerError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="c4forge", message="%(prog)s (c4forge %(version)s)")
def cli() -> None:
    """Train SentencePiece vocabularies from corpus shards and encode corpora into token shards."""


@cli.command("train")
@click.option("--corpus", required=True, type=click.Path(exists=True, file_okay=False),
              help="Corpus directory (from `corpus build`).")
@click.option("--model-type", type=click.Choice(["bpe", "unigram"]), default="bpe", show_default=True)
@click.option("--vocab-size", type=int, default=8000, show_default=True,
              help="Pieces in total: 6 specials + 256 bytes + learned pieces.")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False))
@click.option("--sample-bytes", type=int, default=1_000_000_000, show_default=True,
              help="UTF-8 bytes of text to sample for training (deterministic).")
@click.option("--seed", type=int, default=0, show_default=True, help="Picks the sample.")
@click.option("--split", default="train", show_default=True)
@click.option("--t5-sentinels", type=int, default=0, show_default=True,
              help="Add <extra_id_0>..<extra_id_{N-1}> (ids 6..5+N).")
@click.option("--character-coverage", type=float, default=0.9995, show_default=True)
@click.option("--threads", type=int, default=None, help="Trainer threads (default: all cores).")
@click.option("--overwrite", is_flag=True, help="Replace a tokenizer already in --output.")
def train_command(corpus, model_type, vocab_size, output, sample_bytes, seed, split, t5_sentinels,
                  character_coverage, threads, overwrite) -> None:
    """Train a BPE or unigram vocabulary on a deterministic sample of a corpus."""
    from tokenizer.train import train_tokenizer

    config = TokenizerConfig(model_type=model_type, vocab_size=vocab_size, sample_bytes=sample_bytes,
                             seed=seed, split=split, t5_sentinels=t5_sentinels,
                             character_coverage=character_coverage)
    try:
        info = train_tokenizer(corpus, output, config, overwrite=overwrite, num_threads=threads)
    except TokenizerError as exc:
        raise click.ClickException(str(exc)) from exc
    sample = info["sample"]
    click.echo(f"{model_type} vocabulary of {vocab_size:,} trained in {info['train_seconds']}s on "
               f"{sample['documents']:,} documents ({sample['bytes'] / 1e6:.1f} MB, "
               f"{sample['lines']:,} lines) -> {output}")


@cli.command("encode")
@click.option("--corpus", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--tokenizer", "tokenizer_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False))
@click.option("--workers", type=int, default=None, help="Parallel workers (default: all cores).")
@click.option("--mode", type=click.Choice(["processes", "threads"]), default="processes", show_default=True,
              help="Worker processes (one sentencepiece thread each), or one process with "
                   "sentencepiece's own threads.")
@click.option("--docs-per-shard", type=int, default=20_000, show_default=True,
              help="Most documents per token shard.")
@click.option("--overwrite", is_flag=True, help="Replace token shards already in --output.")
def encode_command(corpus, tokenizer_dir, output, workers, mode, docs_per_shard, overwrite) -> None:
    """Encode every document (EOS appended) into token shards that keep document boundaries."""
    from tokenizer.encode import encode_corpus

    try:
        manifest = encode_corpus(corpus, tokenizer_dir, output, workers, docs_per_shard, overwrite,
                                 log=click.echo, mode=mode)
    except TokenizerError as exc:
        raise click.ClickException(str(exc)) from exc
    for split, info in manifest["splits"].items():
        click.echo(f"{split}: {info['documents']:,} documents, {info['tokens']:,} tokens, "
                   f"{info['bytes'] / 1e6:.2f} MB, {info['bytes_per_token']} bytes/token, "
                   f"{len(info['shards'])} shard(s)")
    click.echo(f"encoded in {manifest['seconds']}s with {manifest['workers']} worker(s) -> {output} "
               f"({manifest['dtype']})")


@cli.command("inspect")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--text", "text_file", type=click.Path(exists=True, dir_okay=False),
              help="Held-out text to measure on (e.g. WikiText-2 test).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def inspect_command(directory, text_file, as_json) -> None:
    """Vocabulary, bytes per token, tokens per word, byte-fallback share, longest pieces and a
    round trip."""
    from tokenizer.inspect import format_report, inspect_tokenizer

    text = None
    if text_file:
        with open(text_file, encoding="utf-8", errors="strict") as handle:
            text = handle.read()
    try:
        report = inspect_tokenizer(directory, text)
    except TokenizerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(report, ensure_ascii=False, indent=2) if as_json else format_report(report))


def main(argv: Optional[Sequence[str]] = None) -> None:
    from corpus.cliutil import guarded_main

    guarded_main(cli, argv, "tokenizer")


if __name__ == "__main__":
    main(sys.argv[1:])
