"""Vocabularies of the ``text`` task: text to token ids, and how many UTF-8 bytes each id stands for.

``token_bytes``: a loss of ``L`` nats per token over ``N`` tokens and ``B`` bytes is ``L * N / (B * ln 2)`` bits
per byte, which compares across vocabularies.

- ``char`` (:class:`CharVocab`): the sorted distinct characters of the whole corpus (only the
  character set, not its counts, is read outside the training split).
- ``bpe`` (:class:`BPEVocab`): byte-level BPE (Sennrich et al., ACL 2016; GPT-2's byte alphabet
  and pre-tokenisation regex, Radford et al. 2019), trained with Hugging Face ``tokenizers``'
  ``BpeTrainer`` on the training split only, up to ``vocab_size`` ids (256 bytes, then merges).
  No special tokens, no added prefix space: every string round-trips. Its definition is the
  tokenizer's JSON, its digest that JSON's sha256.

  **Cost.** The trainer's time grows with the square of a pre-token's length (400,000 characters
  of ``ACGT``, one "word": 49 s), so a training text holding a run of :data:`MAX_WORD` characters
  without whitespace (or of whitespace) is pre-split into pieces of that length: then training
  takes about 1.1 µs per character. Any prose keeps the plain byte-level pre-tokenizer.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
from pathlib import Path

import numpy as np

from harness.files import write_atomic

log = logging.getLogger(__name__)

MAX_WORD = 256  # the longest run of (non-)whitespace the BPE trainer sees as one word (Cost, above)

_LONG_RUN = re.compile(rf"\S{{{MAX_WORD}}}|\s{{{MAX_WORD}}}")


class CharVocab:
    """One id per character of ``chars`` (distinct, in ascending code-point order).

    Its ``definition`` is ``chars``, its ``digest`` that string's sha256.
    """

    kind = "char"

    def __init__(self, chars: str) -> None:
        self.chars = self.definition = chars
        self.digest, self.size = hashlib.sha256(chars.encode("utf-8")).hexdigest(), len(chars)
        self._codepoints = np.array([ord(c) for c in chars], dtype=np.uint32)  # (V,) ascending
        assert (np.diff(self._codepoints.astype(np.int64)) > 0).all(), "chars must be distinct and sorted"

    @property
    def token_bytes(self) -> np.ndarray:
        """(V,) int64: the UTF-8 length of each character (1 to 4)."""
        return np.array([len(c.encode("utf-8")) for c in self.chars], dtype=np.int64)

    def encode(self, text: str) -> np.ndarray:
        """(len(text),) int32 ids; ``ValueError`` for a character outside the vocabulary."""
        points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")  # (N,) code points
        ids = np.searchsorted(self._codepoints, points)
        known = ids < self.size
        known[known] = self._codepoints[ids[known]] == points[known]
        if not known.all():
            at = int(np.argmin(known))
            raise ValueError(f"character {text[at]!r} at offset {at} is not in the vocabulary")
        return ids.astype(np.int32)


class BPEVocab:
    """A trained byte-level BPE tokenizer (Hugging Face ``tokenizers``), from its JSON ``definition``.

    ``digest``: that JSON's sha256.
    """

    kind = "bpe"

    def __init__(self, definition: str) -> None:
        from tokenizers import Tokenizer

        self.definition, self.digest = definition, hashlib.sha256(definition.encode("utf-8")).hexdigest()
        self._tokenizer = Tokenizer.from_str(definition)
        self.size = self._tokenizer.get_vocab_size()

    @classmethod
    def train(cls, text: str, vocab_size: int) -> BPEVocab:
        """Train on ``text`` (the training split) up to ``vocab_size`` ids, deterministically.

        Says so on stderr first.
        """
        from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
        long_run = _LONG_RUN.search(text) is not None
        cut = f" (runs without whitespace cut every {MAX_WORD} characters)" if long_run else ""
        say = f"training a byte-level BPE of {vocab_size:,} tokens on {len(text):,} characters{cut} ..."
        print(say, file=sys.stderr, flush=True)
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = (
            pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(_LONG_RUN.pattern), behavior="isolated"), byte_level])
            if long_run
            else byte_level  # a text without such a run: byte-level alone, tokenizer and digest unaffected by the split
        )
        tokenizer.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()  # no special tokens (the trainer's default)
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=alphabet, show_progress=False)
        tokenizer.train_from_iterator([text], trainer=trainer)
        return cls(tokenizer.to_str())

    @classmethod
    def cached(cls, text: str, vocab_size: int, path: Path) -> BPEVocab:
        """The tokenizer stored at ``path``, else one trained on ``text`` and stored there.

        Stored atomically; a cache that cannot be written is skipped with a warning.
        """
        if path.is_file():
            try:
                return cls(path.read_text(encoding="utf-8"))
            except Exception as err:  # noqa: BLE001 a damaged cache file: tokenizers raises plain Exception
                log.warning("retraining the BPE tokenizer: %s is unreadable (%s)", path, err)
        vocab = cls.train(text, vocab_size)
        try:
            write_atomic(path, vocab.definition.encode("utf-8"))
        except OSError as err:
            log.warning("the BPE tokenizer is not cached: %s cannot be written (%s)", path, err)
        return vocab

    @property
    def token_bytes(self) -> np.ndarray:
        """(V,) int64: bytes per id; a byte-level token has one symbol per byte."""
        out = np.zeros(self.size, dtype=np.int64)
        for token, i in self._tokenizer.get_vocab().items():
            out[i] = len(token)
        return out

    def encode(self, text: str) -> np.ndarray:
        """(N,) int32 ids of the N tokens of ``text``."""
        return np.array(self._tokenizer.encode(text).ids, dtype=np.int32)
