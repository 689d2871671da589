"""chalkboard: loading, checking, evaluating, auditing and rendering the lecture's derivations."""

# The lecture's own scenario (000@1:49, 004:33): a DeepSeek-like MoE on a Blackwell NVL72 rack.
FEATURED_HARDWARE = "gb200-nvl72"
FEATURED_MODEL = "deepseek-v3"
