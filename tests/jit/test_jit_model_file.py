"""Force.Jit in model files: the kernel saved by its registered name, loaded from the user's module.

The loaded model's accelerations and energy are checked against the Python twins' (another code path
than the kernels), and against the saved model's; a kernel not registered, or a name no kernel has, is
refused naming the element.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

import jit_kernels as jk  # noqa: E402
from test_jit_forces import _random_model  # noqa: E402

import simtk.jit as sj  # noqa: E402
from simtk import Stage  # noqa: E402
from simtk.io import ModelFileError, model_from_text, model_to_text, register_kernel  # noqa: E402
from simtk.multibody import Force  # noqa: E402
from tolerances import assert_close, scale_of  # noqa: E402

for _name, (_kernel, _) in jk.KERNELS.items():
    register_kernel(_kernel, f"jit_tests.{_name}")


def _copy_state(src_system, src, dst_system):
    dst = dst_system.realize_topology()
    dst.set_q(src.get_q().copy())
    dst.set_u(src.get_u().copy())
    dst.set_time(src.get_time())
    return dst


@pytest.mark.parametrize("seed", range(3))
def test_a_jitted_model_saves_and_loads_by_the_kernels_registered_names(seed):
    js, jm, _, jel, jst = _random_model(seed, False, n_elements=8)
    ps, pm, _, _, pst = _random_model(seed, True, n_elements=8)
    text = model_to_text(js)
    used = {e.get_kernel() for e in jel}
    for name, (kernel, _) in jk.KERNELS.items():
        assert (f'kernel="jit_tests.{name}"' in text) == (kernel in used)
    loaded = model_from_text(text)
    lst = _copy_state(js, jst, loaded)
    pst = _copy_state(js, jst, ps)
    lm = loaded.get_matter_subsystem()
    lf = loaded.get_force_subsystems()[0]
    jits = [lf.get_force(i) for i in range(lf.get_num_forces()) if isinstance(lf.get_force(i), Force.Jit)]
    assert [e.get_kernel() for e in jits] == [e.get_kernel() for e in jel]
    assert all(np.array_equal(a.get_params(), b.get_params()) for a, b in zip(jits, jel))
    for s, sys_ in ((jst, js), (lst, loaded), (pst, ps)):
        sys_.realize(s, Stage.Acceleration)
    lu, pu, ju = lm.get_udot(lst), pm.get_udot(pst), jm.get_udot(jst)
    assert_close(lu, pu, margin=4096, scale=scale_of(lu, pu, floor=1.0), what="loaded udot vs the Python twins'")
    assert np.array_equal(lu, ju)  # the same elements in the same order: the same sums, bit for bit
    assert_close(loaded.calc_potential_energy(lst), ps.calc_potential_energy(pst), margin=1024,
                 scale=max(1.0, abs(ps.calc_potential_energy(pst))), what="loaded potential energy")


def test_position_only_flag_round_trips():
    js, jm, forces, _, _ = _random_model(0, False, n_elements=0)
    Force.Jit(forces, jm, jk.mobility, [0, 0, 1.0, 0.0, 0.0, 1.0], depends_only_on_positions=True)
    loaded = model_from_text(model_to_text(js))
    lf = loaded.get_force_subsystems()[0]
    (e,) = [lf.get_force(i) for i in range(lf.get_num_forces()) if isinstance(lf.get_force(i), Force.Jit)]
    assert e._position_only_here() and not jk.mobility.depends_only_on_positions


def test_unregistered_and_unknown_kernels_are_refused_naming_the_element():
    @sj.force
    def lonely(ctx, params, body_forces, mobility_forces):
        mobility_forces[0] += params[0]

    js, jm, forces, _, _ = _random_model(1, False, n_elements=0)
    e = Force.Jit(forces, jm, lonely, [1.0])
    with pytest.raises(ModelFileError, match=rf"{e.get_absolute_path()}.*not registered with simtk.io.register_kernel"):
        model_to_text(js)
    register_kernel(lonely, "jit_tests.lonely")
    text = model_to_text(js)
    with pytest.raises(ModelFileError, match=r"Force.Jit.*no kernel is registered as 'jit_tests.nobody'"):
        model_from_text(text.replace('"jit_tests.lonely"', '"jit_tests.nobody"'))
    with pytest.raises(ValueError, match="taken"):
        register_kernel(jk.mobility, "jit_tests.lonely")
    with pytest.raises(ValueError, match="not a valid kernel name"):
        register_kernel(jk.mobility, "has space")
    with pytest.raises(TypeError, match="expected a kernel"):
        register_kernel(lambda: None, "jit_tests.not_a_kernel")


def test_an_edited_kernel_is_compiled_again_not_taken_from_numbas_cache(tmp_path, monkeypatch):
    """The trampolines are cached by the kernel's code: the same function edited in place (same file,
    name and lines) must give the new forces, in a fresh process's view of the cache as in this one."""
    import importlib
    import sys

    src = ("import simtk.jit as sj\n\n\n@sj.force\ndef edited(ctx, params, body_forces, mobility_forces):\n"
           "    mobility_forces[0] += {c} * params[0]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    got = []
    for c in ("1.0", "-3.0"):
        (tmp_path / "jit_edited_kernel.py").write_text(src.format(c=c))
        sys.modules.pop("jit_edited_kernel", None)
        importlib.invalidate_caches()
        module = importlib.import_module("jit_edited_kernel")
        js, jm, forces, _, _ = _random_model(2, False, n_elements=0)
        e = Force.Jit(forces, jm, module.edited, [2.0])
        state = js.realize_topology()
        js.realize(state, Stage.Velocity)
        got.append(e.calc_force_contribution(state)[1][0])
    assert got == [2.0, -6.0]


def test_a_module_level_kernel_pickles_by_reference_and_a_local_one_is_refused_by_pickle():
    import pickle

    assert pickle.loads(pickle.dumps(jk.spring_damper)) is jk.spring_damper

    @sj.force
    def local(ctx, params, body_forces, mobility_forces):
        mobility_forces[0] += params[0]

    # (pickle cannot hold a local function: the kernel's own reduction says so, not a crash)
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(local)
