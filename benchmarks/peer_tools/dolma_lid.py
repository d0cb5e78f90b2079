"""dolma's fastText English tagger on a local lid.176 model (the one every row uses; dolma's own
downloads lid.176.bin): handed to `dolma tag --tagger_modules` by bench_peer_tools.py."""
import os

from dolma import add_tagger
from dolma.taggers.language import FastTextEnglishLanguageDocumentTagger


@add_tagger("ft_lid176_local_en_doc")
class LocalLid176EnglishTagger(FastTextEnglishLanguageDocumentTagger):
    MODEL_PATH = os.environ["C4FORGE_LID176"]
