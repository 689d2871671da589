"""Reversible layers: the Feistel construction, RevNets, and the activation memory of training.

chapters-3-7.md, R-05 to R-07. A Feistel round maps (x, y) to (x, y + f(x)) and is undone
by (x′, y′) ↦ (x′, y′ − f(x′)) whatever f is: f itself is never inverted. RevNets (Gomez et
al. 2017) bring it to networks, and the lecture's transformer form (x, y) ↦ (y + f(x), x)
adds a residual from two layers back; a stack of such layers is invertible layer by layer.
The maps below are SymPy maps in an undefined function (sp.Function), and their inverses
are checked symbolically, both ways round, when this module is loaded: a wrong inverse
stops the load (and so ``build.py check``, the build and the tests).

Training keeps each layer's input for the backward pass: n_L residual-stream vectors per
token. Activation checkpointing keeps every k-th and recomputes the k layers of one segment
while back-propagating it (Chen et al. 2016): n_L/k + k vectors, least at k = √n_L, which
SymPy finds. A reversible network keeps only the last layer's pair (x, y) and reconstructs
each earlier input from the one after it: memory independent of depth. Both recompute
schemes pay one more forward pass: 2 + 4 + 2 instead of 2 + 4 FLOP per parameter per token.
Not counted (the same in all three schemes): the activations inside the one layer being
back-propagated, and attention's softmax intermediates.

The KV cache is the opposite trade (R-08): memory spent to save compute. Per use, a cached
token's KV is read back from HBM instead of being recomputed by one forward pass; the ratio
of the two chip times says how much compute a byte of cache saves on a given chip.
"""
import sympy as sp

from . import rules

from .inputs import R, B, L, W, N_active, n_layers, d_model, b_kv, c_F
from .prices import t_remat
from .training import c_train

# -- the maps, in an arbitrary function ------------------------------------------------------
f, g = sp.Function("f"), sp.Function("g")


def feistel(x, y, f=f):
    """One Feistel round (R-05): the left half passes through, the right gains f(left)."""
    return (x, y + f(x))


def feistel_inverse(u, v, f=f):
    return (u, v - f(u))


def revnet(x, y, f=f, g=g):
    """A RevNet block (Gomez et al. 2017): two Feistel rounds with the halves swapped."""
    z = x + f(y)
    return (z, y + g(z))


def revnet_inverse(u, v, f=f, g=g):
    y = v - g(u)
    return (u - f(y), y)


def rev_transformer(x, y, f=f):
    """The lecture's transformer form (R-06): the new stream is the one from two layers back
    plus f of the last; the last moves over."""
    return (y + f(x), x)


def rev_transformer_inverse(u, v, f=f):
    return (v, u - f(v))


def stack(layer, fs):
    """Layers applied in order, layer i with its own function fs[i]."""
    def run(x, y):
        for fi in fs:
            x, y = layer(x, y, fi)
        return (x, y)
    return run


def stack_inverse(layer_inverse, fs):
    """The inverse of ``stack``: each layer's inverse, last layer first."""
    def run(u, v):
        for fi in reversed(fs):
            u, v = layer_inverse(u, v, fi)
        return (u, v)
    return run


def is_inverse(forward, inverse) -> bool:
    """True if ``inverse`` undoes ``forward`` and ``forward`` undoes ``inverse``, as SymPy
    expressions in symbols a, b (the functions left undefined)."""
    a, b = sp.symbols("a b")
    there = inverse(*forward(a, b))
    back = forward(*inverse(a, b))
    return all(sp.simplify(got - want) == 0 for got, want in zip(there + back, (a, b, a, b)))


_fs = sp.symbols("f1:4", cls=sp.Function)   # three layers, each its own function
INVERSES = {
    "feistel": (feistel, feistel_inverse),
    "revnet": (revnet, revnet_inverse),
    "rev_transformer": (rev_transformer, rev_transformer_inverse),
    "rev_transformer_stack": (stack(rev_transformer, _fs), stack_inverse(rev_transformer_inverse, _fs)),
}
VERIFIED = R.kept(("reversible inverses", tuple(INVERSES)),
                  lambda: {name: is_inverse(*pair) for name, pair in INVERSES.items()})
