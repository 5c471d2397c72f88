"""The op graph: the work of one training step, per op and per layer, as numbers.
:func:`build_opgraph` (model, micro-batch, precision) -> :class:`OpGraph`, FLOPs as
``torch.utils.flop_counter`` counts them. Derivation: docs/metrics.md, "Work of one step".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from dabench.config.sections import DTYPE_BYTES, FP8, ModelConfig, PrecisionConfig

OP_CLASSES = ("matmul", "attention", "norm", "elementwise", "embedding", "loss", "optimizer")
PHASES = ("fwd", "bwd", "opt")

ADAMW_FLOPS_PER_PARAM = 12.0  #: moments (5), bias correction (2), sqrt+div (2), decay+update (3)
GELU_FLOPS_PER_ELEMENT = 8.0  #: tanh approximation: ~8 operations per element forward
LAYERNORM_FLOPS_PER_ELEMENT = 8.0  #: mean, variance, normalise, scale, shift
SOFTMAX_XENT_FLOPS_PER_ELEMENT = 5.0  #: max, exp, sum, log, pick per logit
SWIGLU_FLOPS_PER_ELEMENT = 6.0  #: SiLU (exp, add, divide, multiply ~5) and the gate multiply
ROTARY_FLOPS_PER_ELEMENT = 3.0  #: x*cos + rotate(x)*sin per element of q and k
FP8_CAST_FLOPS_PER_ELEMENT = 3.0  #: |x| into the running amax, multiply by the scale, convert


@dataclass(frozen=True)
class Op:
    """One op in one phase. FLOPs and bytes per micro-batch step (docs/metrics.md, "Work of one step")."""

    name: str
    op_class: str
    phase: str
    flops: float
    bytes: float
    params: int = 0
    saved_bytes: float = 0.0
    dims: tuple[int, ...] = ()  #: a linear's forward GEMM (M, N, K) = (tokens, fan_out, fan_in); () otherwise

    def __init__(
        self,
        name: str,
        op_class: str,
        phase: str,
        flops: float,
        bytes: float,  # noqa: A002
        params: int = 0,
        saved_bytes: float = 0.0,
        dims: tuple[int, ...] = (),
    ) -> None:
        # still frozen (no setattr after this); every prediction builds an op graph, and filling
        # __dict__ directly skips the generated init's object.__setattr__ per field
        d = self.__dict__
        d["name"], d["op_class"], d["phase"], d["flops"], d["bytes"] = name, op_class, phase, flops, bytes
        d["params"], d["saved_bytes"], d["dims"] = params, saved_bytes, dims


@dataclass(frozen=True)
class LayerTotals:
    flops: dict[str, float]
    bytes: dict[str, float]
    params: int
    saved_bytes: float


def _totals(ops: tuple[Op, ...]) -> LayerTotals:
    return LayerTotals(
        {phase: sum((op.flops for op in ops if op.phase == phase), 0.0) for phase in PHASES},
        {phase: sum((op.bytes for op in ops if op.phase == phase), 0.0) for phase in PHASES},
        sum(op.params for op in ops),
        sum((op.saved_bytes for op in ops), 0.0),
    )


@dataclass(frozen=True)
class Layer:
    """A subtask-sized piece of the stack: ``embedding``, ``block.<i>`` or ``head``."""

    name: str
    kind: str
    ops: tuple[Op, ...]
    totals: LayerTotals = field(repr=False, compare=False)

    def __init__(self, name: str, kind: str, ops: tuple[Op, ...], totals: LayerTotals) -> None:
        # frozen; built once per layer of every op graph (see Op.__init__)
        d = self.__dict__
        d["name"], d["kind"], d["ops"], d["totals"] = name, kind, ops, totals

    @property
    def flops(self) -> float:
        """FLOPs of forward + backward + optimizer update."""
        return sum(self.totals.flops.values())

    @property
    def bytes(self) -> float:
        return sum(self.totals.bytes.values())

    @property
    def params(self) -> int:
        return self.totals.params

    @property
    def saved_bytes(self) -> float:
        return self.totals.saved_bytes


@dataclass(frozen=True)
class OpGraph:
    """One training step of ``model`` on a micro-batch of ``batch_size`` at ``precision``."""

    model: ModelConfig
    batch_size: int
    precision: PrecisionConfig
    layers: tuple[Layer, ...]

    def layer(self, name: str) -> Layer:
        return {layer.name: layer for layer in self.layers}[name]

    @cached_property
    def _folded(self) -> tuple[tuple[Layer, int], ...]:
        """(layer, count) with layers sharing one op tuple (identical blocks) folded together."""
        shared = [id(layer.ops) for layer in self.layers]
        # in order of first appearance; the layer kept for each op tuple is any one that holds it
        kept = {id(layer.ops): layer for layer in self.layers}
        return tuple((layer, shared.count(key)) for key, layer in kept.items())

    def flops(self, phase: str | None = None) -> float:
        """Total FLOPs of one micro-batch step (one phase, or all three)."""
        phases = PHASES if phase is None else (phase,)
        return sum(layer.totals.flops[p] * count for layer, count in self._folded for p in phases)

    def bytes(self, phase: str | None = None) -> float:
        phases = PHASES if phase is None else (phase,)
        return sum(layer.totals.bytes[p] * count for layer, count in self._folded for p in phases)

    @cached_property
    def params(self) -> int:
        return sum(layer.params for layer in self.layers)

    @cached_property
    def saved_bytes(self) -> float:
        """Activation bytes held between forward and backward for one micro-batch."""
        return sum(layer.saved_bytes for layer in self.layers)

    def by_class(self, phases: tuple[str, ...] = PHASES) -> dict[str, tuple[float, float]]:
        """{op class: (FLOPs, bytes)} summed over layers and the given phases."""
        # identical blocks share one op tuple: priced once, times its count
        ops = [(op, count) for layer, count in self._folded for op in layer.ops if op.phase in phases]
        sums = {
            c: (
                sum((op.flops * n for op, n in ops if op.op_class == c), 0.0),
                sum((op.bytes * n for op, n in ops if op.op_class == c), 0.0),
            )
            for c in OP_CLASSES
        }
        return {c: (f, b) for c, (f, b) in sums.items() if f or b}

    def training_state_bytes(self) -> float:
        """Weights + gradients + AdamW moments (all in the parameter dtype; fp32 under mixed)."""
        return 4 * self.params * self.precision.param_bytes


def _linear(name: str, tokens: int, fan_in: int, fan_out: int, e: int, w: int, g: int, bias: bool = True) -> list[Op]:
    weight = fan_in * fan_out
    params = weight + (fan_out if bias else 0)
    return [
        Op(
            name,
            "matmul",
            "fwd",
            2.0 * tokens * fan_in * fan_out,
            float(tokens * fan_in * e + params * w + tokens * fan_out * e),
            params,
            float(tokens * fan_in * e),
            (tokens, fan_out, fan_in),
        ),
        # dX = dY W^T and dW = X^T dY
        Op(
            name,
            "matmul",
            "bwd",
            4.0 * tokens * fan_in * fan_out,
            float(tokens * fan_out * e + tokens * fan_in * e + params * w + tokens * fan_in * e + params * g),
            dims=(tokens, fan_out, fan_in),
        ),
    ]


def _elementwise(name: str, op_class: str, elements: int, flops_per: float, e: int, saved: float) -> list[Op]:
    return [
        Op(name, op_class, "fwd", flops_per * elements, float(2 * elements * e), 0, saved),
        Op(name, op_class, "bwd", 2.0 * flops_per * elements, float(3 * elements * e)),
    ]


def _layernorm(name: str, tokens: int, hidden: int, e: int, w: int, g: int) -> list[Op]:
    params = 2 * hidden
    elements = tokens * hidden
    return [
        Op(
            name,
            "norm",
            "fwd",
            LAYERNORM_FLOPS_PER_ELEMENT * elements,
            float(2 * elements * e + params * w),
            params,
            float(elements * e + 2 * tokens * 4),
        ),
        Op(
            name,
            "norm",
            "bwd",
            2.0 * LAYERNORM_FLOPS_PER_ELEMENT * elements,
            float(3 * elements * e + params * w + params * g),
        ),
    ]


def _adamw(params: int, s: int) -> Op:
    # reads parameter, gradient, m, v; writes parameter, m, v (all in the parameter dtype)
    return Op("adamw", "optimizer", "opt", ADAMW_FLOPS_PER_PARAM * params, float(7 * params * s))


def _scaled(ops: list[Op], fraction: float) -> list[Op]:
    """``ops`` with FLOPs, bytes, params and saved bytes scaled by ``fraction`` (params rounded)."""
    return [
        Op(
            op.name,
            op.op_class,
            op.phase,
            op.flops * fraction,
            op.bytes * fraction,
            int(round(op.params * fraction)),
            op.saved_bytes * fraction,
            op.dims,
        )
        for op in ops
    ]


def _attention_ops(prefix: str, batch: int, model: ModelConfig, e: int, w: int, s: int, rotary: bool) -> list[Op]:
    """q, k, v projections, the score/softmax/value core and the out-projection of one attention;
    with grouped-query attention k and v are ``kv_heads`` heads wide, each shared by a group of query
    heads (the score and value FLOPs are the same)."""
    tokens = batch * model.seq_len
    h = model.hidden_size
    kv = model.kv_heads * model.head_dim
    act, kv_act = tokens * h, tokens * kv
    ops = _linear(f"{prefix}.q", tokens, h, h, e, w, s)
    ops += _linear(f"{prefix}.k", tokens, h, kv, e, w, s) + _linear(f"{prefix}.v", tokens, h, kv, e, w, s)
    if rotary:  # on q and k
        ops += _elementwise(f"{prefix}.rotary", "elementwise", act + kv_act, ROTARY_FLOPS_PER_ELEMENT, e, 0.0)
    score = 4.0 * batch * model.seq_len * model.seq_len * h
    lse = batch * model.n_heads * model.seq_len * 4
    # forward reads q, k, v and writes out (all saved); backward reads q, k, v, out, d_out, writes dq, dk, dv
    ops += [
        Op(
            f"{prefix}.sdpa",
            "attention",
            "fwd",
            score,
            float((2 * act + 2 * kv_act) * e),
            0,
            float((2 * act + 2 * kv_act) * e + lse),
        ),
        Op(f"{prefix}.sdpa", "attention", "bwd", 2.0 * score, float((4 * act + 4 * kv_act) * e)),
    ]
    ops += _linear(f"{prefix}.proj", tokens, h, h, e, w, s)
    return ops


def _fp8_casts(ops: list[Op], e: int) -> list[Op]:
    """``ops`` with an FP8 cast before each linear GEMM (``precision=fp8``): forward casts its input X
    (M x K) and weight W (K x N) to E4M3, backward its output gradient dY (M x N) to E5M2 (the FP8 X
    and W are kept for dX = dY W^T and dW = X^T dY). One kernel per tensor reads the e-byte tensor,
    reduces its amax into the history and writes the 1-byte copy at the scale the history gave."""
    out = []
    for op in ops:
        if op.op_class == "matmul" and op.dims:
            m, n, k = op.dims
            share = op.flops / ((2.0 if op.phase == "fwd" else 4.0) * m * n * k)  # cross-attention's fraction
            for elements in (m * k, k * n) if op.phase == "fwd" else (m * n,):
                count = elements * share
                out.append(
                    Op(f"{op.name}.cast", "elementwise", op.phase, FP8_CAST_FLOPS_PER_ELEMENT * count, (e + 1) * count)
                )
        out.append(op)
    return out


def _block_ops(model: ModelConfig, batch: int, e: int, w: int, s: int, fp8: bool = False) -> tuple[Op, ...]:
    tokens = batch * model.seq_len
    h, f = model.hidden_size, model.ffn_hidden
    act = tokens * h
    ops = _layernorm("ln1", tokens, h, e, w, s)
    ops += _attention_ops("attn", batch, model, e, w, s, model.position == "rotary")
    ops += _elementwise("residual1", "elementwise", act, 1.0, e, 0.0)
    if model.cross_attention_layers:
        fraction = model.cross_attention_layers / model.n_layers
        cross = (
            _layernorm("xattn.ln", tokens, h, e, w, s)
            + _attention_ops("xattn", batch, model, e, w, s, False)
            + _elementwise("xattn.residual", "elementwise", act, 1.0, e, 0.0)
        )
        ops += _scaled(cross, fraction)
    ops += _layernorm("ln2", tokens, h, e, w, s)
    if model.ffn_type == "swiglu":
        ops += _linear("mlp.fc1", tokens, h, 2 * f, e, w, s, bias=False)  # gate and up, fused
        ops += _elementwise(
            "mlp.gelu", "elementwise", tokens * f, SWIGLU_FLOPS_PER_ELEMENT, e, float(2 * tokens * f * e)
        )
        ops += _linear("mlp.fc2", tokens, f, h, e, w, s, bias=False)
    else:
        ops += _linear("mlp.fc1", tokens, h, f, e, w, s)
        ops += _elementwise("mlp.gelu", "elementwise", tokens * f, GELU_FLOPS_PER_ELEMENT, e, float(tokens * f * e))
        ops += _linear("mlp.fc2", tokens, f, h, e, w, s)
    ops += _elementwise("residual2", "elementwise", act, 1.0, e, 0.0)
    if fp8:  # the blocks' linears; the embedding, attention core and LM head stay at e bytes
        ops = _fp8_casts(ops, e)
    ops.append(_adamw(sum(op.params for op in ops), s))
    return tuple(ops)


def _embedding_ops(model: ModelConfig, batch: int, e: int, w: int, s: int) -> tuple[Op, ...]:
    tokens = batch * model.seq_len
    h = model.hidden_size
    params = model.vocab_size * h + (model.seq_len * h if model.position == "learned" else 0)
    act = tokens * h
    return (
        # gather a rows of each table, add them, write the sum
        Op("embed.lookup", "embedding", "fwd", float(act), float(tokens * 8 + 2 * act * w + act * e), params, 0.0),
        # scatter-add the output gradient into dense table gradients
        Op("embed.lookup", "embedding", "bwd", float(2 * act), float(act * e + 2 * act * s + params * s)),
        _adamw(params, s),
    )


def _head_ops(model: ModelConfig, batch: int, e: int, w: int, s: int) -> tuple[Op, ...]:
    tokens = batch * (model.head_tokens or model.seq_len)
    h, v = model.hidden_size, model.vocab_size
    ops = _layernorm("ln_f", batch * model.seq_len, h, e, w, s)
    if model.head_tokens:  # BERT's prediction transform on the masked positions
        ops += _linear("head.transform", tokens, h, h, e, w, s)
        ops += _elementwise("head.gelu", "elementwise", tokens * h, GELU_FLOPS_PER_ELEMENT, e, float(tokens * h * e))
        ops += _layernorm("head.ln", tokens, h, e, w, s)
    lm_head = _linear("lm_head", tokens, h, v, e, w, s, bias=False)
    if model.tie_embeddings:  # the token table is the embedding's parameter
        lm_head = [Op(op.name, op.op_class, op.phase, op.flops, op.bytes, 0, op.saved_bytes, op.dims) for op in lm_head]
    ops += lm_head
    logits = tokens * v
    # cross-entropy over fp32 logits: cast, log-softmax and pick; keeps fp32 log-probabilities
    ops += [
        Op(
            "loss",
            "loss",
            "fwd",
            SOFTMAX_XENT_FLOPS_PER_ELEMENT * logits,
            float(logits * e + 2 * logits * 4),
            0,
            float(logits * 4),
        ),
        Op("loss", "loss", "bwd", 2.0 * logits, float(2 * logits * 4 + logits * e)),
    ]
    ops.append(_adamw(sum(op.params for op in ops), s))
    return tuple(ops)


def build_opgraph(model: ModelConfig, batch_size: int, precision: PrecisionConfig) -> OpGraph:
    """The op graph of one training step (forward, backward, AdamW) on one micro-batch."""
    e = DTYPE_BYTES[precision.compute_dtype]
    s = DTYPE_BYTES[precision.param_dtype]
    w = s  # weights are read in their stored dtype (an autocast copy is a second, smaller read)
    embedding = _embedding_ops(model, batch_size, e, w, s)
    block = _block_ops(model, batch_size, e, w, s, precision.name == FP8)
    head = _head_ops(model, batch_size, e, w, s)
    block_totals = _totals(block)
    layers = (
        Layer("embedding", "embedding", embedding, _totals(embedding)),
        *(Layer(f"block.{i}", "block", block, block_totals) for i in range(model.n_layers)),
        Layer("head", "head", head, _totals(head)),
    )
    return OpGraph(model, batch_size, precision, layers)
