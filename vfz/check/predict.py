"""What the model predicts for a writer: the model of its traits, on the volume it starts from.

Used by the checker for every writer and by the twin comparison for a twin sent a shorter script.
"""
from vfz import model, oracles
from vfz.model.space import space_for


def model_key(wn):
    """(profile, names, rule) of the model that predicts writer wn."""
    e = oracles.entry(wn)
    return (e.profile if isinstance(e.profile, str) else id(e.profile)), e.names, e.shortname


def model_of(wn, base, ops):
    """The model that predicts writer wn on a copy of image base, after ops
    (its root's slots come from base; the writer's shortname rule)."""
    e = oracles.entry(wn)
    m = model.Model(e.profile, e.names, root=model.root_for(e.profile, base), rule=e.shortname,
                    space=space_for(e.profile, base))
    m.label_from(base)
    m.apply(ops)
    return m
