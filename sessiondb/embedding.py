"""Embedders: what turns a message's text, and a question, into a vector of its meaning.

Recall (sessiondb.recall) finds the messages that share a question's words. A message
that answers in other words ("my dog" for "Who is Buddy?") shares none; a vector of
meaning finds it. The vectors are derived data, like the words index: each backend keeps
them beside its words, computed off the acknowledgement path, caught up before a recall,
deleted and computed again from the messages on request. Nothing here is a core
dependency: an embedder is a small object a caller hands to `open_store(embedder=...)`,
and the ones named below are imported only when asked for.

An embedder has a `name`, a `revision` and a number of `dimensions`: together its space.
Every stored vector belongs to one space, and a recall never compares vectors of two: a
store whose vectors were computed by another embedder (or another revision of it) answers
lexically, saying why, until `sessiondb vectors rebuild --embedder NAME` (Store.rebuild_vectors)
computes them again.

Named embedders (`embedder_named`):
- `wordllama`: WordLlama's 256-dimension model, whose weights ship inside its package
  (`pip install sessiondb[wordllama]`): nothing is downloaded, ever.
- `sentence-transformers:<path>`: a sentence-transformers model already on this machine
  (`pip install sessiondb[sentence-transformers]`); loaded with downloads turned off.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass
from importlib import import_module
from math import fsum, isfinite, sqrt
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

from .errors import InvalidInput, SessionDBError

#: Characters of a message's text that are embedded: an answer is near the top of what
#: was said, and an encoder reads a few hundred words at most.
EMBED_CHARS = 2000
#: Texts handed to an embedder in one call.
EMBED_BATCH = 256
#: The widest vector a store keeps (OpenAI's largest model has 3,072 dimensions).
MAX_DIMENSIONS = 4096


@runtime_checkable
class Embedder(Protocol):
    """What `open_store(embedder=...)` takes: any object with these four members."""

    name: str  # what computed the vectors: a model's name
    revision: str  # its version: vectors of two revisions are not compared
    dimensions: int

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One vector of `dimensions` numbers per text, in order."""
        ...


class EmbedderFailed(SessionDBError):
    """The embedder raised or returned something other than one vector per text."""


@dataclass(frozen=True)
class Space:
    """The vectors one embedder computes: only vectors of one space are compared."""

    name: str
    revision: str
    dimensions: int

    @classmethod
    def of(cls, embedder: Embedder) -> Space:
        return cls(str(embedder.name), str(embedder.revision), int(embedder.dimensions))

    @property
    def key(self) -> str:
        """How a store records the space its vectors are in."""
        return f"{self.name}@{self.revision}/{self.dimensions}"


def other_space(stored: str, wanted: str) -> str:
    """What a recall says when the store's vectors are another embedder's."""
    return (f"the store's vectors were computed by {stored}, not by {wanted}: recall is lexical "
            "until `sessiondb vectors rebuild --embedder NAME` (Store.rebuild_vectors) computes them again")


def checked(embedder: Any) -> Embedder:
    """`embedder` if it is one (see Embedder), else InvalidInput saying what it lacks."""
    if isinstance(embedder, str):
        return embedder_named(embedder)
    if not isinstance(embedder, Embedder):
        raise InvalidInput("an embedder needs name, revision, dimensions and embed(texts); "
                           f"{type(embedder).__name__} lacks some of them")
    dimensions = embedder.dimensions
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or not 0 < dimensions <= MAX_DIMENSIONS:
        raise InvalidInput(f"an embedder's dimensions must be a whole number from 1 to {MAX_DIMENSIONS}, "
                           f"not {dimensions!r}")
    for field in ("name", "revision"):
        value = getattr(embedder, field)
        if not isinstance(value, str) or not value or len(value) > 200 or "\x00" in value:
            raise InvalidInput(f"an embedder's {field} must be text of 1 to 200 characters, not {value!r}")
    return embedder


def vectors(embedder: Embedder, texts: Sequence[str]) -> list[bytes]:
    """Each text's unit vector as float32 bytes (what a backend stores and compares by dot
    product); EmbedderFailed if the embedder raises or answers out of shape."""
    out: list[bytes] = []
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = [text[:EMBED_CHARS] for text in texts[start:start + EMBED_BATCH]]
        try:
            answer = list(embedder.embed(chunk))
        except Exception as exc:  # noqa: BLE001 - any failure of foreign code is the embedder's
            raise EmbedderFailed(f"the embedder {embedder.name!r} failed: {exc}") from exc
        if len(answer) != len(chunk):
            raise EmbedderFailed(f"the embedder {embedder.name!r} returned {len(answer)} vectors "
                                 f"for {len(chunk)} texts")
        out += [unit(vector, embedder) for vector in answer]
    return out


def unit(vector: Sequence[float], embedder: Embedder) -> bytes:
    """`vector` scaled to length 1, as float32 bytes (a zero vector stays zero: it is near nothing)."""
    try:
        numbers = [float(x) for x in vector]
    except (TypeError, ValueError) as exc:
        raise EmbedderFailed(f"the embedder {embedder.name!r} returned a vector that is not numbers") from exc
    if len(numbers) != embedder.dimensions or not all(map(isfinite, numbers)):
        raise EmbedderFailed(f"the embedder {embedder.name!r} returned a vector of {len(numbers)} numbers, "
                             f"not {embedder.dimensions} finite ones")
    length = sqrt(fsum(x * x for x in numbers))
    return array("f", [x / length for x in numbers] if length else numbers).tobytes()


def embedder_named(spec: str) -> Embedder:
    """The embedder a name gives (see the module's list), its package imported now."""
    kind, _, argument = spec.partition(":")
    if kind == "wordllama" and not argument:
        return WordLlamaEmbedder()
    if kind == "sentence-transformers" and argument:
        return SentenceTransformersEmbedder(argument)
    raise InvalidInput(f"no embedder is named {spec!r}: use 'wordllama' or 'sentence-transformers:<model path>'")


def _optional(module: str, extra: str) -> Any:
    try:
        return import_module(module)
    except ImportError:
        raise InvalidInput(f"this embedder needs {module}: pip install 'sessiondb[{extra}]'") from None


class WordLlamaEmbedder:
    """WordLlama's model with its packaged weights: fast on a CPU, nothing downloaded."""

    def __init__(self, dimensions: int = 256) -> None:
        wordllama = _optional("wordllama", "wordllama")
        # The package's own folder as the cache: its weights and tokenizer are found
        # there (its default lookup misses the tokenizer it ships), and never downloaded.
        self._model = wordllama.WordLlama.load(dim=dimensions, cache_dir=Path(wordllama.__file__).parent,
                                               disable_download=True)
        self.name = "wordllama-l2_supercat"
        self.revision = str(getattr(wordllama, "__version__", "unknown"))
        self.dimensions = dimensions

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return self._model.embed(list(texts), norm=True).tolist()


class SentenceTransformersEmbedder:
    """A sentence-transformers model from a path on this machine (downloads turned off)."""

    def __init__(self, path: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        module = _optional("sentence_transformers", "sentence-transformers")
        self._model = module.SentenceTransformer(path, device="cpu")
        self.name = f"sentence-transformers:{os.path.basename(path.rstrip('/'))}"
        self.revision = str(getattr(module, "__version__", "unknown"))
        self.dimensions = int(self._model.get_sentence_embedding_dimension())

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return self._model.encode(list(texts), normalize_embeddings=True).tolist()
