"""Rental prices in hardware.yaml: sourced and dated, per chip-hour, and the featured cost evaluates."""
import re

import pytest

from chalkboard import FEATURED_HARDWARE, FEATURED_MODEL

# Published prices, typed from the pages the sources cite (not read from hardware.yaml), per chip-hour.
PUBLISHED = {
    # CoreWeave on-demand, North America (coreweave.com/pricing, read 2026-09-20):
    "gb200-nvl72": 42.00 / 4,      # GB200 NVL72 instance, $42.00 per hour for 4 GPUs
    "h200": 50.44 / 8,             # HGX H200 instance, $50.44 per hour for 8 GPUs
    # Lambda on-demand per GPU (lambda.ai/instances): 8x A100 SXM 40 GB $1.99 (read 2026-09-20),
    # 8x A100 SXM 80 GB $2.79, 8x H100 SXM $3.99, 8x B200 SXM6 $6.69 (2026-07-26)
    "a100-40gb": 1.99, "a100-80gb": 2.79, "h100-sxm": 3.99, "b200": 6.69,
    # Google Cloud on-demand per chip-hour: Trillium $10.80 per hour for a 4-chip v6e slice in the US
    # regions (Google's Cloud Billing Catalog API as SkyPilot's GCP catalog records it);
    # v5e $1.2 and v5p $4.2 (third-party TPU v5 guide, 2026-01-27)
    "tpu-v6e": 2.70, "tpu-v5e": 1.20, "tpu-v5p": 4.20,
    # DigitalOcean MI300X GPU Droplet list price, $2.59 per hour for 1 GPU (2026-10-07)
    "mi300x": 2.59,
}


def _priced(data):
    return {hid: h.values["rental_price"] for hid, h in data.hardware.items() if "rental_price" in h.values}


def test_each_price_has_source_date_and_says_what_it_is(data):
    priced = _priced(data)
    assert len(priced) >= 10
    for hid, v in priced.items():
        assert v.source.url.startswith("https://"), hid
        assert v.source.title, hid
        assert re.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?", v.as_of), (hid, v.as_of)
        assert re.search(r"on-demand|reserved|commit", v.note or ""), (hid, "say on-demand or reserved")
        assert re.search(r"per (GPU|chip)", v.note or ""), (hid, "say per GPU or per chip")
        if re.search(r"instance|rack", v.note or "") and "/" in (v.note or ""):
            assert "derived" in v.note, (hid, "a divided instance price says it is derived")


def test_prices_equal_the_published_figures(data):
    priced = _priced(data)
    assert set(PUBLISHED) <= set(priced)
    for hid, usd in PUBLISHED.items():
        q = priced[hid].quantity.to("USD/hour/chip")
        assert q.magnitude == pytest.approx(usd, rel=1e-3), hid


def test_chips_without_a_public_price_stay_without_one(data):
    # no public per-hour price was found for these (GB300 NVL72: 'Contact sales' at CoreWeave)
    for hid in ("gb300-nvl72", "rubin", "rubin-ultra", "mi355x", "tpu-v7", "trainium2"):
        assert "rental_price" not in data.hardware[hid].values, hid


def test_featured_cost_section_evaluates_for_its_own_chip(data):
    from chalkboard.evaluation.evaluate import Scenario
    from chalkboard.report.figures import draw_all, priced_stand_in
    from chalkboard.report.context import takeaway
    from derivations import REGISTRY

    sc = Scenario(data, FEATURED_HARDWARE, FEATURED_MODEL)
    assert sc.value("cost_floor").to("USD/Mtoken").magnitude > 0
    text = takeaway(sc, REGISTRY.sections["latency_cost"].takeaway)
    assert "not evaluated" not in text and "USD/Mtoken" in text
    assert priced_stand_in(data, FEATURED_HARDWARE) == FEATURED_HARDWARE
    drawn = draw_all(data, FEATURED_HARDWARE, FEATURED_MODEL, only={"cost_vs_batch"})
    assert drawn["cost_vs_batch"][1] == FEATURED_HARDWARE   # drawn for GB200 itself, no stand-in
