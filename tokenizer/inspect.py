"""What a tokenizer does to text: vocabulary, bytes per token, tokens per word, byte-fallback
share, longest pieces, and a round trip."""
from __future__ import annotations

import re
from typing import Optional

from c4forge.core.io import shown_place
from c4forge.tokenizer.train import TokenizerError, load_tokenizer

_BYTE_PIECE = re.compile(r"^<0x[0-9A-F]{2}>$")


def read_text_file(path: str) -> str:
    """A held-out text file as UTF-8; a binary or otherwise undecodable file is a one-line error
    saying where decoding failed."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TokenizerError(f"--text {path} is not UTF-8 text (undecodable byte at offset "
                             f"{exc.start:,}): give a plain-text file, e.g. WikiText-2's test split") from exc


def inspect_tokenizer(directory: str, text: Optional[str] = None, longest: int = 12) -> dict:
    sp, info = load_tokenizer(directory)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    byte_ids = {i for i, p in enumerate(pieces) if _BYTE_PIECE.match(p)}
    normal = [(p, i) for i, p in enumerate(pieces)
              if i not in byte_ids and not sp.is_control(i) and not sp.is_unknown(i)]
    report = {
        "directory": directory,
        "model_type": info["model_type"],
        "vocab_size": sp.get_piece_size(),
        "special_ids": info["special_ids"],
        "byte_pieces": len(byte_ids),
        "trained_on": shown_place(info["corpus"]["path"]),  # stored absolute; shown as given
        "sample": info["sample"],
        "longest_pieces": [p for p, _ in sorted(normal, key=lambda x: -len(x[0].encode("utf-8")))[:longest]],
    }
    if text is not None:
        ids = sp.encode(text)
        words = len(text.split())
        report.update({
            "text_bytes": len(text.encode("utf-8")),
            "tokens": len(ids),
            "bytes_per_token": round(len(text.encode("utf-8")) / max(1, len(ids)), 3),
            "tokens_per_word": round(len(ids) / max(1, words), 3),
            "byte_fallback_share": round(sum(1 for i in ids if i in byte_ids) / max(1, len(ids)), 5),
            "unk_tokens": sum(1 for i in ids if sp.is_unknown(i)),
            "round_trip_exact": sp.decode(ids) == text,
            "sample_pieces": sp.encode(text[:160], out_type=str),
        })
    return report


def format_report(report: dict) -> str:
    lines = [f"tokenizer {report['directory']}: {report['model_type']}, {report['vocab_size']:,} pieces "
             f"({report['byte_pieces']} byte pieces)",
             "special ids: " + ", ".join(f"{k!r}={v}" for k, v in report["special_ids"].items()),
             f"trained on {report['trained_on']}: {report['sample']['documents']:,} documents, "
             f"{report['sample']['bytes'] / 1e6:.1f} MB",
             "longest pieces: " + "  ".join(repr(p) for p in report["longest_pieces"])]
    if "tokens" in report:
        lines += [
            f"held-out text: {report['text_bytes']:,} bytes -> {report['tokens']:,} tokens",
            f"bytes per token {report['bytes_per_token']}, tokens per word {report['tokens_per_word']}, "
            f"byte-fallback share {report['byte_fallback_share']:.3%}, <unk> {report['unk_tokens']}",
            f"round trip decode(encode(text)) == text: {report['round_trip_exact']}",
            "sample: " + " ".join(repr(p) for p in report["sample_pieces"][:40]),
        ]
    return "\n".join(lines)
