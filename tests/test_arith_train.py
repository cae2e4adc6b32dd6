"""The arithmetic world's training script: PRM labels sit on their step tags, and bad flags are refused."""

from __future__ import annotations

import pytest

from uats_core.worlds.arith import train, world
from uats_core.worlds.arith.tokenizer import STEP_TAG, build_tokenizer


def test_prm_example_puts_each_steps_label_on_its_step_tag() -> None:
    tok = build_tokenizer()
    problem = world.load_split("train", 1)[0]
    steps, _ = world.solve(problem, "A")
    labels = [i % 2 == 0 for i in range(len(steps))]  # alternating, so a shifted label would show
    ids, lab = train.prm_example(tok, problem.question, steps, labels)
    tag = tok.convert_tokens_to_ids(STEP_TAG)
    tag_positions = [i for i, t in enumerate(ids) if t == tag]
    assert len(tag_positions) == len(steps)
    assert [lab[i] for i in tag_positions] == [int(x) for x in labels]
    assert all(y == -100 for i, y in enumerate(lab) if i not in tag_positions)  # no loss anywhere else


def test_cli_refuses_overlapping_prm_slices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        train.main(["--train-problems", "1000", "--prm-problems", "800", "--prm-written", "400", "--only", "prm"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--prm-problems (800) + --prm-written (400)" in err and "--train-problems (1000)" in err
