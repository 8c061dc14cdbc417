"""Adaptive seeds: the decisions on returns whose answer is known, their record, and real sweeps that add
seeds, stop, and resume from the same state."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import REPO, TINY_SPEC, TINY_XML
from mjsweep.results.seeding import decided_by, explain, next_round, to_markdown, verdicts
from mjsweep.spec.sweepspec import AdaptiveSeeds
from mjsweep.sweepdir.files import append_line, read_lines
from mjsweep.sweepdir.models import SeedRound, SeedVerdict

POLICY = AdaptiveSeeds(min=3, max=10)


def simulate(draw: Callable[[str, int], float], groups: list[str], policy: AdaptiveSeeds = POLICY
             ) -> list[SeedRound]:
    """Every round the launcher would decide when seed s of group g returns draw(g, s)."""
    seeds = dict.fromkeys(groups, policy.min)
    rounds: list[SeedRound] = []
    history: list[dict[str, int]] = []
    while not rounds or not rounds[-1].done:
        returns: dict[str, list[float | None]] = {g: [draw(g, s) for s in range(n)] for g, n in seeds.items()}
        rounds.append(next_round(len(rounds) + 1, returns, history, policy))
        history.append(rounds[-1].seeds())
        seeds = rounds[-1].granted()
    return rounds


def test_groups_far_apart_are_separated_at_the_first_look_whose_share_of_the_error_allows_it():
    # A complete order of n vs n seeds has |T| = n^2 / 2 / sqrt(n^2 (2n + 1) / 12), whose t guard (n - 1 degrees of
    # freedom) is 0.19 at 3 each, 0.10 at 4, 0.059 at 5, 0.035 at 6. The information fraction at n each of max 10
    # is n / 10: by 6 each the design has spent 0.05 ln(1 + 0.6 (e - 1)) = 0.035, but the smallest |T| whose
    # permutation chance fits it (2.24, 24/924) raised to the t guard at that chance is beyond the complete
    # order's 2.88; at 7 each the boundary is 2.65, below the complete order's 3.13: it crosses.
    rounds = simulate(lambda g, s: (100.0 if g == "strong" else 0.0) + s, ["weak", "strong"])
    assert [r.granted() for r in rounds] == [{"weak": n, "strong": n} for n in (4, 5, 6, 7, 7)]
    assert rounds[-1].best == "strong" and rounds[-1].done
    weak = rounds[-1].groups[0]
    assert (weak.verdict, weak.p, weak.add) == (SeedVerdict.SEPARATED, 1.0, False)
    [pair] = rounds[-1].pairs
    assert pair.looks == [[n, n] for n in range(3, 8)]
    assert pair.boundaries == [None] * 4 + [pytest.approx(2.653, abs=1e-3)]
    assert (pair.u, pair.d, pair.t, pair.level, pair.separated) == \
        (0.0, 49.0, pytest.approx(-3.1305, abs=1e-4), pytest.approx(0.05), True)


def test_identical_groups_are_never_separated_and_stop_at_max():
    rounds = simulate(lambda g, s: float(s % 4), ["a", "b"])  # the same returns seed by seed
    assert [r.round for r in rounds] == list(range(1, 9))  # 3 seeds, then one a round up to 10
    assert all(g.p == 0.5 for r in rounds for g in r.groups if g.verdict is not SeedVerdict.BEST)
    assert [g.verdict for g in rounds[-1].groups] == [SeedVerdict.BEST, SeedVerdict.AT_MAX]
    assert rounds[-1].granted() == {"a": 10, "b": 10}
    assert not any(p.separated for r in rounds for p in r.pairs)


def test_with_one_clearly_best_group_the_far_one_stops_once_separated_and_seeds_go_to_the_close_pair():
    def draw(group: str, seed: int) -> float:
        wobble = [0.0, 3.0, 1.0, 2.0][seed % 4]
        return {"best": 11.0 + wobble, "close": 10.0 + wobble, "far": wobble}[group]

    rounds = simulate(draw, ["far", "close", "best"])
    assert all(r.best == "best" for r in rounds)
    # Holm over 3 pairs: the far pair is tested at 0.05 / 3 first, which a complete order reaches at 9 seeds
    # (tests/test_reach.py: the first look of min 3, max 10 with three groups).
    far = [r.groups[0] for r in rounds]
    assert [g.verdict for g in far[:7]] == [SeedVerdict.OPEN] * 6 + [SeedVerdict.SEPARATED]
    assert all(g.verdict is SeedVerdict.SEPARATED and not g.add for g in far[6:])
    assert rounds[-1].granted()["far"] == 9
    assert rounds[-1].granted()["close"] == rounds[-1].granted()["best"] == 10
    # The far group left play at 9 seeds: its pairs keep the looks they had.
    pairs = {(p.a, p.b): p for p in rounds[-1].pairs}
    assert pairs[("far", "best")].looks[-1] == [9, 9] and pairs[("close", "best")].looks[-1] == [10, 10]


def test_a_close_pair_is_separated_once_enough_seeds_show_the_gap():
    rounds = simulate(lambda g, s: (1.0 if g == "b" else 0.0) + [0.0, 1.5, 0.5, 1.2, 0.3][s % 5], ["a", "b"])
    assert rounds[0].groups[0].verdict is SeedVerdict.OPEN
    assert rounds[-1].groups[0].verdict is SeedVerdict.SEPARATED
    assert 3 < rounds[-1].granted()["a"] < 10


def test_a_group_that_leaves_play_stays_out_when_the_best_changes():
    # Round 1 (3 seeds): far apart from a, b goes on with a; c is out of play once it got no seed.
    returns: dict[str, list[float | None]] = {"a": [10.0, 11.0, 12.0, 13.0, 14.0], "b": [0.0, 1.0, 2.0, 3.0, 4.0],
                                              "c": [20.0, 21.0, 22.0]}
    history = [{"a": 3, "b": 3, "c": 3}, {"a": 4, "b": 4, "c": 3}]
    decision = next_round(3, returns, history, AdaptiveSeeds(min=3, max=10))
    verdicts = {g.group: g.verdict for g in decision.groups}
    assert decision.best == "a"  # c has the highest mean but is out of play
    assert verdicts["c"] is SeedVerdict.STOPPED and not decision.groups[2].add
    pairs = {(p.a, p.b): p.looks for p in decision.pairs}
    assert pairs[("a", "c")] == [[3, 3]] and pairs[("a", "b")] == [[3, 3], [4, 4], [5, 5]]


def test_equal_within_a_margin_stops_a_group_whose_shift_is_shown_small():
    policy = AdaptiveSeeds(min=3, max=10, equal_within=50.0)
    rounds = simulate(lambda g, s: float(s % 4) + (0.5 if g == "b" else 0.0), ["a", "b"], policy)
    last = rounds[-1]
    assert last.done and last.granted()["a"] < 10
    assert [g.verdict for g in last.groups] == [SeedVerdict.EQUAL, SeedVerdict.BEST]
    assert last.pairs[0].equal and not last.pairs[0].separated and last.equal_within == 50.0
    # Without the margin the same returns run to max.
    assert simulate(lambda g, s: float(s % 4) + (0.5 if g == "b" else 0.0), ["a", "b"])[-1].granted()["a"] == 10
    # A margin the spread cannot show is never met.
    tight = AdaptiveSeeds(min=3, max=10, equal_within=0.1)
    assert not any(p.equal for r in simulate(lambda g, s: float(s % 4), ["a", "b"], tight) for p in r.pairs)


def test_decisions_are_deterministic_given_the_results():
    returns: dict[str, list[float | None]] = {"a": [1.0, 2.5, 0.7, 1.9], "b": [1.2, 2.0, 0.9, 2.4],
                                              "c": [5.0, 5.5, 4.0, 6.1]}
    history = [{"a": 3, "b": 3, "c": 3}]
    first = next_round(2, returns, history, POLICY)
    assert all(next_round(2, returns, history, POLICY) == first for _ in range(3))
    assert first.best == "c"


def test_a_group_whose_seeds_all_failed_gets_no_more_and_the_others_go_on():
    decision = next_round(1, {"a": [1.0, 2.0, 3.0], "b": [None, None, None]}, [], POLICY)
    assert decision.best == "a"
    assert [(g.verdict, g.add) for g in decision.groups] == [(SeedVerdict.BEST, False), (SeedVerdict.NO_RETURN, False)]
    assert decision.done


def test_a_group_with_one_return_is_open():
    decision = next_round(1, {"a": [1.0, 2.0, 3.0], "b": [0.0, None, None]}, [], POLICY)
    assert (decision.groups[1].verdict, decision.groups[1].add) == (SeedVerdict.OPEN, True)
    assert decision.granted() == {"a": 4, "b": 4}
    assert decision.pairs == []  # T needs two returns a side: the pair has no look yet


def test_the_explanation_says_what_was_decided_and_why():
    open_ = next_round(1, {"a": [1.0, 2.0, 3.0], "b": [1.5, 2.5, 0.5]}, [], POLICY)
    line = explain(open_)
    assert line.startswith("round 1: best a; b: open, P(best > it) = ")
    assert line.endswith("with 3 seeds (|T| = 0.612; no |T| can cross at error 0.05 yet, 1 look); one more seed to "
                         "a, b")
    done = next_round(1, {"a": [10.0 + i for i in range(7)], "b": [1.0 + i for i in range(7)]}, [],
                      AdaptiveSeeds(min=7, max=7))
    assert explain(done) == ("round 1: best a; b: separated, P(best > it) = 1.00 with 7 seeds (separated at error "
                             "0.05, 1 look, |T| = 3.13); done")


def test_a_record_from_before_the_sequential_test_still_reads_and_explains():
    old = ('{"schema": 2, "round": 1, "best": "a", "confidence": 0.95, "groups": [{"group": "a", "seeds": 3, '
           '"returns": 3, "mean": 2.0, "verdict": "best", "add": true}, {"group": "b", "seeds": 3, "returns": 3, '
           '"mean": 1.5, "p": 0.67, "low": 0.0, "high": 1.0, "verdict": "open", "add": true}]}\n')
    decision = SeedRound.model_validate_json(old)
    assert decision.pairs == [] and decision.test is None
    assert decided_by(decision) == "bootstrap interval of P(best > it)"
    assert explain(decision) == ("round 1: best a; b: open, P(best > it) = 0.67 [0.00, 1.00] with 3 seeds; "
                                 "one more seed to a, b")


RANK_TEST_LINE = (
    '{"schema": 2, "round": 3, "best": "a", "confidence": 0.95, "groups": [{"group": "a", "seeds": 5, "returns": 5, '
    '"mean": 12.0, "verdict": "best"}, {"group": "b", "seeds": 5, "returns": 5, "mean": 3.0, "p": 1.0, '
    '"verdict": "separated"}], "test": "group-sequential rank test, error 0.05 spent as alpha * ln(1 + (e - 1) t) '
    'over looks up to 10 seeds each, Holm over 1 pairs", "pairs": [{"a": "a", "b": "b", "looks": [[3, 3], [4, 4], '
    '[5, 5]], "u": 25.0, "d": 25.0, "boundaries": [null, null, 23.0], "level": 0.05, "separated": true}]}')


def test_a_record_of_the_rank_test_keeps_its_decision_and_the_report_names_that_test():
    decision = SeedRound.model_validate_json(RANK_TEST_LINE)
    assert decision.method is None and decision.pairs[0].t is None and decision.pairs[0].statistic == 25.0
    assert explain(decision) == ("round 3: best a; b: separated, P(best > it) = 1.00 with 5 seeds (separated at "
                                 "error 0.05, 3 looks, D = 25); done")
    [said] = verdicts([decision]).values()
    assert said.separated and said.words == "sequential rank test, round 3: separated at error 0.05, 3 looks, D = 25"
    assert "Round 3 was decided by the sequential exact rank test (D = |2U - n_a n_b|)" in to_markdown([decision])
    # A round decided now names its test, and the report says so.
    now = next_round(4, {"a": [10.0 + i for i in range(7)], "b": [1.0 + i for i in range(7)]},
                     [{"a": n, "b": n} for n in range(3, 7)], POLICY)
    method = "bounded Brunner-Munzel"
    assert now.method == method and json.loads(now.model_dump_json())["method"] == method
    [said] = verdicts([decision, now]).values()
    assert said.words.startswith("sequential bounded Brunner-Munzel test, round 4: separated at error 0.05")
    assert "Round 3 was decided by the sequential exact rank test" in to_markdown([decision, now])
    assert [decided_by(d) for d in (decision, now)] == ["sequential rank test",
                                                        "sequential bounded Brunner-Munzel test"]


UNBOUNDED_LINE = RANK_TEST_LINE.replace('"test": "group-sequential rank test', '"method": "Brunner-Munzel", "test": '
                                        '"group-sequential Brunner-Munzel test').replace(
    '"u": 25.0, "d": 25.0,', '"u": 0.0, "d": 25.0, "t": 50.0,').replace('[null, null, 23.0]', '[null, null, 8.13]')


def test_a_record_of_the_unbounded_brunner_munzel_test_keeps_its_decision_and_names_that_test():
    # Before its variance was floored, the test's |T| of a complete order of 5 vs 5 was 50, and it separated.
    decision = SeedRound.model_validate_json(UNBOUNDED_LINE)
    assert decision.method == "Brunner-Munzel" and decision.pairs[0].separated
    assert decided_by(decision) == "sequential Brunner-Munzel test"
    [said] = verdicts([decision]).values()
    assert said.separated and said.words == ("sequential Brunner-Munzel test, round 3: separated at error 0.05, "
                                             "3 looks, |T| = 50")


def test_the_record_reads_back_and_skips_a_line_cut_short(tmp_path):
    path = tmp_path / "seeds.jsonl"
    decision = next_round(1, {"a": [1.0, 2.0, 3.0], "b": [1.5, 2.5, 0.5]}, [], POLICY)
    append_line(path, decision)
    with open(path, "a") as fh:
        fh.write('{"schema": 2, "round": 2, "be')
    assert read_lines(path, SeedRound) == [decision]


# -- real sweeps ---------------------------------------------------------------------------------------


def adaptive_spec(tmp_path: Path, seeds: dict, twin: dict | None = None) -> Path:
    """The walker beside a twin: by default the same walker paying 1000 times the control cost, which ends
    every seed far below any of the walker's."""
    twin = twin or {"xml": str(TINY_XML), "env_kwargs": {"ctrl_cost_weight": 1000.0}}
    spec = {**TINY_SPEC, "name": "adaptive", "seeds": seeds, "total_timesteps": 256, "max_episode_steps": 50,
            "ppo": {"n_steps": 64, "batch_size": 32}, "eval": {"episodes": 2},
            "variants": [{"name": "walker", "xml": str(TINY_XML)}, {"name": "twin", **twin}]}
    return write_spec(tmp_path, spec)


