"""The multibody tree of an .osim file's joints, as OpenSim's graph maker grows it from Ground."""
from __future__ import annotations

from ._osim_reader import _Element, _Reader


def _body_key(base: _Element) -> str:
    """The key of a joint end's base frame: a Body's name, or ``"ground"``."""
    return "ground" if base.tag == "Ground" else (base.get("name") or "")


def _joint_tree(r: _Reader, joints: list) -> dict:
    """Body name -> (joint element, inboard body, X_PF, X_BM, reversed) of the mobilizer each body gets.

    ``joints`` holds (element, parent body, X_PF, child body, X_BM) in file order. The tree grows
    from Ground level by level, as OpenSim's: a joint whose parent is reached first mobilizes its child
    (forward); a joint whose *child* is reached first mobilizes its parent, reversed (its child frame is
    the inboard one and the coordinates keep their meaning: OpenSim reverses such joints too). A joint
    whose two bodies are both reached already closes a loop: OpenSim cuts it with a weld to a copy of
    the body, simtk refuses the file (a loop is closed with a constraint). Joints that never connect
    to Ground are refused too.
    """
    tree: dict = {}
    reached = {"ground"}
    used = [False] * len(joints)
    frontier = ["ground"]
    while frontier:
        nxt = []
        for b in frontier:
            for k, (el, parent, X_PF, child, X_BM) in enumerate(joints):
                if used[k] or b not in (parent, child):
                    continue
                used[k] = True
                other, reverse = (child, False) if parent == b else (parent, True)
                if other in reached:
                    via = tree.get(other)
                    raise r.error(el, f"{el.tag} {el.get('name')!r}: body {other!r} is already reached "
                                      + (f"through joint {via[0].get('name')!r}" if via else "(it is Ground)")
                                      + "; this joint closes a loop of joints, which OpenSim cuts with a weld to a "
                                      "copy of the body and simtk does not support (close the loop with a "
                                      "constraint)")
                if reverse and el.tag == "CustomJoint":
                    raise r.error(el, f"CustomJoint {el.get('name')!r}: OpenSim would reverse it (its child "
                                      f"{child!r} is nearer to Ground than its parent {parent!r}); a reversed "
                                      "CustomJoint (FunctionBased mobilizer) is not supported: swap its frames")
                tree[other] = (el, b, X_BM, X_PF, True) if reverse else (el, b, X_PF, X_BM, False)
                reached.add(other)
                nxt.append(other)
        frontier = nxt
    if not all(used):
        el = joints[used.index(False)][0]
        raise r.error(el, f"{el.tag} {el.get('name')!r}: its bodies are not connected to Ground through joints "
                          "(a loop of joints, or a chain with no joint to Ground); simtk does not support it")
    return tree
