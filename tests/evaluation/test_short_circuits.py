"""A quantity one input settles (settings.SETTLED_BY: no all-reduce at tp = 1, ...) is the number
its definition gives there: the short cut only leaves unread what cannot matter."""
import pytest

from chalkboard.evaluation import compiled
from chalkboard.evaluation.evaluate import Scenario
from chalkboard.evaluation.settings import AT_ONE_SEQUENCE, SETTLED_BY
from chalkboard.errors import InputError, MissingInput


def _by_definition(sc, name):
    fn, args = compiled.scalar(name)
    return float(fn(*[sc._mag(a) for a in args]))


@pytest.mark.parametrize("sets", [{"chips": "1"}, {"tp": "1", "chips": "4"}, {"pp": "1"}])
def test_each_settled_quantity_is_its_definition(data, sets):
    checked = set()
    for hid in data.hardware:
        for mid in data.models:
            sc = Scenario(data, hid, mid, dict(sets))
            for name in [*SETTLED_BY, *AT_ONE_SEQUENCE]:
                try:
                    settled = sc.settled(name)
                    if settled is None:
                        continue
                    full = _by_definition(sc, name)
                except (MissingInput, InputError):   # the definition reads an input this pair lacks
                    continue
                assert settled == pytest.approx(full, rel=1e-12, abs=1e-30), (hid, mid, name)
                checked.add(name)
    assert checked >= {"tp_comm_time", "kv_share_per_rank", "always_read_params", "pp_comm_time"}
    if sets == {"chips": "1"}:
        assert "latency_floor_layout" in checked and "ep_comm_time" in checked


def test_nothing_is_settled_where_the_input_says_otherwise(data):
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"tp": "8"})
    assert sc.settled("tp_comm_time") is None and sc.mag("tp_comm_time") > 0
    assert "scaleup_bandwidth" in sc.reads("step_time_layout")
    one = Scenario(data, "h100-sxm", "llama-3-70b", {"chips": "1"})
    assert one.settled("tp_comm_time") == 0 and "scaleup_bandwidth" not in one.reads("step_time_layout")
