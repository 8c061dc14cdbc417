"""sweep.decide: what each run's folder holds decides its action and the reason execute acts on."""

from __future__ import annotations

from helpers.fake_sweep import make_run, result, run_spec
from mjsweep.engine.sweep import _decide_one
from mjsweep.plan.planned import Action, Reason
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.models import RunState


def test_each_kind_of_folder_gets_its_action_reason_and_note(tmp_path):
    sweep = SweepDir(tmp_path)
    new, done, failed, running, corrupt, no_result = (run_spec("v", seed) for seed in range(6))
    make_run(tmp_path, new)
    make_run(tmp_path, done, RunState.SUCCEEDED, result=result(1.0))
    make_run(tmp_path, failed, RunState.FAILED)
    sweep.run(failed.run_id).checkpoint_json.parent.mkdir()
    sweep.run(failed.run_id).checkpoint_json.write_text("{}")
    make_run(tmp_path, running, RunState.RUNNING)
    make_run(tmp_path, corrupt).status_json.write_text("{not json")
    make_run(tmp_path, no_result, RunState.SUCCEEDED)
    decided = {spec.run_id: _decide_one(spec, sweep.run(spec.run_id))
               for spec in (new, done, failed, running, corrupt, no_result)}
    assert [(p.action, p.reason, p.note) for p in decided.values()][:4] == [
        (Action.START, Reason.NEW, ""),
        (Action.SKIP, Reason.SUCCEEDED, "succeeded"),
        (Action.RESUME, Reason.ENDED, "failed"),
        (Action.START, Reason.LEFT_RUNNING, "left running by a launcher that is gone"),
    ]
    assert decided[corrupt.run_id].reason is Reason.CORRUPT and decided[corrupt.run_id].note.startswith("corrupt: ")
    assert (decided[no_result.run_id].action, decided[no_result.run_id].reason) == (Action.START, Reason.ENDED)
