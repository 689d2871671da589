"""The lecture's own scenario, featured by the report and the default of every command
(000@1:49, 004:33): a DeepSeek-like MoE on a Blackwell NVL72 rack; and the dense model shown
beside it (the report's summary, the layout figures)."""

FEATURED_HARDWARE = "gb200-nvl72"
FEATURED_MODEL = "deepseek-v3"
DENSE_REFERENCE_MODEL = "llama-3-70b"
