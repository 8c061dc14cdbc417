"""The one journaled base of trials.jsonl, confirm.jsonl, seeds.jsonl and pbt.jsonl (sweepdir/journal.py):
appended lines read back in order, a keyed record replayed to each key's latest line, a torn last line
skipped."""

from __future__ import annotations

from mjsweep.sweepdir import journal
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.lineage import SegmentRecord, segments
from mjsweep.sweepdir.models import TrialRecord, TrialState


def _trial(number: int, state: TrialState, value: float | None = None) -> TrialRecord:
    return TrialRecord(study="walker", number=number, params={"ppo.learning_rate": 1e-4}, runs=[f"t{number}_s0"],
                       state=state, value=value)


def test_a_keyed_journal_replays_each_keys_latest_line_in_the_order_first_asked(tmp_path):
    trials = journal.trials(SweepDir(tmp_path))
    written = [_trial(0, TrialState.RUNNING), _trial(1, TrialState.RUNNING), _trial(0, TrialState.COMPLETE, 2.5)]
    for record in written:
        trials.append(record)
    assert trials.lines() == written
    assert trials.replay() == [written[2], written[1]]


def test_a_torn_last_line_is_skipped_and_the_line_appended_after_it_is_read(tmp_path):
    folder = SweepDir(tmp_path)
    lines = segments(folder)
    first = SegmentRecord(population="walker", generation=0, member=0, run="a0", hyperparams={"ppo.gamma": 0.99})
    lines.append(first)
    with open(folder.pbt_jsonl, "a", encoding="utf-8") as fh:
        fh.write('{"population": "walker", "generat')  # a kill mid-write
    assert lines.lines() == [first]
    second = first.model_copy(update={"member": 1, "run": "b0"})
    lines.append(second)
    assert lines.lines() == [first, second]


def test_a_journal_not_written_yet_has_no_lines(tmp_path):
    folder = SweepDir(tmp_path)
    assert journal.seed_rounds(folder).lines() == [] and journal.confirmations(folder).replay() == []