_wrong = sorted(n for n, ok in VERIFIED.items() if not ok)
if _wrong:
    raise ValueError(f"reversible maps: the inverse does not undo the map for {', '.join(_wrong)}")


# The same inverses as identities of the registry, so that `build.py check` verifies them with
# the dimension check and counts them: both halves, both ways round, for each map. They are
# checks, not board equations (listed=False keeps them out of the section's list).
def _inverse_identities() -> None:
    x, y = sp.symbols("x y")   # the two halves of the stream: local to the relations, not quantities
    for name, (forward, inverse) in INVERSES.items():
        with sp.evaluate(False):   # keep y + f(x) − f(x) as written: the check compares its terms
            pairs = (("inverse_after_map", inverse(*forward(x, y))),
                     ("map_after_inverse", forward(*inverse(x, y))))
        for way, got in pairs:
            for half, g, want in zip(("x", "y"), got, (x, y)):
                R.equation(f"{name}_{way}_{half}", g, want,
                           f"{name.replace('_', ' ')}: the {way.replace('_', ' ')} gives back {half}",
                           identity=True, free=(x, y), listed=False)


def _shown(fn, a="x", b="y") -> str:
    """A map as text, '(x, y) ↦ (x, y + f(x))', from the SymPy map itself."""
    x, y = sp.symbols(f"{a} {b}")
    return f"({a}, {b}) ↦ (" + ", ".join(str(e).replace(" - ", " − ") for e in fn(x, y)) + ")"


R.section(
    "reversible", "How much activation memory do reversible layers save in training?",
    seeds=(),
    chapter="crypto",
    question="A Feistel round " + _shown(feistel) + " is undone by " + _shown(feistel_inverse, "u", "v")
             + " for any f, and the lecture's reversible layer " + _shown(rev_transformer)
             + " by " + _shown(rev_transformer_inverse, "u", "v") + " (SymPy checks both, and a RevNet block "
             "and a three-layer stack, when the derivations load). How much activation memory does "
             "training save by recomputing layer inputs instead of storing them, and what does the "
             "recomputation cost?",
    takeaway="Training {model}, storing every layer's input keeps {activation_bytes_per_token_stored} "
             "({activation_memory_stored} for a step of {batch} of {context}); checkpointing every "
             "{checkpoint_interval} layers keeps {activation_bytes_per_token_checkpoint}, reversible layers "
             "{activation_bytes_per_token_reversible} ({activation_saving_reversible} times less, "
             "{activation_memory_reversible} a step). Either recomputes one forward pass: "
             "{recompute_overhead} more compute.",
    featured=("activation_bytes_per_token_stored", "activation_bytes_per_token_checkpoint",
              "checkpoint_interval_best", "activation_bytes_per_token_reversible",
              "activation_saving_reversible", "activation_memory_stored",
              "activation_memory_reversible", "recompute_overhead", "kv_recompute_over_read"),
)

_inverse_identities()

# -- activation memory ----------------------------------------------------------------------
beta_a = R.workload("bytes_per_saved_activation", "byte",
                    "bytes per activation number kept for the backward pass", "β", "a",
                    default="2 byte", source="bf16 activations, as in mixed-precision training")
c_in = R.constant("saved_vectors_per_layer", "1 /token",
                  "residual-stream vectors kept per layer per token: the layer's input", "c", "in",
                  source="backpropagation through a residual layer needs its input (chapters-3-7.md, R-07)")
c_rev = R.constant("reversible_state_vectors", "2 /token",
                   "residual-stream vectors a reversible network keeps per token: the last layer's pair (x, y)",
                   "c", "rev", source="the reversible layer (x, y) ↦ (y + f(x), x) carries two full-width streams "
                   "(chapters-3-7.md, R-06; the Reformer's reversible transformer)")
k_ck = R.workload("checkpoint_interval", "", "layers per checkpointed segment: every k-th layer's input is kept",
                  "k", "ck", default="=rule:checkpoint_interval")


R.rule("checkpoint_interval", ("layers",), "the whole number of layers nearest √layers, at least 1 "
       "(checkpoint_interval_best)")(rules.checkpoint_interval)


m_store = R.derived(
    "activation_bytes_per_token_stored", c_in * n_layers * d_model * beta_a, "byte/token",
    "activation bytes kept per token without recomputation: every layer's input", "m", "store")
