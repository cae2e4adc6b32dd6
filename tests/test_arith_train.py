"""The arithmetic world's training script: PRM labels sit on their step tags, and its slices of the train split are disjoint, and bad counts are refused."""

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


def test_prm_slices_are_disjoint_and_reach_past_the_policies_problems() -> None:
    policy, sampled, written = train.prm_slices(train_problems=50, prm_problems=40, prm_written=30)
    assert (len(policy), len(sampled), len(written)) == (50, 40, 30)
    assert not {p.id for p in sampled} & {p.id for p in written}
    assert [p.id for p in sampled] == [p.id for p in policy[:40]]  # sampled where the policy learned
    assert written[-1].id == world.load_split("train", 70)[-1].id  # the split grew to 70 for the written slice


def test_cli_refuses_a_zero_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        train.main(["--prm-written", "0", "--only", "prm"])
    assert exc.value.code == 2
    assert "--prm-written must be at least 1; got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        train.main(["--prm-lr", "0", "--only", "prm"])
    assert "--prm-lr must be a positive learning rate" in capsys.readouterr().err
