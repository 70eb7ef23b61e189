"""Alignment losses against a direct numpy computation: values, gradient signs, sqrt-JSD properties."""
from __future__ import annotations

import numpy as np
import pytest

import torch  # noqa: E402

from clirbench.train.losses import AlignmentLoss, info_nce, js_distance  # noqa: E402


def np_softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_js_distance(a, b):
    p, q = np_softmax(a), np_softmax(b)
    m = (p + q) / 2
    kl = lambda x, y: (x * np.log(x / y)).sum(-1)  # noqa: E731
    return np.sqrt(0.5 * kl(p, m) + 0.5 * kl(q, m))


def np_info_nce(anchors, candidates, scale):
    a = anchors / np.linalg.norm(anchors, axis=1, keepdims=True)
    c = candidates / np.linalg.norm(candidates, axis=1, keepdims=True)
    logits = scale * a @ c.T
    logits = logits - logits.max(1, keepdims=True)
    log_prob = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    return -np.mean(np.diag(log_prob))


def np_alignment(q, p_en, p_tgt, loss, scale=20.0, eps=1e-8):
    total = 0.0
    if "jsd" in loss:
        total += np.mean(np_js_distance(p_en, p_tgt) + eps)
    if "nce" in loss:
        total += np_info_nce(p_tgt, q, scale)
    if loss == "nce-psg":
        total += np_info_nce(p_tgt, p_en, scale)
    return total


def numeric_grad(f, x, h=1e-5):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += h
        down[idx] -= h
        g[idx] = (f(up) - f(down)) / (2 * h)
    return g


@pytest.fixture
def batch():
    rng = np.random.default_rng(3)
    return [rng.normal(size=(4, 6)) for _ in range(3)]  # q, p_en, p_tgt


def test_js_distance_matches_numpy_and_is_a_symmetric_metric_at_zero(batch):
    _, a, b = batch
    got = js_distance(torch.tensor(a), torch.tensor(b)).numpy()
    assert np.allclose(got, np_js_distance(a, b), atol=1e-10)
    assert np.allclose(got, js_distance(torch.tensor(b), torch.tensor(a)).numpy(), atol=1e-12)  # symmetric
    same = js_distance(torch.tensor(a), torch.tensor(a)).numpy()
    assert np.all(same <= 1e-6)  # zero up to the 1e-12 clamp under the root
    assert np.all(got > 1e-3) and np.all(got <= np.sqrt(np.log(2)))
    # a shift of all logits leaves the softmax, hence the distance, unchanged
    assert np.allclose(js_distance(torch.tensor(a + 5.0), torch.tensor(b)).numpy(), got, atol=1e-10)


def test_js_distance_gradient_is_finite_on_equal_inputs():
    z = torch.randn(2, 5, dtype=torch.float64, requires_grad=True)
    js_distance(z, z.detach().clone()).sum().backward()
    assert torch.isfinite(z.grad).all()


def test_info_nce_matches_numpy(batch):
    q, _, p = batch
    for scale in (1.0, 20.0):
        got = info_nce(torch.tensor(p), torch.tensor(q), scale).item()
        assert got == pytest.approx(np_info_nce(p, q, scale), abs=1e-9)
    # the positive on the diagonal: identical anchors and candidates give a lower loss than shuffled ones
    aligned = info_nce(torch.tensor(q), torch.tensor(q), 20.0).item()
    shuffled = info_nce(torch.tensor(q), torch.tensor(q[::-1].copy()), 20.0).item()
    assert aligned < shuffled


@pytest.mark.parametrize("loss", ["jsd+nce", "nce", "jsd", "nce-psg"])
def test_alignment_loss_values_and_gradient_signs_match_numpy(batch, loss):
    q, p_en, p_tgt = batch
    module = AlignmentLoss(model=None, loss=loss, scale=20.0)
    tensors = [torch.tensor(x, requires_grad=True) for x in batch]
    value = module.compute_loss_from_embeddings(tensors)
    assert value.item() == pytest.approx(np_alignment(q, p_en, p_tgt, loss), abs=1e-9)
    value.backward()
    for k, name in enumerate(["q", "p_en", "p_tgt"]):
        def f(x, k=k):
            args = [x if j == k else batch[j] for j in range(3)]
            return np_alignment(*args, loss)

        expected = numeric_grad(f, batch[k])
        if tensors[k].grad is None:  # a column this loss does not use
            assert (loss, name) in {("jsd", "q"), ("nce", "p_en")} and np.allclose(expected, 0)
            continue
        got = tensors[k].grad.numpy()
        big = np.abs(expected) > 1e-4
        assert big.any()
        assert np.array_equal(np.sign(got[big]), np.sign(expected[big])), name
        assert np.allclose(got, expected, atol=1e-6)


def test_jsd_gradient_pulls_the_passages_together():
    """One gradient step on L_JSD alone lowers the distance between the two passages."""
    a = torch.tensor([[2.0, 0.0, -1.0]], requires_grad=True)
    b = torch.tensor([[-1.0, 1.0, 0.5]], requires_grad=True)
    loss = AlignmentLoss(model=None, loss="jsd")
    before = loss.compute_loss_from_embeddings([None, a, b])
    before.backward()
    with torch.no_grad():
        after = loss.compute_loss_from_embeddings([None, a - 0.1 * a.grad, b - 0.1 * b.grad])
    assert after < before


def test_unknown_loss_is_refused_by_name():
    from clirbench.util.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="unknown loss 'kl'.*jsd\\+nce"):
        AlignmentLoss(model=None, loss="kl")


def test_alignment_loss_runs_on_a_sentence_transformer(tiny_bert_dir):
    """The module as the trainer calls it: tokenized features of three columns, labels ignored."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(tiny_bert_dir, device="cpu")
    texts = [["what is the capital", "who barked"], ["Paris is the capital", "A dog barked"],
             ["Paris ist die Hauptstadt", "Der Hund bellt"]]
    features = [model.tokenize(col) for col in texts]
    loss = AlignmentLoss(model, "jsd+nce")
    value = loss(features, torch.zeros(2))
    value.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert value.item() > 0 and grads and any(g.abs().sum() > 0 for g in grads)
    embeddings = [model(f)["sentence_embedding"] for f in features]
    assert value.item() == pytest.approx(loss.compute_loss_from_embeddings(embeddings).item(), rel=1e-5)
    assert loss.get_config_dict()["scale"] == 20.0
