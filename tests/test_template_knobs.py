"""A template knob is declared once (``KnobSpec`` in ``specs``): its domain checks imported
configs, its legacy value completes configs recorded before it, its preferred value is what a
device template's default wants; a knob offered but not declared is refused."""

from __future__ import annotations

import pytest
from hlotune.dsl.errors import ConfigError
from hlotune.schedules.schedule import Schedule
from hlotune.schedules.templates.base import Knob, KnobSpec, Template, is_pow2
from hlotune.schedules.templates.families import Elementwise

from hlotune import dsl


def _stage():
    x = dsl.placeholder((8, 64), "float32", name="x")
    y = dsl.compute((8, 64), lambda i, j: x[i, j] * 2.0, name="y")
    s = Schedule(dsl.Graph([y], [x]))
    return s, s.stages["y"]


class Toy(Elementwise):
    """Elementwise with one more knob, added in one place: ``unroll``, unrolling the split."""

    specs = (*Elementwise.specs, KnobSpec("unroll", lambda v: v in (0, 1), legacy=0, preferred=1))

    def knobs(self, st, hw):
        return [*super().knobs(st, hw), Knob("unroll", (0, 1))]

    def steps(self, s, st, c, hw):
        super().steps(s, st, {k: v for k, v in c.items() if k != "unroll"}, hw)
        if c["unroll"] and c["vector"] > 1:
            s.unroll(st.leaf[-2])


def test_a_knob_declared_once_reaches_space_domain_legacy_and_steps():
    s, st = _stage()
    t = Toy()
    assert "unroll" in t.space(st).names and t.preferred == {"unroll": 1}
    t.check_domain({"vector": 8, "parallel": 0, "unroll": 1})
    with pytest.raises(ConfigError, match="unroll"):
        t.check_domain({"vector": 8, "parallel": 0, "unroll": 2})
    # legacy knobs complete a config only where the stage's space offers them (``tile``: transposes)
    assert t.complete({"vector": 8, "parallel": 0}, t.space(st)) == {"unroll": 0, "vector": 8, "parallel": 0}
    assert t.complete({"vector": 8, "parallel": 0})["tile"] == 0
    t.apply(s, st, {"vector": 8, "parallel": 0})          # an old config: its legacy value applies
    t.apply(*_stage(), {"vector": 8, "parallel": 0, "unroll": 1})


def test_a_knob_offered_but_not_declared_is_refused():
    class Sloppy(Template):
        specs = (KnobSpec("split", is_pow2),)

        def knobs(self, st, hw):
            return [Knob("split", (1, 2)), Knob("tile", (4,))]
    with pytest.raises(TypeError, match="tile"):
        Sloppy().space(_stage()[1])
