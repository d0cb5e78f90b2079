"""A plain port of tfds c4_utils.clean_page (v3.1.0): every line, Punkt on every kept line, no
shortcuts. The test oracle for corpus.clean's fast paths."""
import re

from c4forge.corpus.text import sentences

_END_MARKS = (".", "?", "!", '"')
_ELLIPSIS = "..."
_POLICY_SUBSTRINGS = ["terms of use", "privacy policy", "cookie policy", "uses cookies",
                      "use of cookies", "use cookies"]
_CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]")


def clean_page(text, counter_inc_fn, min_words_per_line=5, min_num_sentences=3,
               max_word_length=1000):
    lines = text.splitlines()
    valid_lines = []
    num_sentences = 0

    def line_has_too_long_word(line):
        for word in line.split():
            if len(word) > max_word_length:
                return True
        return False

    for line in lines:
        line = line.strip()
        if line_has_too_long_word(line):
            counter_inc_fn("line-filtered:too_long_word")
            continue
        line = _CITATION.sub("", line)
        if not line.endswith(_END_MARKS) or line.endswith(_ELLIPSIS):
            counter_inc_fn("line-filtered:no_endmark")
            continue
        if len(line.split()) < min_words_per_line:
            counter_inc_fn("line-filtered:too_short")
            continue
        line_lower = line.lower()
        if "lorem ipsum" in line_lower:
            counter_inc_fn("filtered:loremipsum")
            return None
        if "javascript" in line_lower:
            counter_inc_fn("line-filtered:javascript")
            continue
        if "{" in line:
            counter_inc_fn("filtered:squigglybracket")
            return None
        if any(p in line_lower for p in _POLICY_SUBSTRINGS):
            counter_inc_fn("line-filtered:policy")
            continue
        num_sentences += len(sentences.get_sentences(line))
        valid_lines.append(line)
        counter_inc_fn("line-passed")

    if num_sentences < min_num_sentences:
        counter_inc_fn("filtered:too_few_sentences")
        return None
    counter_inc_fn("passed")
    return "\n".join(valid_lines).strip()
