"""Partitions: label counts match what each scheme states, and sizes add up."""

import numpy as np
import pytest

from netfl.learn.fake import label_skew
from netfl.learn.partition import (
    equal_sizes,
    make_partition,
    normal_sizes,
    partition_dirichlet,
    partition_edge_iid_dirichlet,
    partition_edge_labels,
    partition_iid,
    partition_labels,
)
from netfl.scenario.sections import DataSpec

LABELS = np.repeat(np.arange(10), 100)  # 1,000 samples, 100 per class
RNG = np.random.default_rng


def check_consistent(part, n_clients, labels=LABELS):
    everything = np.concatenate(part.client_indices)
    assert len(np.unique(everything)) == len(everything)  # no sample twice
    assert part.counts.shape == (n_clients, 10)
    for i, idx in enumerate(part.client_indices):
        np.testing.assert_array_equal(np.bincount(labels[idx], minlength=10), part.counts[i])


def labels_held(part):
    return (part.counts > 0).sum(axis=1)


def test_iid_uses_every_sample_in_near_equal_parts():
    part = partition_iid(LABELS, equal_sizes(1000, 7), 10, RNG(0))
    check_consistent(part, 7)
    assert part.sizes.sum() == 1000 and part.sizes.max() - part.sizes.min() <= 1


@pytest.mark.parametrize("alpha", [0.05, 0.5, 100.0])
def test_dirichlet_gives_the_requested_sizes(alpha):
    part = partition_dirichlet(LABELS, equal_sizes(1000, 20), 10, alpha, RNG(1))
    check_consistent(part, 20)
    assert (part.sizes == 50).all()


def test_smaller_alpha_means_more_label_skew():
    rng = RNG(2)
    skews = [label_skew(partition_dirichlet(LABELS, equal_sizes(1000, 20), 10, a, rng)
                        .counts).mean() for a in (0.05, 0.5, 100.0)]
    assert skews[0] > skews[1] > skews[2]
    assert skews[2] < 0.1


def test_normal_sizes_are_clipped_and_must_fit():
    sizes = normal_sizes(300, 110, 45, 20, 200, 60000, RNG(3))
    assert sizes.min() >= 20 and sizes.max() <= 200 and abs(sizes.mean() - 110) < 10
    with pytest.raises(ValueError, match="add up to"):
        normal_sizes(300, 110, 45, 20, 200, 1000, RNG(3))
    part = partition_dirichlet(LABELS, normal_sizes(8, 110, 45, 20, 200, 1000, RNG(4)), 10, 0.5,
                               RNG(4))
    check_consistent(part, 8)


@pytest.mark.parametrize(("n", "p"), [(20, 1), (20, 2), (50, 3), (10, 10)])
def test_labels_per_client(n, p):
    part = partition_labels(LABELS, n, 10, p, RNG(5))
    check_consistent(part, n)
    assert (labels_held(part) == p).all()
    assert part.sizes.sum() == 1000  # every sample handed out (each label has a holder here)


GROUPS = [list(range(0, 5)), list(range(5, 10)), list(range(10, 15)), list(range(15, 20))]


@pytest.mark.parametrize(("p_g", "p_c"), [(1, 1), (2, 1), (5, 2), (10, 5), (10, 10)])
def test_edge_labels_hold_p_g_per_edge_and_p_c_per_client(p_g, p_c):
    part = partition_edge_labels(LABELS, GROUPS, 10, p_g, p_c, RNG(6))
    check_consistent(part, 20)
    assert (labels_held(part) == p_c).all()
    for group in GROUPS:
        assert (part.counts[group].sum(axis=0) > 0).sum() == p_g


def test_edge_labels_need_p_c_within_p_g():
    with pytest.raises(ValueError, match="cannot hold 3 labels"):
        partition_edge_labels(LABELS, GROUPS, 10, 2, 3, RNG(0))


def test_edge_iid_dirichlet_is_iid_across_edges_and_skewed_inside():
    part = partition_edge_iid_dirichlet(LABELS, GROUPS, 10, 0.1, RNG(7))
    check_consistent(part, 20)
    per_edge = np.stack([part.counts[g].sum(axis=0) for g in GROUPS])
    assert per_edge.sum(axis=1).tolist() == [250] * 4
    assert label_skew(per_edge).max() < 0.05  # edges look alike
    assert label_skew(part.counts).mean() > 0.4  # clients do not


