"""Conv paths chosen on the host by timing them (``conv_algorithms.tuning``): the order of the
trials, the choice with its margin, the switches that keep the fixed rules, and every call's
result against the float64 reference whichever path runs it."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import gemm as conv_gemm
from graphops.kernels.conv_algorithms import scatter as conv_scatter
from graphops.kernels.conv_algorithms import tuning
from graphops.kernels.conv_algorithms import winograd as conv_winograd
from tests.conv_tolerance import assert_conv_close
from tests.module_settings import module_settings
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref)

BIG = 1 << 40     # multiply-adds: past TUNE_MIN_MACS


class FakeClock:
    """A clock that moves only when a candidate runs, by that candidate's cost."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def candidate(self, name, cost, result="ok", ran=None):
        def compute():
            self.now += cost
            if ran is not None:
                ran.append(name)
            return result
        return name, compute


@pytest.fixture
def clock(monkeypatch):
    """Tuning on, nothing remembered, a fake clock; the suite's setting back afterwards."""
    fake = FakeClock()
    monkeypatch.setattr(tuning, "_clock", fake)
    was = tuning.enabled()
    tuning.set_enabled(True)
    yield fake
    tuning.set_enabled(was)
    tuning.forget()


def _calls(clock, costs, count, signature="sig", macs=BIG, results=None):
    """The candidates that ran in ``count`` calls, and what each call returned."""
    ran, returned = [], []
    results = results or {}
    candidates = [clock.candidate(name, cost, results.get(name, name), ran)
                  for name, cost in costs.items()]
    for _ in range(count):
        returned.append(tuning.run(signature, macs, candidates))
    return ran, returned


def test_the_candidates_take_turns_the_fixed_choice_first(clock):
    per_candidate = tuning.WARM_UPS + tuning.TRIALS
    ran, returned = _calls(clock, {"fixed": 2.0, "other": 1.0}, 2 * per_candidate + 3)
    assert ran[:2 * per_candidate] == ["fixed", "other"] * per_candidate
    assert ran[2 * per_candidate:] == ["other"] * 3        # 2x faster: chosen
    assert returned == ran
    assert tuning.choice("sig") == "other"


@pytest.mark.parametrize("other_cost, chosen", [(1.0 / 1.3, "other"), (1.0 / 1.1, "fixed"),
                                                (1.5, "fixed")])
def test_another_candidate_must_be_margin_times_faster(clock, other_cost, chosen):
    _calls(clock, {"fixed": 1.0, "other": other_cost}, 2 * (tuning.WARM_UPS + tuning.TRIALS))
    assert tuning.choice("sig") == chosen


def _scripted(clock, fixed_costs, other_costs):
    """Candidates "fixed" and "other" whose calls cost the given costs in turn."""
    def candidate(name, costs):
        def compute():
            clock.now += next(costs)
            return name
        return name, compute
    return [candidate("fixed", iter(fixed_costs)), candidate("other", iter(other_costs))]


def test_the_warm_up_calls_are_not_counted(clock):
    """First calls (cold buffers, or one the machine happened to run fast) decide nothing:
    here the fixed choice's first calls are the fastest of all, its trials the slower."""
    candidates = _scripted(clock, [0.1] * tuning.WARM_UPS + [1.0] * tuning.TRIALS,
                           [50.0] * tuning.WARM_UPS + [0.5] * tuning.TRIALS)
    for _ in range(2 * (tuning.WARM_UPS + tuning.TRIALS)):
        tuning.run("sig", BIG, candidates)
    assert tuning.choice("sig") == "other"


def test_best_trials_decide_a_slow_trial_of_the_faster_does_not(clock):
    """Other work on the machine only adds time: each candidate is judged by its best."""
    candidates = _scripted(clock, [1.0] * (tuning.WARM_UPS + tuning.TRIALS),
                           [1.0] * tuning.WARM_UPS + [9.0] + [0.5] * (tuning.TRIALS - 1))
    for _ in range(2 * (tuning.WARM_UPS + tuning.TRIALS)):
        tuning.run("sig", BIG, candidates)
    assert tuning.choice("sig") == "other"


