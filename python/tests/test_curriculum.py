"""The RL task sampler: levels of tasks, mixing weights, and when the curriculum opens a level."""

import random
from collections import Counter

import pytest

from tritium.train.curriculum import Curriculum, parse_weights, task_level


def tasks(counts: dict[int, int]) -> list[dict]:
    return [{"id": f"L{lv}-{i}", "meta": {"difficulty": lv}} for lv, n in counts.items() for i in range(n)]


def test_a_tasks_level_is_its_difficulty_then_its_kernelbench_level():
    assert task_level({"meta": {"difficulty": 4}, "level": 1}) == 4
    assert task_level({"level": 2, "meta": {}}) == 2
    assert task_level({"id": "x"}) == 1


def test_weights_parse_and_bad_ones_are_refused():
    assert parse_weights("1:0.5, 2:0.25") == {1: 0.5, 2: 0.25}
    assert parse_weights("") == {}
    for bad in ("1", "a:1", "1:-1", "1:x"):
        with pytest.raises(ValueError, match="LEVEL:WEIGHT"):
            parse_weights(bad)


def test_levels_open_one_at_a_time_at_the_threshold():
    c = Curriculum(tasks({1: 3, 2: 3, 3: 3}), promote_at=0.5)
    rng = random.Random(0)
    assert {task_level(t) for t in c.pick(rng, 50)} == {1}
    assert not c.update(0.49) and c.open_levels() == [1]
    assert c.update(0.5) and c.open_levels() == [1, 2] and c.top == 2
    assert c.update(1.0) and not c.update(1.0)  # all three open; nothing more to open
    assert Curriculum(tasks({1: 1, 5: 1}), enabled=False).open_levels() == [1, 5]


def test_picks_follow_the_mixing_weights():
    c = Curriculum(tasks({1: 2, 2: 2, 3: 2}), weights={1: 0.2, 2: 0.8}, enabled=False)
    counts = Counter(task_level(t) for t in c.pick(random.Random(1), 10_000))
    assert counts[3] == 0  # a level left out of the weights gets none
    assert abs(counts[2] / 10_000 - 0.8) < 0.02


def test_weights_that_exclude_every_level_are_an_error():
    with pytest.raises(ValueError, match="weight 0"):
        Curriculum(tasks({1: 1}), weights={7: 1.0})