def test_too_many_clients_is_a_clear_error():
    with pytest.raises(ValueError, match="cannot give"):
        partition_iid(LABELS[:5], equal_sizes(5, 10), 10, RNG(0))


def test_make_partition_dispatches_on_the_scenario_kind():
    for partition in ({"kind": "iid"}, {"kind": "dirichlet", "alpha": 0.3},
                      {"kind": "labels", "per_client": 2},
                      {"kind": "edge-labels", "per_edge": 4, "per_client": 2},
                      {"kind": "edge-iid-dirichlet", "alpha": 0.5},
                      {"kind": "iid", "sizes": {"kind": "normal", "mean": 40, "std": 5}}):
        spec = DataSpec(dataset="digits", partition=partition).partition
        check_consistent(make_partition(spec, LABELS, 10, GROUPS, RNG(8)), 20)


def test_per_edge_gives_each_edge_its_own_scheme():
    from netfl.learn.partition import partition_per_edge

    spec = DataSpec(dataset="digits", partition={"kind": "per-edge", "edges": [
        {"kind": "iid"}, {"kind": "labels", "per_client": 2}, {"kind": "iid"},
        {"kind": "dirichlet", "alpha": 0.1}]}).partition
    part = partition_per_edge(LABELS, GROUPS, 10, spec.edges, RNG(9))
    check_consistent(part, 20)
    assert (labels_held(part)[5:10] == 2).all()  # edge 1: two labels per client
    assert (labels_held(part)[0:5] >= 8).all()  # edge 0: iid, nearly every label
    assert part.sizes.sum() == 1000


def test_clients_left_without_a_sample_are_an_error_with_their_count(tiny):
    """Zero-sample clients downloaded, trained on nothing and uploaded."""
    import netfl
    from netfl.simulation import Simulation

    tiny["world"].update(clients=1340, edge_servers=10)  # digits: 1,347 training samples
    tiny["data"]["partition"] = {"kind": "labels", "per_client": 2}
    with pytest.raises(netfl.ScenarioError, match=r"data.partition = 'labels': \d+ of 1340 "
                       r"clients get no training sample \(client \d+"):
        Simulation(netfl.load_scenario(tiny), with_model=False)


def test_a_partition_file_gives_each_client_its_samples(tiny, tmp_path):
    """Another tool's exact partition, as JSON or CSV."""
    import json

    import netfl
    from netfl.simulation import Simulation

    owned = {str(c): list(range(10 * c, 10 * c + 10)) for c in range(6)}
    (tmp_path / "p.json").write_text(json.dumps(owned))
    (tmp_path / "p.csv").write_text("client,sample\n" + "".join(
        f"{c},{i}\n" for c, samples in owned.items() for i in samples))
    for name in ("p.json", "p.csv"):
        tiny["data"]["partition"] = {"kind": "file", "path": str(tmp_path / name)}
        partition = Simulation(netfl.load_scenario(tiny), with_model=False).partition
        assert [list(map(int, p)) for p in partition.client_indices] == list(owned.values())


@pytest.mark.parametrize("content, words", [
    ('{"0": [1, 2]}', "5 clients have no samples"),
    ('{"0": [1], "1": [1], "2": [3], "3": [4], "4": [5], "5": [6]}', "sample 1 is given twice"),
    ('{"0": [99999], "1": [1], "2": [3], "3": [4], "4": [5], "5": [6]}', "99999 is not in"),
    ('{"9": [1]}', "client 9 is not in 0..5"),
    ('[1, 2]', "expected a JSON object"),
])
def test_a_bad_partition_file_is_named(tiny, tmp_path, content, words):
    import netfl
    from netfl.simulation import Simulation

    (tmp_path / "p.json").write_text(content)
    tiny["data"]["partition"] = {"kind": "file", "path": str(tmp_path / "p.json")}
    with pytest.raises(netfl.ScenarioError, match=words) as info:
        Simulation(netfl.load_scenario(tiny), with_model=False)
    assert "p.json" in str(info.value)