m_ck = R.derived(
    "activation_bytes_per_token_checkpoint", c_in * (n_layers / k_ck + k_ck) * d_model * beta_a, "byte/token",
    "activation bytes kept per token with checkpointing: every k-th layer's input, plus the k inputs "
    "of the segment being back-propagated (n_L/k taken as a fraction)", "m", "ck")
(k_best,) = R.roots(lambda: sp.diff(R.expand(m_ck), k_ck), 0, k_ck, key=("solve", "checkpoint_interval_best"))
k_star = R.derived(
    "checkpoint_interval_best", k_best, "",
    "checkpoint interval that keeps the fewest activations", "k", "ck*",
    how="solved d(activation_bytes_per_token_checkpoint)/dk = 0 for k")
m_ck_best = R.derived(
    "activation_bytes_per_token_checkpoint_best", R.expand(m_ck).xreplace({k_ck: k_best}), "byte/token",
    "activation bytes kept per token with checkpointing at the best interval", "m", "ck*",
    how="activation_bytes_per_token_checkpoint at k = checkpoint_interval_best")
R.equation("checkpoint_best_is_two_sqrt_layers", m_ck_best, 2 * sp.sqrt(n_layers) * c_in * d_model * beta_a,
           "at the best interval, checkpointing keeps 2·√n_L layer inputs per token (Chen et al. 2016)",
           identity=True)
m_rev = R.derived(
    "activation_bytes_per_token_reversible", c_rev * d_model * beta_a, "byte/token",
    "activation bytes kept per token with reversible layers: the last layer's pair only, "
    "whatever the depth", "m", "rev")
R.derived("activation_saving_reversible", m_store / m_rev, "",
          "how many times less activation memory reversible layers keep than storing every layer's input",
          "s", "rev")
R.derived("activation_saving_checkpoint", m_store / m_ck, "",
          "how many times less activation memory checkpointing keeps than storing every layer's input",
          "s", "ck")

# The memory of one training step of batch × context tokens, over all the chips holding the
# model. It describes training, not the decode set-up, so the serving fit (weights and KV
# cache in HBM) does not flag it (chalkboard.evaluate.TRAINING_CHAPTERS).
for name, per_token, what in ((
        "activation_memory_stored", m_store, "storing every layer's input"), (
        "activation_memory_checkpoint", m_ck, "with checkpointing"), (
        "activation_memory_reversible", m_rev, "with reversible layers")):
    R.derived(name, B * L * per_token, "byte",
              f"activation memory of one training step of batch × context tokens, {what}",
              "M", name.rsplit("_", 1)[1])

# -- the compute recomputation costs ----------------------------------------------------------
n_re = R.constant("recompute_forward_passes", "1",
                  "extra forward passes recomputation adds: checkpointing re-runs each segment, a reversible "
                  "network re-runs each f to rebuild its input", "n", "re",
                  source="chapters-3-7.md, R-07: the activations are recomputed in the backward pass")
c_train_re = R.derived(
    "train_flop_per_param_token_recompute", c_train + n_re * c_F, "FLOP/parameter/token",
    "FLOP per parameter per training token with one forward pass recomputed (2 + 4 + 2)", "c", "train,re")
R.derived("recompute_overhead", c_train_re / c_train - 1, "",
          "extra training compute recomputation costs, as a fraction of a step without it", "o", "re", share=True)
R.derived("recompute_flops_per_token", n_re * c_F * N_active, "FLOP/token",
          "FLOP per training token recomputation adds: one more forward pass over the active parameters",
          "c", "re")
R.equation("recompute_adds_one_forward_pass", (c_train_re - c_train) * N_active, n_re * c_F * N_active,
           "recomputation adds one forward pass: 2·N_active FLOP per token", identity=True)

# -- the opposite trade: the KV cache spends memory to save compute (R-08) -----------------------
R.derived("kv_recompute_over_read", t_remat / (b_kv / W), "",
          "chip time to recompute one cached token's KV (one forward pass at peak) over the chip time "
          "to read it back from HBM: what the KV cache, memory spent to save compute, saves per use "
          "(chapters-3-7.md#R-08)", "r", "remat/read")
