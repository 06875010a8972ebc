"""Keeping sweep run ids across netfl versions: fields added later, and defaults that changed,
hashed as a scenario written before them would be (netfl.sweep.grid.run_id)."""

from __future__ import annotations

# fields added later that leave results alone at their default, anywhere in the tree: hashed
# only when set, so that the ids of existing sweeps (and their resume) do not change
UNHASHED_DEFAULTS: tuple[tuple[tuple[str, ...], object], ...] = (
    (("output", "timeline"), False), (("stop", "tolerate_divergence"), False),
    (("data", "path"), None), (("model", "train_flops_per_sample"), None),
    (("energy",), None), (("devices", "clients", "power"), None),
    (("devices", "edge", "power"), None), (("devices", "cloud", "power"), None),
    (("devices", "clients", "trace"), None), (("world", "power"), None),
    (("devices", "clients", "battery"), None), (("links", "closed_form"), False),
    (("algorithm", "schedule_period"), None), (("stop", "target_check_steps"), None),
    (("stop", "target_check_time"), None), (("stop", "target_check_cost"), None),
    (("stop", "stall_after"), 86400.0),
    (("world", "clients"), "users"),
    (("world", "association", "reconfiguration"), None),
    (("world", "beams", "background_by_hour"), None), (("world", "gsl", "weather"), None),
    (("world", "beams", "background_spread"), 0.0), (("world", "backhaul"), None),
)
# fields whose default changed without changing results, hashed at their old default so the
# ids of sweeps made before stay: stop.target_screen_samples was 2000 (one screening subset)
# before the staged screen made its default None (60% of the test set)
HASHED_AS_BEFORE: tuple[tuple[tuple[str, ...], object, object], ...] = (
    (("stop", "target_screen_samples"), None, 2000),
)


def _holder(tree: dict, parents: tuple[str, ...]) -> dict | None:
    for part in parents:
        tree = tree.get(part) if isinstance(tree, dict) else None
    return tree if isinstance(tree, dict) else None


def as_hashed_before(resolved: dict) -> None:
    """Rewrite a resolved scenario (its JSON dump) in place as it was hashed before those
    fields and defaults existed."""
    for (*parents, key), default in UNHASHED_DEFAULTS:
        holder = _holder(resolved, tuple(parents))
        if holder is not None and key in holder and holder[key] == default:
            holder.pop(key)
    for (*parents, key), default, before in HASHED_AS_BEFORE:
        holder = _holder(resolved, tuple(parents))
        if holder is not None and key in holder and holder[key] == default:
            holder[key] = before
