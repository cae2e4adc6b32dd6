"""The arithmetic world's training script: PRM labels sit on their step tags, its slices of the train split
are disjoint, bad counts are refused, a frozen trunk stays policy A's, --prm-init starts from a saved PRM, and
the fine-tuning stage equals a second run with --prm-init."""

from __future__ import annotations

import random

import pytest
import torch

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


@pytest.mark.parametrize("flag, value, message", [
    ("--prm-written", "0", "--prm-written must be at least 1; got 0"),
    ("--prm-lr", "0", "--prm-lr must be a positive learning rate such as 2e-3"),
    ("--prm-finetune-lr", "-1", "--prm-finetune-lr must be a positive learning rate such as 5e-4"),
    ("--prm-finetune-steps", "-5", "--prm-finetune-steps must be 0 (no fine-tuning) or more; got -5"),
    ("--prm-init", "no/such/prm", "--prm-init must be a saved PRM folder (with config.json)"),
])
def test_cli_refuses_bad_values_naming_the_flag(flag: str, value: str, message: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        train.main([flag, value, "--only", "prm"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def _tiny_prm_run(**kwargs):
    from transformers import AutoModelForCausalLM

    from uats_core.worlds.arith.modeling import POLICY_DIRS, ModelShape

    tok = build_tokenizer()
    policy_a = AutoModelForCausalLM.from_pretrained(POLICY_DIRS["A"])
    problems = world.load_split("train", 6)
    traces = [(p, world.solve(p, "A", 0.3, random.Random(i))[0]) for i, p in enumerate(problems[:4])]
    shape = ModelShape(hidden=policy_a.config.hidden_size, layers=policy_a.config.num_hidden_layers,
                       intermediate=policy_a.config.intermediate_size)
    prm = train.train_prm(tok, policy_a, traces, problems[4:], steps=3, shape=shape, seed=0, batch_size=4, **kwargs)
    return policy_a, prm


def test_freeze_trunk_trains_only_the_extra_layers_and_head() -> None:
    policy_a, prm = _tiny_prm_run(freeze_trunk=True)
    n_policy = policy_a.config.num_hidden_layers
    trunk = policy_a.model.state_dict()
    for name, value in prm.model.state_dict().items():
        if name in trunk and not name.startswith("norm."):  # embeddings and policy A's layers (the final norm learns)
            assert torch.equal(value, trunk[name]), name
    new_layer = prm.model.layers[n_policy]
    assert new_layer.mlp.down_proj.weight.abs().sum() > 0  # started at zero, so it learned


def test_prm_init_fine_tunes_the_saved_prm_not_policy_a() -> None:
    from transformers import AutoModelForTokenClassification

    from uats_core.worlds.arith.modeling import PRM_DIR

    saved = AutoModelForTokenClassification.from_pretrained(PRM_DIR).state_dict()
    policy_a, prm = _tiny_prm_run(freeze_trunk=True, init=PRM_DIR)  # frozen, so the trunk must stay the saved PRM's
    embed = prm.model.embed_tokens.weight
    assert torch.equal(embed, saved["model.embed_tokens.weight"])
    assert not torch.equal(embed, policy_a.model.embed_tokens.weight)  # the shipped PRM's embeddings moved off A's
    head = prm.score.weight
    assert not torch.equal(head, saved["score.weight"])  # and the unfrozen head learned


@pytest.mark.parametrize("finetune_problems", ["2", "4"])  # its own draw, and the first stage's draw reused
def test_finetune_stage_equals_a_second_run_with_prm_init(tmp_path, finetune_problems: str) -> None:
    from safetensors.torch import load_file

    from uats_core.worlds.arith.modeling import POLICY_DIRS

    small = ["--only", "prm", "--train-problems", "4", "--prm-problems", "4", "--prm-samples", "1",
             "--prm-written", "3", "--prm-steps", "2", "--prm-batch-size", "4"]
    dirs = {name: tmp_path / name for name in ("one", "first", "second")}
    for d in dirs.values():
        d.mkdir()
        for style in ("a", "b"):
            (d / f"arith-policy-{style}").symlink_to(POLICY_DIRS[style.upper()])
    finetune = ["--prm-steps", "3", "--prm-lr", "1e-3"]
    train.main(small + ["--out", str(dirs["one"]), "--prm-finetune-steps", "3", "--prm-finetune-lr", "1e-3",
                        "--prm-finetune-problems", finetune_problems])
    train.main(small + ["--out", str(dirs["first"])])
    train.main(small + ["--out", str(dirs["second"]), "--prm-init", str(dirs["first"] / "arith-prm"),
                        "--prm-problems", finetune_problems] + finetune)
    one, two = (load_file(dirs[n] / "arith-prm" / "model.safetensors") for n in ("one", "second"))
    first = load_file(dirs["first"] / "arith-prm" / "model.safetensors")
    assert one.keys() == two.keys()
    assert all(torch.equal(one[k], two[k]) for k in one)
    assert not all(torch.equal(one[k], first[k]) for k in one)  # the fine-tuning changed the PRM
