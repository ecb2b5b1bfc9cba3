"""The parts of an ensemble that need no cluster: parameter grids, one member, parameters by path, results.

Laws: a dict of lists is the grid of all combinations with the last key fastest; `simulate` gives
what a plain `Simulation` run and its outputs give (bitwise: the same calls), at the final time or
at an interval through an `OutputProbe`, each output flattened to its width; parameters by path
set properties before the topology and state variables after; the result's arrays stack members
with NaN rows for failures and become an xarray Dataset with the parameters as coordinates; a
missing Dask is an ImportError that names the extra.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest
from ensemble_models import OUTPUTS, build, cart_pole

from simtk import Stage
from simtk.ensemble import EnsembleResult, _stack, apply_parameters, grid, run, simulate
from simtk.simulation import OutputProbe, Simulation


def test_a_grid_is_every_combination_with_the_last_key_fastest():
    assert grid({"a": [1, 2], "b": ["x", "y", "z"]}) == [
        {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"},
        {"a": 2, "b": "x"}, {"a": 2, "b": "y"}, {"a": 2, "b": "z"}]
    assert grid({}) == [{}]


def test_simulate_at_the_final_time_is_a_plain_simulation_and_its_outputs():
    params = {"k": 30.0, "angle": 0.6}
    got = simulate(cart_pole, params, 0.3, OUTPUTS, step_size=0.02, accuracy=1e-7)
    system, state = cart_pole(**params)
    sim = Simulation(system, state, step_size=0.02)
    sim.get_integrator().set_accuracy(1e-7)
    sim.run(0.3)
    final = sim.get_state()
    system.realize(final, Stage.Acceleration)
    assert got["time"].shape == () and float(got["time"]) == final.get_time() == 0.3
    assert got["/|kinetic_energy"].shape == () and got["/|kinetic_energy"] == system.calc_kinetic_energy(final)
    assert got["/matter/pole|angle"] == system.get_state_variable_value(final, "/matter/pole/angle")
    np.testing.assert_array_equal(got["/|mass_center"], system.get_output("mass_center").get_value(final))
    X = system.get_component("/matter/pole").get_body_transform(final)
    np.testing.assert_array_equal(got["/matter/pole|transform"], np.concatenate([X.R.matrix.ravel(), X.p]))


def test_simulate_at_an_interval_splits_an_output_probe_by_output():
    got = simulate(cart_pole, {"k": 30.0}, 0.3, OUTPUTS, interval=0.1)
    system, state = cart_pole(k=30.0)
    sim = Simulation(system, state)
    probe = sim.add_output_probe(OutputProbe(OUTPUTS, interval=0.1))
    sim.run(0.3)
    times, values = probe.to_numpy()
    np.testing.assert_array_equal(got["time"], times)
    assert len(times) == 4 and got["/matter/pole|transform"].shape == (4, 12) and got["/|mass_center"].shape == (4, 3)
    np.testing.assert_array_equal(np.column_stack([got[o] for o in OUTPUTS]), values)


def test_a_bad_output_path_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match=r"kinetic_energy.*'<component path>\|<output name>'"):
        run(cart_pole, [{}], 0.1, ["/kinetic_energy"])
    with pytest.raises(TypeError, match="parameter set 1 is a float"):
        run(cart_pole, [{}, 3.0], 0.1, ["/|kinetic_energy"])


def test_parameters_by_path_set_properties_before_the_topology_and_variables_after():
    system = build(k=20.0)
    state = apply_parameters(system, {"/forces/spring.stiffness": 7.5, "/matter/pole/angle": 0.4,
                                      "/matter/cart/rate": -1.0})
    assert system.get_component("/forces/spring").get_property("stiffness") == 7.5
    assert system.get_state_variable_value(state, "/matter/pole/angle") == 0.4
    assert system.get_state_variable_value(state, "/matter/cart/rate") == -1.0
    assert state.get_system() is system and state.get_system_stage() >= Stage.Model


def test_results_stack_members_with_nan_rows_for_failures_and_become_a_dataset():
    a = {"time": np.array([0.0, 0.5]), "/|e": np.array([1.0, 2.0]), "/b|x": np.array([[1.0, 2.0], [3.0, 4.0]])}
    b = {"time": np.array([0.0, 0.5]), "/|e": np.array([5.0, 6.0]), "/b|x": np.array([[5.0, 6.0], [7.0, 8.0]])}
    short = {"time": np.array([0.0]), "/|e": np.array([9.0]), "/b|x": np.array([[9.0, 9.0]])}
    failed: list = [(1, {"k": 2.0}, "ValueError: no")]
    outputs, times = _stack(4, {0: a, 2: b, 3: short}, failed)
    np.testing.assert_array_equal(times, [0.0, 0.5])
    np.testing.assert_array_equal(outputs["/|e"], [[1.0, 2.0], [np.nan, np.nan], [5.0, 6.0], [np.nan, np.nan]])
    assert outputs["/b|x"].shape == (4, 2, 2)
    assert [f[0] for f in failed] == [1, 3] and "cannot be stacked" in failed[1][2]
    params = [{"k": 1.0}, {"k": 2.0}, {"k": 3.0}, {"k": 4.0}]
    result = EnsembleResult(params, outputs, times, failed)
    assert list(result.ok) == [True, False, True, False] and len(result) == 4
    xr = pytest.importorskip("xarray")
    ds = result.to_xarray()
    assert isinstance(ds, xr.Dataset) and ds["/b|x"].dims == ("member", "time", "/b|x:component")
    np.testing.assert_array_equal(ds["k"].values, [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(ds["/|e"].sel(member=2).values, [5.0, 6.0])


def test_without_dask_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # an import of it now fails
    with pytest.raises(ImportError, match=r"simtk\[dask\]"):
        run(cart_pole, [{}], 0.1, ["/|kinetic_energy"])
