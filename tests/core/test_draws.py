"""core/draws.py draws numpy's seeded permutations bit for bit, many at once."""

from __future__ import annotations

import numpy as np
import pytest

from marketarena.core.draws import first_of_permutations, words


@pytest.mark.parametrize("seed", [0, 1, 7, 123456789, 2**32, 2**40 + 5, 2**64 + 3])
@pytest.mark.parametrize("n, k", [(9, 8), (29, 8), (100, 10), (2, 2), (1, 1)])
def test_the_same_draws_as_numpy(seed, n, k):
    runs = np.r_[np.arange(500), [2**20, 10**6, 2**32 - 1]]
    fast = first_of_permutations([seed], runs, 7, n, k)
    slow = np.array(
        [
            np.random.default_rng(np.random.SeedSequence([seed, int(r), 7])).permutation(n)[:k]
            for r in runs
        ]
    )
    assert (fast == slow).all()


def test_several_head_words_and_the_limits():
    runs = np.arange(200)
    fast = first_of_permutations([3, 2**33], runs, 9, 29, 8)
    slow = np.array(
        [
            np.random.default_rng(np.random.SeedSequence([3, 2**33, int(r), 9])).permutation(29)[:8]
            for r in runs
        ]
    )
    assert (fast == slow).all()
    assert words(0) == [0] and words(2**32 + 5) == [5, 1]
    with pytest.raises(ValueError):
        first_of_permutations([0], np.array([2**32]), 7, 9, 8)
