"""The workload: a GPT-2 style decoder stack in plain PyTorch (docs/architecture.md).
Vendor runners load it in their own (older) environments: torch and the standard library only.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn

from dabench.core.status import UnsupportedError


class Embedding(nn.Module):
    """Token embedding (vocab x hidden) plus learned position embedding (seq x hidden)."""

    def __init__(self, vocab_size: int, seq_len: int, hidden: int):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, hidden)
        self.pos = nn.Embedding(seq_len, hidden)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        return self.tok(ids) + self.pos(positions)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: separate Q, K, V projections, SDPA, output projection;
    with ``n_kv_heads`` < ``n_heads`` (grouped-query attention) K and V are ``n_kv_heads`` heads
    wide, each repeated for its group of query heads. Head counts follow the projected widths, so
    the same code runs on a tensor-parallel shard (whole heads per shard)."""

    def __init__(self, hidden: int, n_heads: int, n_kv_heads: Optional[int] = None):
        super().__init__()
        self.head_dim = hidden // n_heads
        kv = (n_kv_heads or n_heads) * self.head_dim
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, kv)
        self.v = nn.Linear(hidden, kv)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        q, k, v = (t.reshape(batch, seq, -1, self.head_dim).transpose(1, 2) for t in (self.q(x), self.k(x), self.v(x)))
        if k.shape[1] != q.shape[1]:  # grouped-query attention: each K/V head serves q_heads / kv_heads queries
            group = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(batch, seq, -1))


class MLP(nn.Module):
    """hidden -> ffn_mult * hidden -> GELU (tanh approximation, as GPT-2) -> hidden."""

    def __init__(self, hidden: int, ffn_hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(hidden, ffn_hidden)
        self.fc2 = nn.Linear(ffn_hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class DecoderBlock(nn.Module):
    """Pre-LN block: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, hidden: int, n_heads: int, ffn_hidden: int, n_kv_heads: Optional[int] = None):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, n_heads, n_kv_heads)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden, ffn_hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Head(nn.Module):
    """Final LayerNorm, LM head (hidden x vocab; :class:`DecoderStack` may tie its weight to the
    token table) and mean token cross-entropy."""

    def __init__(self, hidden: int, vocab_size: int):
        super().__init__()
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab_size, bias=False)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.ln_f(x))

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.logits(x)
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))


LayerTimer = Callable[[str, str, torch.Tensor], None]


class DecoderStack(nn.Module):
    """The whole stack. ``forward(ids, targets, timer=None)`` returns the scalar loss; a ``timer``
    is called with ("fwd_start"/"fwd_end", layer, input/output) at each layer boundary."""

    def __init__(
        self,
        n_layers: int,
        hidden: int,
        n_heads: int,
        seq_len: int,
        vocab_size: int,
        ffn_mult: int = 4,
        tie_embeddings: bool = False,
        n_kv_heads: Optional[int] = None,
    ):
        super().__init__()
        self.embedding = Embedding(vocab_size, seq_len, hidden)
        self.blocks = nn.ModuleList(
            DecoderBlock(hidden, n_heads, ffn_mult * hidden, n_kv_heads) for _ in range(n_layers)
        )
        self.head = Head(hidden, vocab_size)
        if tie_embeddings:  # GPT-2: lm_head.weight is wte.weight (vocab x hidden, the same shape)
            self.head.lm_head.weight = self.embedding.tok.weight
        self.apply(_init_weights)
        for name, param in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("fc2.weight"):
                # GPT-2: residual projections scaled by 1/sqrt(2 * n_layers)
                nn.init.normal_(param, mean=0.0, std=0.02 / math.sqrt(2 * max(1, n_layers)))

    @classmethod
    def from_config(cls, model) -> "DecoderStack":
        """Build from a :class:`dabench.config.sections.ModelConfig`; variants only the op graph
        prices raise UnsupportedError."""
        variants = {"ffn_type": "gelu", "position": "learned", "cross_attention_layers": 0, "head_tokens": 0}
        used = [f"{k}={getattr(model, k)}" for k, plain in variants.items() if getattr(model, k, plain) != plain]
        if getattr(model, "ffn_size", 0) and model.ffn_size != model.ffn_mult * model.hidden_size:
            used.append(f"ffn_size={model.ffn_size}")
        if used:
            raise UnsupportedError(
                f"the measured workload (dabench/workload/model.py) builds GPT-2 blocks only; "
                f"model {model.name} sets {', '.join(used)} (predict mode prices them)"
            )
        return cls(
            model.n_layers,
            model.hidden_size,
            model.n_heads,
            model.seq_len,
            model.vocab_size,
            model.ffn_mult,
            tie_embeddings=bool(getattr(model, "tie_embeddings", False)),
            n_kv_heads=getattr(model, "n_kv_heads", None),
        )

    def layer_names(self) -> list[str]:
        """Names of the subtasks a step is cut into: embedding, block.0 .. block.N-1, head."""
        return ["embedding", *(f"block.{i}" for i in range(len(self.blocks))), "head"]

    def forward(self, ids: torch.Tensor, targets: torch.Tensor, timer: LayerTimer | None = None) -> torch.Tensor:
        timer = timer or _untimed
        timer("fwd_start", "embedding", ids)
        x = self.embedding(ids)
        timer("fwd_end", "embedding", x)
        for i, block in enumerate(self.blocks):
            timer("fwd_start", f"block.{i}", x)
            x = block(x)
            timer("fwd_end", f"block.{i}", x)
        timer("fwd_start", "head", x)
        loss = self.head(x, targets)
        timer("fwd_end", "head", loss)
        return loss


def _untimed(event: str, layer: str, tensor: torch.Tensor) -> None:
    """The timer of an untimed forward: nothing."""


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def synthetic_batch(batch_size: int, seq_len: int, vocab_size: int, seed: int, device: str | torch.device = "cpu"):
    """Random token ids and next-token targets, reproducible from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab_size, (batch_size, seq_len + 1), generator=generator)
    return ids[:, :-1].contiguous().to(device), ids[:, 1:].contiguous().to(device)
