"""The bayes tuner against random search on a synthetic space with a known optimum, replayed
from a table (no device): deterministic seeds, so the figures cannot flake."""

import json
import math
import statistics

from hlotune.autotune.tuners import get_tuner
from hlotune.schedules.templates.base import Knob, Space

SPACE = Space((Knob("tile_m", (1, 2, 4, 8, 16, 32, 64, 128)), Knob("tile_n", (1, 2, 4, 8, 16, 32, 64, 128)),
               Knob("unroll", (1, 2, 4, 8)), Knob("order", ("mn", "nm")), Knob("vector", (0, 1))))


def cost(c: dict) -> float | None:
    """log seconds: best at tile_m=16, tile_n=32, unroll=4, order=nm, vector=1 (a bowl in log2 of
    the tile sizes); tiles whose product passes 1024 break a rule (None, not a trial)."""
    if c["tile_m"] * c["tile_n"] > 1024:
        return None
    lm, ln, lu = math.log2(c["tile_m"]), math.log2(c["tile_n"]), math.log2(c["unroll"])
    return (0.15 * (lm - 4) ** 2 + 0.1 * (ln - 5) ** 2 + 0.2 * (lu - 2) ** 2
            + (0.0 if c["order"] == "nm" else 0.3) + (0.0 if c["vector"] else 0.7))


TABLE = {json.dumps(c, sort_keys=True): cost(c) for c in SPACE.all_configs()}
BEST = min(v for v in TABLE.values() if v is not None)


def trials_to_within(name: str, seed: int, n: int = 48, batch: int = 4) -> float:
    """Measured trials until a config within 5% of the best time; rule breakers do not count."""
    t = get_tuner(name, SPACE, seed)
    trials = 0
    while trials < n:
        cs = t.ask(batch)
        if not cs:
            break
        ys = [TABLE[json.dumps(c, sort_keys=True)] for c in cs]
        t.tell(cs, ys)
        for y in ys:
            if y is None:
                continue
            trials += 1
            if y <= BEST + math.log(1.05):
                return trials
    return math.inf


def test_bayes_needs_at_most_half_of_randoms_trials():
    seeds = range(6)
    bayes = statistics.median(trials_to_within("bayes", s) for s in seeds)
    rand = statistics.median(trials_to_within("random", s, n=400) for s in seeds)
    # 1 point within 5% among ~200 valid: random needs ~100 trials on average (measured, seeds
    # 0..5: 199 to the point itself). A smooth bowl: the default surrogate, RF and GP in turn,
    # measured 40.5 (GP alone 29, RF alone never within 48: it cannot see a bowl)
    assert bayes <= 48, bayes
    assert bayes <= rand / 2, (bayes, rand)


def test_bayes_on_a_space_too_large_to_enumerate(monkeypatch):
    """Above ``MAX_ENUMERATE`` points the candidates are a random sample plus the one-knob
    neighbours of the best configs: proposals stay untried and the optimum is still found."""
    from hlotune.autotune.tuners import BayesTuner
    monkeypatch.setattr(BayesTuner, "MAX_ENUMERATE", 64)
    monkeypatch.setattr(BayesTuner, "N_SAMPLE", 128)
    hits = [trials_to_within("bayes", s) for s in range(3)]
    assert statistics.median(hits) <= 40, hits          # measured: 34, 20, 34


def test_bayes_keeps_proposing_configs_that_run_where_most_break_rules():
    """A space where most points break a rule (tiles over a register budget, as the gemm
    template's): the failure model steers proposals to configs that run, so the budget is
    spent (tuning stops a task after 256 rule breakers in a row) and fewer proposals are
    wasted than by random search (measured: about half)."""
    def small(c):
        return None if c["tile_m"] * c["tile_n"] > 16 else TABLE[json.dumps(c, sort_keys=True)]

    def wasted(name, seed):
        t = get_tuner(name, SPACE, seed)
        ran = failed = 0
        while ran < 40:
            cs = t.ask(4)
            ys = [small(c) for c in cs]
            t.tell(cs, ys)
            ran += sum(y is not None for y in ys)
            failed += sum(y is None for y in ys)
        return failed

    valid = sum(small(c) is not None for c in SPACE.all_configs())
    assert valid / SPACE.size < 0.25
    bayes = statistics.median(wasted("bayes", s) for s in range(4))
    rand = statistics.median(wasted("random", s) for s in range(4))
    assert bayes <= 0.7 * rand, (bayes, rand)


def test_derived_features_let_bayes_find_a_product_optimum_sooner():
    """A cost that depends on a product of knobs (a tile's area against a register file, as the
    gemm template's): told the product as a derived feature (``Space.derived``), bayes needs
    fewer trials than from the knobs alone, which leave its model a diagonal valley to learn
    (measured, seeds 0..5, RF and GP in turn: 37 against 61 trials; GP alone 26 against 38;
    random 106)."""
    knobs = SPACE.knobs[:4]

    def area_cost(c):
        a = math.log2(c["tile_m"] * c["tile_n"])
        return (0.2 * (a - 8) ** 2 + 0.05 * (math.log2(c["unroll"]) - 2) ** 2
                + (0.0 if c["order"] == "nm" else 0.2) + 0.01 * abs(math.log2(c["tile_m"]) - 3))

    def trials(space, seed):
        table = {json.dumps(c, sort_keys=True): area_cost(c) for c in space.all_configs()}
        best = min(table.values())
        t = get_tuner("bayes", space, seed)
        for k in range(0, 64, 4):
            cs = t.ask(4)
            ys = [table[json.dumps(c, sort_keys=True)] for c in cs]
            t.tell(cs, ys)
            hit = next((k + i + 1 for i, y in enumerate(ys) if y <= best + math.log(1.05)), None)
            if hit is not None:
                return hit
        return math.inf

    with_area = Space(knobs, derived=lambda c: (math.log2(c["tile_m"] * c["tile_n"]) / 14,))
    assert with_area == Space(knobs)        # derived features take no part in a space's identity
    # a column per numeric knob, one per value of a categorical one, then the derived ones
    assert get_tuner("bayes", Space(knobs), 0).features([with_area.default()]).shape == (1, 5)
    f = get_tuner("bayes", with_area, 0).features([with_area.default()])
    assert f.shape == (1, 6) and f[0, -1] == 0.0
    derived = statistics.median(trials(with_area, s) for s in range(6))
    plain = statistics.median(trials(Space(knobs), s) for s in range(6))
    assert derived < plain and derived <= 44, (derived, plain)