def test_a_candidate_that_gives_way_is_never_chosen(clock):
    """Winograd's None (non-finite values) goes back to the caller, and counts as never
    fastest."""
    per_candidate = tuning.WARM_UPS + tuning.TRIALS
    ran, returned = _calls(clock, {"fixed": 5.0, "other": 0.1}, 2 * per_candidate + 2,
                           results={"other": None})
    assert tuning.choice("sig") == "fixed"
    assert ran[-2:] == ["fixed"] * 2
    assert [r for r, name in zip(returned, ran) if name == "other"] == [None] * per_candidate


def test_signatures_are_tuned_apart(clock):
    calls = 2 * (tuning.WARM_UPS + tuning.TRIALS)
    _calls(clock, {"fixed": 1.0, "other": 0.1}, calls, signature="a")
    _calls(clock, {"fixed": 0.1, "other": 1.0}, calls, signature="b")
    assert (tuning.choice("a"), tuning.choice("b")) == ("other", "fixed")


def test_small_convs_and_single_candidates_take_the_fixed_choice_untimed(clock):
    ran, _ = _calls(clock, {"fixed": 1.0, "other": 0.1}, 10, macs=tuning.TUNE_MIN_MACS - 1)
    assert ran == ["fixed"] * 10
    ran, _ = _calls(clock, {"only": 1.0}, 3, signature="single")
    assert ran == ["only"] * 3
    assert tuning.choice("sig") is None and tuning._timings == {}


@pytest.mark.parametrize("value, on", [("1", False), ("true", False), ("TRUE", False),
                                       ("0", True), ("", True)])
def test_tf_deterministic_ops_keeps_the_fixed_rules(monkeypatch, value, on):
    monkeypatch.setenv("TF_DETERMINISTIC_OPS", value)
    monkeypatch.setattr(tuning, "_enabled", None)     # read the environment again
    assert tuning.enabled() is on


def test_turning_tuning_off_forgets_and_runs_the_fixed_choice(clock):
    _calls(clock, {"fixed": 1.0, "other": 0.1}, 2 * (tuning.WARM_UPS + tuning.TRIALS))
    assert tuning.choice("sig") == "other"
    tuning.set_enabled(False)
    assert tuning.choice("sig") is None
    ran, _ = _calls(clock, {"fixed": 1.0, "other": 0.1}, 5)
    assert ran == ["fixed"] * 5 and tuning._timings == {}


def test_signatures_remembered_are_bounded(clock, monkeypatch):
    monkeypatch.setattr(tuning, "MAX_SIGNATURES", 3)
    for name in "abcd":
        _calls(clock, {"fixed": 1.0, "other": 0.1}, 2 * (tuning.WARM_UPS + tuning.TRIALS),
               signature=name)
    assert len(tuning._timings) <= 3 and tuning.choice("d") == "other"


# --- the conv paths under tuning, against the float64 reference -------------------------

def _paths_timed(clock, faster):
    """module_settings contexts that make the conv paths advance the fake clock (``faster``
    costs 1, the others 3) and record which ran: the direct kernels and Winograd, and the
    strided input gradient's phases and scatter GEMMs."""
    ran = []

    def timed(module, name, path):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            ran.append(path)
            clock.now += 1.0 if path == faster else 3.0
            return original(*args, **kwargs)
        return module_settings(module, **{name: wrapper})

    contexts = {"direct forward": timed(conv_direct, "forward", "direct"),
                "direct filter": timed(conv_direct, "backprop_filter", "direct"),
                "winograd forward": timed(conv_winograd, "winograd_forward", "winograd"),
                "winograd filter": timed(conv_winograd, "winograd_backprop_filter", "winograd"),
                "phases": timed(conv_direct, "backprop_input_strided", "phases"),
                "scatter": timed(conv_scatter, "backprop_input", "scatter")}
    return ran, contexts


@st.composite
def tuned_cases(draw):
    rank = draw(st.sampled_from([2, 3]))
    spatial = tuple(draw(st.integers(6, 9)) for _ in range(rank))   # 4+ outputs
    return dict(rank=rank, spatial=spatial, n=draw(st.integers(1, 2)),
                c=draw(st.sampled_from([8, 16])), o=draw(st.sampled_from([8, 16])),
                pads=tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2)))
                           for _ in range(rank)),
                fixed_direct=draw(st.booleans()), faster=draw(st.sampled_from(
                    ["direct", "winograd"])), seed=draw(st.integers(0, 2**32 - 1)))


