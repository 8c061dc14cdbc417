"""Shipping a run dir from a node to the launcher: what the node deleted goes on the launcher's side too."""

from __future__ import annotations

from mjsweep.launchers.filesync import ChangeTracker, apply


def test_checkpoints_and_best_models_deleted_on_the_node_go_from_the_copy(tmp_path):
    node, copy = tmp_path / "node", tmp_path / "copy"
    for folder in ("checkpoints", "best"):
        (node / folder).mkdir(parents=True)
    (node / "checkpoints" / "model_100.zip").write_bytes(b"m100")
    (node / "best" / "model_100.zip").write_bytes(b"b100")
    (node / "best" / "best.json").write_text('{"timesteps": 100}')
    tracker = ChangeTracker(node)
    apply(copy, tracker.changes())
    assert (copy / "best" / "model_100.zip").read_bytes() == b"b100"

    (node / "checkpoints" / "model_100.zip").unlink()
    (node / "checkpoints" / "model_200.zip").write_bytes(b"m200")
    (node / "best" / "model_100.zip").unlink()
    (node / "best" / "model_200.zip").write_bytes(b"b200")
    (node / "best" / "best.json").write_text('{"timesteps": 200}')
    shipment = tracker.changes()
    # best.json after the model it names, as checkpoint.json after its model
    order = [chunk.path for chunk in shipment.chunks]
    assert order.index("best/model_200.zip") < order.index("best/best.json")
    apply(copy, shipment)
    assert sorted(p.name for p in (copy / "checkpoints").iterdir()) == ["model_200.zip"]
    assert sorted(p.name for p in (copy / "best").iterdir()) == ["best.json", "model_200.zip"]
