"""ContactMesh in a HuntCrossleyForce (issue 29) against OpenSim 4.6: Simbody's Hunt-Crossley handles
point contacts only, so a mesh penetrating a half-space or a sphere gets no force from it (measured:
OpenSim's accelerations are gravity's), while the force's other geometries still push. load_osim
builds the same. ElasticFoundationForce is not built: it is listed in the warning."""
from __future__ import annotations

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
trimesh = pytest.importorskip("trimesh")

from test_osim import REL, compare_udot, new_model, random_body, v3, write  # noqa: E402

from simtk import Stage  # noqa: E402
from simtk.io import load_osim  # noqa: E402


def mesh_model(tmp_path, other: str, force: str = "HuntCrossleyForce"):
    mesh_file = tmp_path / "box.obj"
    trimesh.creation.box(extents=(0.3, 0.2, 0.25)).export(str(mesh_file))
    rng = np.random.default_rng(8)
    model = new_model()
    b = random_body(rng, "b")
    model.addBody(b)
    model.addJoint(osim.FreeJoint("j", model.getGround(), b))
    s = random_body(rng, "s")
    model.addBody(s)
    model.addJoint(osim.SliderJoint("js", model.getGround(), v3([0.25, 0.1, 0]), v3([0, 0, 1.5707963267948966]),
                                    s, v3([0, 0, 0]), v3([0, 0, 1.5707963267948966])))
    model.addContactGeometry(osim.ContactMesh(str(mesh_file), v3([0.02, 0, 0]), v3([0.1, 0.2, 0]), b, "mesh"))
    model.addContactGeometry(osim.ContactSphere(0.1, v3([0, 0, 0]), s, "ball"))
    if other == "half":
        model.addContactGeometry(osim.ContactHalfSpace(v3([0, 0, 0]), v3([0, 0, -1.5707963267948966]),
                                                       model.getGround(), "floor"))
    else:
        model.addContactGeometry(osim.ContactSphere(0.2, v3([0, 0, 0]), model.getGround(), "floor"))
    f = getattr(osim, force)()
    f.setStiffness(1e5)
    f.setDissipation(0.5)
    f.setStaticFriction(0.6)
    f.setDynamicFriction(0.4)
    f.setViscousFriction(0.1)
    for g in ("mesh", "floor", "ball"):
        f.addGeometry(g)
    f.setName("contact")
    model.addForce(f)
    return write(model, tmp_path)


@pytest.mark.parametrize("other", ["half", "sphere"])
def test_mesh_in_hunt_crossley_adds_no_force_and_the_rest_still_pushes(tmp_path, other):
    """The mesh box sunk into the floor (a half-space, or a sphere at the origin) and the slider's ball
    penetrating the floor: accelerations equal OpenSim's, and the mesh body falls freely."""
    path = mesh_model(tmp_path, other)

    def values(rng, names):
        q = {n: float(rng.uniform(-0.3, 0.3)) for n in names}
        u = {n: float(rng.uniform(-0.5, 0.5)) for n in names}
        q["j_coord_4"] = float(rng.uniform(-0.05, 0.05))  # the box's centre at the floor: it penetrates
        q["j_coord_3"] = q["j_coord_5"] = 0.0
        q["js_coord_0"] = float(rng.uniform(-0.05, -0.01))  # the ball (radius 0.1 at y = 0.1 + q) penetrates
        return q, u

    assert compare_udot(path, np.random.default_rng(1), n_states=4, values=values) < REL
    # the ball is pushed out of the floor: its slide accelerates upward against gravity (-9.81 along it)
    m = load_osim(path)
    st = m.initial_state()
    m.set_coordinate_value(st, "js_coord_0", -0.03)
    m.set_coordinate_value(st, "j_coord_4", 0.0)
    m.system.realize(st, Stage.Acceleration)
    assert m.get_coordinate_acceleration(st, "js_coord_0") > 10.0


def test_elastic_foundation_force_is_listed_as_not_built(tmp_path):
    path = mesh_model(tmp_path, "half", "ElasticFoundationForce")
    with pytest.warns(UserWarning, match=r"contact \(ElasticFoundationForce, line \d+\)"):
        m = load_osim(path)
    assert "contact" not in m.force_elements