@settings(max_examples=40, deadline=None)
@given(case=tuned_cases())
def test_every_call_matches_the_reference_whichever_path_runs(case):
    """The three ops of a conv both paths take, called until tuned and after: each call's
    result within the float32 bound of the float64 reference, the tuned calls on the path
    the fake clock made faster (both fit; the fixed rule's choice drawn)."""
    rank, pads = case["rank"], case["pads"]
    out_sp = tuple(s + b + a - 2 for s, (b, a) in zip(case["spatial"], pads))
    rng = np.random.default_rng(case["seed"])
    x = rng.uniform(-1, 1, (case["n"], *case["spatial"], case["c"])).astype(np.float32)
    w = rng.uniform(-1, 1, (3,) * rank + (case["c"], case["o"])).astype(np.float32)
    dy = rng.uniform(-1, 1, (case["n"], *out_sp, case["o"])).astype(np.float32)
    geo = ([1] * rank, [1] * rank, [list(p) for p in pads])      # lists, as callers pass
    clock = FakeClock()
    ran, contexts = _paths_timed(clock, case["faster"])
    calls = 2 * (tuning.WARM_UPS + tuning.TRIALS) + 2
    with module_settings(tuning, _clock=clock, _enabled=True, TUNE_MIN_MACS=0), \
            module_settings(conv_winograd, MIN_CHANNELS=1, MIN_TILES=1), \
            module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=0), \
            module_settings(conv_gemm, FEW_MAX_POSITIONS=0), \
            module_settings(conv_direct, MAX_UNIT_STRIDE_MACS=BIG if case["fixed_direct"]
                            else 0), \
            contexts["direct forward"], contexts["direct filter"], \
            contexts["winograd forward"], contexts["winograd filter"]:
        tuning.forget()
        try:
            ops = [(lambda: conv_dense.conv_forward(x, w, *geo),
                    conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo)),
                   (lambda: conv_dense.conv_backprop_input(dy, w, x.shape, *geo),
                    conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64),
                                            x.shape, *geo)),
                   (lambda: conv_dense.conv_backprop_filter(x, dy, w.shape, *geo),
                    conv_backprop_filter_ref(x.astype(np.float64), dy.astype(np.float64),
                                             w.shape, *geo))]
            # The filter gradient's direct path wants an output plane per thread: these
            # small convs run on one thread (dense.SERIAL_MAX_FLOPS), so it always fits.
            for compute, reference in ops:
                del ran[:]
                for _ in range(calls):
                    assert_conv_close(compute(), reference, np.float32, half_ulps=1.0)
                assert set(ran) == {"direct", "winograd"}
                assert ran[0] == ("direct" if case["fixed_direct"] else "winograd")
                assert ran[-2:] == [case["faster"]] * 2
        finally:
            tuning.forget()


def test_a_session_tunes_its_conv_and_keeps_its_numbers(clock, monkeypatch):
    """A Conv2D node with a bias and a Relu (which the plan fuses into the conv as its
    epilogue) run until tuned: every run within the float32 bound of the reference."""
    monkeypatch.setattr(tuning, "TUNE_MIN_MACS", 0)
    monkeypatch.setattr(conv_winograd, "MIN_TILES", 1)
    monkeypatch.setattr(conv_gemm, "FEW_MAX_POSITIONS", 0)
    ran, contexts = _paths_timed(clock, "winograd")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 8, 8, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 16)).astype(np.float32)
    bias = rng.standard_normal(16).astype(np.float32)
    reference = np.maximum(conv_forward_ref(x.astype(np.float64), w.astype(np.float64),
                                            (1, 1), (1, 1), ((1, 1), (1, 1))) + bias, 0.0)
    with contexts["direct forward"], contexts["winograd forward"], gp.Graph().as_default():
        inputs = gp.placeholder(gp.float32, [None, 8, 8, 16])
        y = gp.nn.relu(gp.nn.bias_add(gp.nn.conv2d(inputs, gp.constant(w), [1, 1, 1, 1],
                                                   "SAME"), gp.constant(bias)))
        with gp.Session() as sess:
            for _ in range(2 * (tuning.WARM_UPS + tuning.TRIALS) + 2):
                assert_conv_close(sess.run(y, {inputs: x}), reference, np.float32,
                                  half_ulps=1.0)
    assert ran[0] == "direct" and ran[-2:] == ["winograd"] * 2


