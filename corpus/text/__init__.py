"""Splitting text as the rules count it: sentences (NLTK Punkt), words (datatrove's and spaCy's),
a page's words and n-grams worked out once, URL normalisation and the hashed split."""
