"""Cross-lingual alignment losses of the Max@R paper, as ``nn.Module``s for sentence-transformers.

Training rows are triplets (q_en, p_en, p_tgt): a pivot-language query, its passage in the pivot
language and the same passage in the target language (columns in that order).

- L_JSD = sqrt(JSD(P(z_en) || P(z_tgt))) + eps, P = softmax over the embedding *dimensions*,
  JSD(P||Q) = 1/2 KL(P||M) + 1/2 KL(Q||M), M = (P + Q) / 2 (natural log); mean over the batch.
- L_NCE = InfoNCE of p_tgt,i against the batch's queries (q_en,i positive, the others negatives),
  similarity = cosine x ``scale`` (sentence-transformers' default 20, i.e. temperature 0.05; the
  paper gives no temperature that we could find).

``loss`` picks the combination: ``jsd+nce`` (default), ``nce`` (w/o JSD), ``jsd`` (w/o NCE),
``nce-psg`` (L_NCE + InfoNCE between p_tgt and p_en instead of JSD, the paper's comparison).
"""
from __future__ import annotations

from typing import Any, Iterable

import torch
from torch import Tensor, nn

from ..util.errors import UnknownNameError
from .choices import LOSSES

DEFAULT_SCALE = 20.0
DEFAULT_EPS = 1e-8


def js_distance(z_a: Tensor, z_b: Tensor) -> Tensor:
    """sqrt(JSD(softmax(z_a) || softmax(z_b))) per row (natural log; 0 <= value <= sqrt(ln 2)).

    JSD is clamped at 1e-12 before the root so that equal inputs give a finite gradient.
    """
    log_p = torch.log_softmax(z_a, dim=-1)
    log_q = torch.log_softmax(z_b, dim=-1)
    log_m = torch.logsumexp(torch.stack([log_p, log_q]), dim=0) - torch.log(torch.tensor(2.0, dtype=z_a.dtype))
    kl_pm = (log_p.exp() * (log_p - log_m)).sum(-1)
    kl_qm = (log_q.exp() * (log_q - log_m)).sum(-1)
    return torch.sqrt((0.5 * kl_pm + 0.5 * kl_qm).clamp_min(1e-12))


def info_nce(anchors: Tensor, candidates: Tensor, scale: float = DEFAULT_SCALE) -> Tensor:
    """Mean cross-entropy of row i of ``anchors`` choosing candidate i among all ``candidates``
    (cosine similarity x ``scale``)."""
    a = torch.nn.functional.normalize(anchors, dim=-1)
    c = torch.nn.functional.normalize(candidates, dim=-1)
    logits = scale * a @ c.T
    return torch.nn.functional.cross_entropy(logits, torch.arange(len(a), device=a.device))


class AlignmentLoss(nn.Module):
    """L_JSD + L_NCE and its ablations over (query, passage_pivot, passage_target) columns."""

    def __init__(self, model: nn.Module, loss: str = "jsd+nce", scale: float = DEFAULT_SCALE,
                 eps: float = DEFAULT_EPS) -> None:
        super().__init__()
        if loss not in LOSSES:
            raise UnknownNameError(f"unknown loss {loss!r}; available: {', '.join(LOSSES)}")
        self.model, self.loss, self.scale, self.eps = model, loss, float(scale), float(eps)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        features = list(sentence_features)
        if len(features) != 3:
            raise ValueError(f"AlignmentLoss needs 3 columns (query, passage_pivot, passage_target), got {len(features)}")
        q = self.model(features[0])["sentence_embedding"] if self.loss != "jsd" else None
        p_en = self.model(features[1])["sentence_embedding"] if self.loss != "nce" else None
        p_tgt = self.model(features[2])["sentence_embedding"]
        return self.compute_loss_from_embeddings([q, p_en, p_tgt])

    def compute_loss_from_embeddings(self, embeddings: list[Tensor | None]) -> Tensor:
        q, p_en, p_tgt = embeddings
        total = 0.0
        if "jsd" in self.loss:
            total = total + (js_distance(p_en, p_tgt) + self.eps).mean()
        if "nce" in self.loss:
            total = total + info_nce(p_tgt, q, self.scale)
        if self.loss == "nce-psg":
            total = total + info_nce(p_tgt, p_en, self.scale)
        return total

    def get_config_dict(self) -> dict[str, Any]:
        return {"loss": self.loss, "scale": self.scale, "eps": self.eps, "similarity_fct": "cos_sim"}

    @property
    def citation(self) -> str:
        return "Max@R paper (cross-lingual alignment with sqrt-JSD + InfoNCE); see clirbench's docs/training.md."
