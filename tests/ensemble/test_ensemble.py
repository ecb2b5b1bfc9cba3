"""Ensembles on Dask: the same numbers as a serial loop, failures reported, any scheduler address.

Laws: an ensemble on a local cluster of worker processes gives, member by member, bitwise what a
serial loop over `simulate` gives (the same code on the same numbers in another process); a
member that raises is listed with its index, parameters and error text while every other member
returns its results, its rows NaN; a scheduler given by its address string (a cluster this test
starts) runs the same ensemble unchanged; a model file path stands for ``make`` with parameters
named by path, registered user classes included.
"""
from __future__ import annotations

import logging
import multiprocessing

import numpy as np
import pytest
from ensemble_models import OUTPUTS, build, cart_pole, raising

from simtk import ensemble
from simtk.ensemble import ModelText, simulate
from simtk.io import save_model

distributed = pytest.importorskip("distributed")

T_FINAL = 0.2  # short runs: 32 members finish in a few seconds on two shared cores


@pytest.fixture(scope="module")
def cluster():
    """A local cluster of two worker processes, shared by the tests that pass a client or an address."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as c:
        yield c


def _serial(make, parameters, **kw):
    """The serial loop the ensembles must equal: `simulate` member by member in this process."""
    return [simulate(make, p, T_FINAL, OUTPUTS, **kw) for p in parameters]


def _assert_members_equal(result, serial, skip=()):
    for i, expected in enumerate(serial):
        if i in skip:
            continue
        for path in OUTPUTS:
            np.testing.assert_array_equal(result[path][i], expected[path], err_msg=f"member {i}, {path}")


def test_32_members_on_the_default_local_cluster_equal_a_serial_loop_bitwise():
    axes = {"k": [5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0], "angle": [0.1, 0.2, 0.4, 0.8]}
    before = set(multiprocessing.active_children())
    result = ensemble.run(cart_pole, axes, T_FINAL, OUTPUTS, interval=0.05, n_workers=2, progress=False)
    assert set(multiprocessing.active_children()) == before  # the cluster it started is closed, its workers gone
    assert len(result) == 32 and result.grid_shape == (8, 4) and result.failed == [] and result.n_workers == 2
    assert result.parameters[1] == {"k": 5.0, "angle": 0.2}  # the last key varies fastest
    serial = _serial(cart_pole, result.parameters, interval=0.05)
    np.testing.assert_array_equal(result.time, serial[0]["time"])
    assert result["/|kinetic_energy"].shape == (32, 5) and result["/matter/pole|transform"].shape == (32, 5, 12)
    _assert_members_equal(result, serial)
    # the members differ: an ensemble that ran one parameter set 32 times would fail here
    assert len(np.unique(result["/|kinetic_energy"][:, -1])) == 32


def test_a_member_that_raises_is_reported_while_the_others_finish(cluster):
    with distributed.Client(cluster) as client:
        params = [{"k": 10.0 * (i + 1), "angle": 0.3} for i in range(6)]
        params[3] = {"k": -1.0, "angle": 0.3}
        result = ensemble.run(raising, params, T_FINAL, OUTPUTS, client=client, progress=False)
        assert client.status == "running"  # a Client given is left open
    [(index, p, error)] = result.failed
    assert index == 3 and p == {"k": -1.0, "angle": 0.3}
    assert "ValueError: negative stiffness -1.0" in error and "Traceback" in error
    assert list(result.ok) == [True, True, True, False, True, True]
    assert np.isnan(result["/|kinetic_energy"][3]) and np.isnan(result["/matter/pole|transform"][3]).all()
    _assert_members_equal(result, _serial(cart_pole, [p if p["k"] > 0 else params[0] for p in params]), skip={3})


def test_a_scheduler_address_runs_the_same_ensemble_unchanged_and_shows_progress(cluster, capsys):
    address = cluster.scheduler_address
    assert isinstance(address, str) and address.startswith("tcp://")
    params = [{"k": k, "angle": 0.5} for k in (3.0, 30.0, 300.0)]
    result = ensemble.run(cart_pole, params, T_FINAL, OUTPUTS, client=address, progress=True)
    assert "ensemble" in capsys.readouterr().err and len(cluster.workers) == 2  # the cluster outlives the call
    assert result.failed == [] and result.time.shape == ()
    assert result["/|kinetic_energy"].shape == (3,) and result["/|mass_center"].shape == (3, 3)
    _assert_members_equal(result, _serial(cart_pole, params))


def test_a_model_file_path_stands_for_make_with_parameters_by_path(cluster, tmp_path):
    path = tmp_path / "cart_pole.simtk"
    save_model(build(k=20.0, rod=True), path)  # a registered user force and a constraint
    params = [{"/forces/spring.stiffness": k, "/forces/damping.c": c, "/matter/pole/angle": 0.1}
              for k, c in ((10.0, 0.0), (10.0, 0.5), (50.0, 0.5))]
    result = ensemble.run(path, params, T_FINAL, OUTPUTS, client=cluster.scheduler_address, progress=False)
    assert result.failed == []
    _assert_members_equal(result, _serial(ModelText.read(path), params))
    assert result["/|kinetic_energy"][0] != result["/|kinetic_energy"][1]  # the damping property took effect