def decisions(sweep: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep / "seeds.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_identical_variants_train_every_seed_up_to_max_and_resume_from_the_same_state(tmp_path):
    # The same XML twice: the same seed trains the same returns, so the pair is never separated.
    spec = adaptive_spec(tmp_path, {"min": 2, "max": 4, "until": "separated"}, twin={"xml": str(TINY_XML)})
    sweep = tmp_path / "runs" / "adaptive"
    dry = run_sweep("run", str(spec), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "adaptive seeds: 2 groups x 2 to 4 seeds: at least 4 runs, at most 8" in dry.stdout
    assert "cost: 4 to 8 runs (min to max seeds), 1,024 to 2,048 env steps" in dry.stdout
    assert not sweep.exists()

    done = run_sweep("run", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    first = decisions(sweep)
    assert [(d["round"], [(g["seeds"], g["verdict"], g["add"]) for g in d["groups"]]) for d in first] == [
        (1, [(2, "best", True), (2, "open", True)]),
        (2, [(3, "best", True), (3, "open", True)]),
        (3, [(4, "best", False), (4, "at max", False)])]
    assert "round 3: best walker; twin: at max" in done.stdout
    runs = sorted(p.name for p in sweep.iterdir() if (p / "spec.json").exists())
    assert len(runs) == 8

    # A launcher that died while the seeds of round 2 trained: round 3 was never decided.
    (sweep / "seeds.jsonl").write_text("".join(json.dumps(d) + "\n" for d in first[:2]))
    for seed_dir in [p for p in sweep.iterdir() if "_s3_" in p.name]:
        shutil.rmtree(seed_dir)
    again = run_sweep("run", str(spec))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "2 runs: 2 to run" in again.stdout
    assert decisions(sweep) == first

    # Nothing left to decide: a third invocation runs nothing and writes no line.
    third = run_sweep("run", str(spec))
    assert third.returncode == 0
    assert decisions(sweep) == first

    # The report says what was decided, in every format.
    table = run_sweep("report", str(sweep))
    assert "adaptive seeds, as decided: round 3: best walker; twin: at max, P(best > it) = 0.50" in table.stdout
    assert "adaptive seeds: rounds" in table.stdout, table.stdout
    assert re.search(r"│ 3 +│ walker +│ 4 best +│ 4 at max +│", table.stdout), table.stdout
    markdown = run_sweep("report", str(sweep), "--format", "md").stdout
    assert "## Adaptive seeds\n\n3 decisions, done; seeds per group: walker 4, twin 4." in markdown
    assert "- round 1: best walker; twin: open, P(best > it) = 0.50 with 2 seeds (|T| = 0; no |T| can cross at error " \
           "0.05 yet, 1 look); one more seed to walker, twin" in markdown
    as_json = json.loads(run_sweep("report", str(sweep), "--format", "json").stdout)
    assert as_json["seed_rounds"] == first
    # The verdict of a pair whose seeds were granted by looking is the sequential test's, not a one-look test's.
    compared = run_sweep("report", str(sweep), "--compare").stdout
    assert ("twin vs walker: not separated with 4 seeds each (sequential bounded Brunner-Munzel test, round 3: "
            "|T| = 0; no |T| can cross at error 0.05 yet, 3 looks") in compared
    assert run_sweep("report", str(sweep), "--format", "html").returncode == 0
    page = (sweep / "report.html").read_text()
    assert "<h2>adaptive seeds</h2>\n<p>3 decisions, done; seeds per group: walker 4, twin 4. " in page
    # the rounds as a table: each group's seeds at the round's look, its verdict, and whether it got one more
    assert ('<table class="rounds"><caption>rounds</caption><thead><tr><th>round</th><th>best</th><th>walker</th>'
            "<th>twin</th></tr>") in page
    assert "<tr><td>3</td><td>walker</td><td>4 best</td><td>4 at max</td></tr>" in page


def test_variants_far_apart_stop_at_min_and_slurm_is_refused(tmp_path):
    # 7 seeds each of at most 8: the first look has 0.05 ln(1 + (7/8) (e - 1)) = 0.046 of the error, and its
    # boundary, 2.65, is below a complete order's |T| (3.13) and below the 2.87 that the twin's 7 seeds give
    # (all but two of the 49 pairings below the walker's; at 6 seeds each, 34 of 36 are not enough).
    spec = adaptive_spec(tmp_path, {"min": 7, "max": 8})
    refused = run_sweep("run", str(spec), "--backend", "slurm")
    assert refused.returncode == 2
    assert "adaptive seeds add runs as results come in: use --backend local or ray, not slurm" in refused.stderr
    done = run_sweep("run", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = tmp_path / "runs" / "adaptive"
    [decision] = decisions(sweep)
    assert decision["round"] == 1 and not any(g["add"] for g in decision["groups"])
    assert len([p for p in sweep.iterdir() if (p / "spec.json").exists()]) == 14
    [pair] = decision["pairs"]
    assert pair["separated"] and pair["looks"] == [[7, 7]] and abs(pair["t"]) >= pair["boundaries"][0]


def test_the_example_config_validates_and_its_dry_run_says_what_it_may_cost(tmp_path):
    config = str(REPO / "configs" / "smoke_adaptive.yaml")
    assert run_sweep("validate", config).returncode == 0
    dry = run_sweep("run", config, "--dry-run", "--runs-dir", str(tmp_path))
    assert dry.returncode == 0, dry.stderr
    assert "adaptive seeds: 4 groups x 3 to 9 seeds: at least 12 runs, at most 36 (12 granted so far)" in dry.stdout
    assert "cost: 12 to 36 runs (min to max seeds), 49k to 147k env steps" in dry.stdout
    assert "cannot separate" not in dry.stderr  # max 9 is the least with a look that can, over 6 pairs
    assert list(tmp_path.iterdir()) == []
