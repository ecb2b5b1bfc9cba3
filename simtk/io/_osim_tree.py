"""The multibody tree of an .osim file's joints, as OpenSim's graph maker grows it from Ground."""
from __future__ import annotations

import numpy as np

from simtk import Transform

from ._osim_elements import _build_joint, element_of
from ._osim_reader import _clean_name, _Element, _Reader


def _body_key(base: _Element) -> str:
    """The key of a joint end's base frame: a Body's name, or ``"ground"``."""
    return "ground" if base.tag == "Ground" else (base.get("name") or "")


def _free_joint(body: str, line: int) -> _Element:
    """The FreeJoint OpenSim adds from Ground to ``body`` (named ``free_<body>``, its six coordinates
    ``free_<body>_coord_<k>``), as an element ``_build_joint`` reads."""
    el = _Element("FreeJoint", {"name": f"free_{body}"})
    el.line = line
    holder = _Element("coordinates", {})
    holder.line = line
    for k in range(6):
        c = _Element("Coordinate", {"name": f"free_{body}_coord_{k}"})
        c.line = line
        holder.append(c)
    el.append(holder)
    return el


def _joint_tree(r: _Reader, joints: list, bodies: dict, notes: list) -> tuple[dict, list]:
    """The mobilizer each body gets, and the joints that close loops, as OpenSim's graph maker finds them.

    ``joints`` holds (element, parent body, X_PF, child body, X_BM) in file order; ``bodies`` maps
    each Body's name to its element, in file order. Returns ``(tree, loops)``: ``tree`` maps a body
    name to (joint element, inboard body, X_PF, X_BM, reversed); ``loops`` lists the joints left over,
    (element, parent, X_PF, child, X_BM).

    As Simbody's MultibodyGraphMaker (which OpenSim uses) grows it: a body in no joint first gets a
    FreeJoint from Ground (``free_<body>``, added after the file's joints); then level by level from
    Ground, each level taking, in file order, every joint with exactly one body in the tree at the
    level before. A joint whose parent is in the tree mobilizes its child (forward), one whose *child*
    is in the tree mobilizes its parent reversed (its child frame inboard; the coordinates keep their
    meaning). Bodies still out of the tree then get a FreeJoint from Ground, one at a time (the first
    body that is no joint's child, else the one that is most joints' parent), and the tree grows
    again. The joints left have both bodies in the tree and close loops: OpenSim mobilizes a copy
    (slave) of the child body through each, welded to it (see `_close_loops`).
    """
    joints = list(joints)
    in_joint = {j[1] for j in joints} | {j[3] for j in joints}
    for b, bel in bodies.items():
        if b not in in_joint:
            joints.append((_free_joint(b, bel.line), "ground", Transform(), b, Transform()))
            notes.append(f"{b} (Body without a joint, line {bel.line}): joined to Ground by FreeJoint "
                         f"'free_{b}' (coordinates free_{b}_coord_0 to 5), as OpenSim does")
    tree: dict = {}
    level = {"ground": 0}
    used: list = []
    while True:
        used += [False] * (len(joints) - len(used))
        lev = 1
        while True:
            added = False
            for k, (el, parent, X_PF, child, X_BM) in enumerate(joints):
                if used[k] or (parent in level) == (child in level):
                    continue
                inboard = parent if parent in level else child
                if level[inboard] != lev - 1:
                    continue
                used[k] = added = True
                reverse = inboard == child
                if reverse and el.tag == "CustomJoint":
                    raise r.error(el, f"CustomJoint {el.get('name')!r}: OpenSim would reverse it (its child "
                                      f"{child!r} is nearer to Ground than its parent {parent!r}); a reversed "
                                      "CustomJoint (FunctionBased mobilizer) is not supported: swap its frames")
                other = parent if reverse else child
                tree[other] = (el, child, X_BM, X_PF, True) if reverse else (el, parent, X_PF, X_BM, False)
                level[other] = lev
            if not added:
                break
            lev += 1
        out = [b for b in bodies if b not in level]
        if not out:
            break
        parent_only = [b for b in out if not any(j[3] == b for j in joints)]
        base = parent_only[0] if parent_only else max(out, key=lambda b: sum(j[1] == b for j in joints))
        joints.append((_free_joint(base, bodies[base].line), "ground", Transform(), base, Transform()))
        notes.append(f"{base} (Body, line {bodies[base].line}): no chain of joints reaches Ground from it; "
                     f"joined to Ground by FreeJoint 'free_{base}', as OpenSim does")
    loops = []
    for k, j in enumerate(joints):
        if used[k]:
            continue
        el, parent, _, child, _ = j
        if child == "ground":
            raise r.error(el, f"{el.tag} {el.get('name')!r}: it closes a loop of joints at Ground, which simtk "
                              "does not support")
        loops.append(j)
    return tree, loops


def _split_mass(mp: tuple, n: int) -> tuple:
    """A master body's and each of its ``n`` slaves' share of its mass properties (mass, com, central
    inertia, kept as written): equal parts."""
    if n == 0:
        return mp
    mass, com, central, keep = mp
    return mass / (n + 1), com, central * (1.0 / (n + 1)), keep


def _slave_mass(share: tuple) -> tuple:
    """A slave body's mass properties as OpenSim 4.6 builds them: the master's share of the mass at its
    mass center, but as inertia about the mass center the share's *unit* inertia about the body origin
    (Body::extendConnectToModel stores the UnitInertia in the slave's inertia property, which is then
    read as a central inertia; checked against OpenSim)."""
    mass, com, central, keep = share
    if mass == 0.0:
        return share
    c = np.asarray(com, dtype=float)
    about_origin = central + mass * (float(c @ c) * np.eye(3) - np.outer(c, c))
    return mass, com, about_origin * (1.0 / mass), keep


def _close_loops(r: _Reader, out, loops: list, mass_props: dict, coord_els: dict) -> None:
    """Mobilize a slave copy of each loop joint's child body through the joint, welded to the body at
    their origins, as OpenSim does (``mass_props`` holds the master's share, see `_split_mass`)."""
    count: dict = {}
    desc = out.desc
    for el, parent, X_PF, child, X_BM in loops:
        count[child] = count.get(child, 0) + 1
        sname = f"{child}_slave_{count[child]}"
        _build_joint(r, out, el, out.bodies[parent], X_PF, sname, _slave_mass(mass_props[child]), X_BM, coord_els)
        slave = out.bodies.pop(sname)
        weld = desc.add("Constraint.Weld", out.matter, desc.unique_name(out.matter, _clean_name(sname) + "_weld"),
                        line=el.line, element=element_of(el), body1=out.bodies[child], frame_on_body1=Transform(),
                        body2=slave, frame_on_body2=Transform())
        out.loop_welds[el.get("name")] = weld
