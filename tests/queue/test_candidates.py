"""How many jobs a fetch loop names to moveToActive: one while it has the queue to itself,
more while other workers keep taking the tail first."""
from __future__ import annotations

from minired_queue.options import Candidates
from minired_queue.transitions import Fetch


def fetched(*candidates: str) -> Fetch:
    return Fetch("active", 0, -1, candidates)


def missed(*candidates: str) -> Fetch:
    return Fetch("miss", 0, -1, candidates)


def test_a_lone_worker_names_one_job():
    candidates = Candidates()
    assert (candidates.ids, candidates.width) == ((), 1)
    candidates.missed(missed("a"))  # the first fetch names nothing: no sign of a race
    assert (candidates.ids, candidates.width) == (("a",), 1)
    for next_id in "bcdefgh":
        candidates.took(fetched(next_id), first_try=True)
        assert (candidates.ids, candidates.width) == ((next_id,), 1)


def test_misses_widen_up_to_a_limit_and_calm_narrows_again():
    candidates = Candidates()
    candidates.missed(missed("a"))
    widths = []
    for _ in range(6):
        candidates.missed(missed("x"))
        widths.append(candidates.width)
    assert widths == [2, 4, 8, 16, 16, 16]
    candidates.took(fetched("y"), first_try=False)
    for _ in range(Candidates.CALM_FETCHES - 1):
        candidates.took(fetched("y"), first_try=True)
    assert candidates.width == 16
    candidates.took(fetched("y"), first_try=True)
    assert candidates.width == 8


def test_forgetting_keeps_the_width():
    candidates = Candidates()
    candidates.missed(missed("a"))
    candidates.missed(missed("b", "c"))
    candidates.forget()
    assert (candidates.ids, candidates.width) == ((), 2)