@st.composite
def strided_cases(draw):
    rank = draw(st.sampled_from([2, 3]))
    return dict(rank=rank, spatial=tuple(draw(st.integers(8, 11)) for _ in range(rank)),
                kernel=tuple(draw(st.integers(2, 3)) for _ in range(rank)),
                strides=tuple(draw(st.integers(1, 3)) for _ in range(rank - 1)) + (2,),
                c=draw(st.sampled_from([8, 16])), o=draw(st.sampled_from([8, 16])),
                phases_first=draw(st.booleans()), faster=draw(st.sampled_from(
                    ["phases", "scatter"])), seed=draw(st.integers(0, 2**32 - 1)))


@settings(max_examples=30, deadline=None)
@given(case=strided_cases())
def test_strided_input_gradients_match_the_reference_whichever_path_runs(case):
    """A strided input gradient both the phases and the scatter GEMMs take, called until
    tuned and after: every result within the float32 bound of the float64 reference, the
    first call on the fixed rule's path (drawn), the tuned calls on the faster one."""
    rank = case["rank"]
    geo = (list(case["strides"]), [1] * rank, [[0, k - 1] for k in case["kernel"]])
    out_sp = tuple((s + k - 1 - k) // t + 1 for s, k, t
                   in zip(case["spatial"], case["kernel"], case["strides"]))
    rng = np.random.default_rng(case["seed"])
    x_shape = (2, *case["spatial"], case["c"])
    w = rng.uniform(-1, 1, case["kernel"] + (case["c"], case["o"])).astype(np.float32)
    dy = rng.uniform(-1, 1, (2, *out_sp, case["o"])).astype(np.float32)
    reference = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64),
                                        x_shape, *geo)
    clock = FakeClock()
    ran, contexts = _paths_timed(clock, case["faster"])
    with module_settings(tuning, _clock=clock, _enabled=True, TUNE_MIN_MACS=0), \
            module_settings(conv_dense, SCATTER_MIN_SOURCES=1, PHASE_MAX_DEPTH=0,
                            SMALL_MAX_CHANNEL_PAIRS=0), \
            module_settings(conv_direct, phases_win=lambda c: case["phases_first"]), \
            contexts["phases"], contexts["scatter"]:
        tuning.forget()
        try:
            for _ in range(2 * (tuning.WARM_UPS + tuning.TRIALS) + 2):
                got = conv_dense.conv_backprop_input(dy, w, x_shape, *geo)
                assert_conv_close(got, reference, np.float32, half_ulps=1.0)
        finally:
            tuning.forget()
    assert ran[0] == ("phases" if case["phases_first"] else "scatter")
    assert set(ran) == {"phases", "scatter"} and ran[-2:] == [case["faster"]] * 2


def test_with_tuning_off_a_declined_winograd_input_gradient_goes_to_the_scatter(clock):
    """The fixed rules as they were: a stride-1 input gradient that Winograd fits but
    declines (padding past 2) falls to the scatter GEMMs, not to the strided paths."""
    tuning.set_enabled(False)
    ran, contexts = _paths_timed(clock, "scatter")
    rng = np.random.default_rng(11)
    w = rng.standard_normal((3, 3, 16, 16)).astype(np.float32)
    dy = rng.standard_normal((4, 20, 20, 16)).astype(np.float32)
    geo = ((1, 1), (1, 1), ((3, 3), (3, 3)))
    with contexts["winograd forward"], contexts["phases"], contexts["scatter"]:
        dx = conv_dense.conv_backprop_input(dy, w, (4, 16, 16, 16), *geo)
    assert ran == ["scatter"]
    assert_conv_close(dx, conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64),
                                                  (4, 16, 16, 16), *geo), np.float32,
                      half_ulps=1.0)
