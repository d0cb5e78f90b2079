"""Compare Hugging Face AutoTokenizer with expected sentencepiece ids, in whatever Python runs
this (the project's venv has transformers 4; tests also run it under transformers 5).

Usage: python scripts/hf_tokenizer_check.py TOKENIZER_DIR CASES.json
CASES.json: {"texts": [...], "ids": [[...], ...]}. Prints one JSON line: the transformers
version, documents, id and decode mismatches (ids without special tokens; with them, the
document start `</s>` must come first), and the first mismatch if any.
"""
import json
import sys


def main() -> None:
    import transformers
    from transformers import AutoTokenizer

    directory, cases_path = sys.argv[1], sys.argv[2]
    with open(cases_path, encoding="utf-8") as handle:
        cases = json.load(handle)
    tok = AutoTokenizer.from_pretrained(directory)
    id_bad, decode_bad, start_bad, first = 0, 0, 0, None
    for i, (text, want) in enumerate(zip(cases["texts"], cases["ids"])):
        got = tok(text, add_special_tokens=False)["input_ids"]
        if got != want:
            id_bad += 1
            if first is None:
                k = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                first = {"document": i, "token": k, "got": got[max(0, k - 3):k + 3],
                         "want": want[max(0, k - 3):k + 3]}
        # With special tokens (transformers' default) the document start comes first.
        if tok(text)["input_ids"] != [tok.bos_token_id] + want:
            start_bad += 1
        if tok.decode(want, skip_special_tokens=False, clean_up_tokenization_spaces=False) != text:
            decode_bad += 1
    print(json.dumps({"transformers": transformers.__version__, "class": type(tok).__name__,
                      "documents": len(cases["texts"]), "id_mismatches": id_bad,
                      "decode_mismatches": decode_bad, "first": first,
                      "with_special_tokens_mismatches": start_bad,
                      "eos": tok.eos_token_id, "pad": tok.pad_token_id, "bos": tok.bos_token_id,
                      "unk": tok.unk_token_id, "mask": tok.convert_tokens_to_ids("<mask>")}))


if __name__ == "__main__":
    main()
