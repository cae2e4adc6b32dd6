"""The arithmetic world's training script: PRM labels sit on their step tags, its slices of the train split
are disjoint, bad values are refused, a frozen trunk stays policy A's, --prm-init starts from a saved PRM,
the fine-tuning stages equal one run with --prm-init per stage, and the variance penalty lowers the PRM's
MC-dropout variance on its training steps."""

from __future__ import annotations

import random

import pytest
import torch

from uats.arith import train, training_loop
from uats_core.worlds.arith import solutions, world
from uats_core.worlds.arith.tokenizer import STEP_TAG, build_tokenizer


def test_prm_example_puts_each_steps_label_on_its_step_tag() -> None:
    tok = build_tokenizer()
    problem = world.load_split("train", 1)[0]
    steps, _ = solutions.solve(problem, "A")
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


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--prm-written", "0", "--prm-written must be at least 1; got 0"),
        ("--prm-lr", "0", "--prm-lr must be a positive learning rate such as 2e-3"),
        ("--prm-variance-penalty", "-1", "--prm-variance-penalty must be 0 (off) or more; got -1"),
        ("--prm-finetune", "1800", "argument --prm-finetune: takes STEPS:LR[:VARIANCE_PENALTY], such as 900:1e-3:20"),
        ("--prm-finetune", "900:fast", "argument --prm-finetune: takes STEPS:LR[:VARIANCE_PENALTY]"),
        ("--prm-finetune", "900:0", "needs at least 1 step, a positive learning rate and a penalty of 0 or more"),
        ("--prm-finetune", "900:1e-3:-2", "a penalty of 0 or more (STEPS:LR[:VARIANCE_PENALTY], such as 900:1e-3:20)"),
        ("--prm-init", "no/such/prm", "--prm-init must be a saved PRM folder (with config.json)"),
    ],
)
def test_cli_refuses_bad_values_naming_the_flag(
    flag: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        train.main([flag, value, "--only", "prm"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_finetune_stages_parse_with_an_optional_penalty() -> None:
    assert train.parse_finetune_stage("900:1e-3:20") == train.FinetuneStage(900, 1e-3, 20.0)
    assert train.parse_finetune_stage("1800:3e-3") == train.FinetuneStage(1800, 3e-3, 0.0)
    assert train.parse_finetune_stage("none") is None and train.parse_finetune_stage("0") is None


def _tiny_prm_run(**kwargs):
    from transformers import AutoModelForCausalLM

    from uats_core.worlds.arith.modeling import POLICY_DIRS, ModelShape

    tok = build_tokenizer()
    policy_a = AutoModelForCausalLM.from_pretrained(POLICY_DIRS["A"])
    problems = world.load_split("train", 6)
    traces = [(p, solutions.solve(p, "A", 0.3, random.Random(i))[0]) for i, p in enumerate(problems[:4])]
    shape = ModelShape(
        hidden=policy_a.config.hidden_size,
        layers=policy_a.config.num_hidden_layers,
        intermediate=policy_a.config.intermediate_size,
    )
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
def test_finetune_stages_equal_a_run_with_prm_init_per_stage(tmp_path, finetune_problems: str) -> None:
    from safetensors.torch import load_file

    from uats_core.worlds.arith.modeling import POLICY_DIRS

    small = [
        "--only",
        "prm",
        "--train-problems",
        "4",
        "--prm-problems",
        "4",
        "--prm-samples",
        "1",
        "--prm-written",
        "3",
        "--prm-steps",
        "2",
        "--prm-batch-size",
        "4",
    ]
    stages = ["3:1e-3", "2:5e-4:50"]  # the second with the variance penalty
    dirs = {name: tmp_path / name for name in ("one", "first", "second", "third")}
    for d in dirs.values():
        d.mkdir()
        for style in ("a", "b"):
            (d / f"arith-policy-{style}").symlink_to(POLICY_DIRS[style.upper()])
    train.main(
        small
        + [
            "--out",
            str(dirs["one"]),
            "--prm-finetune",
            stages[0],
            "--prm-finetune",
            stages[1],
            "--prm-finetune-problems",
            finetune_problems,
        ]
    )
    train.main(small + ["--out", str(dirs["first"]), "--prm-finetune", "none"])
    for before, after, stage in (("first", "second", stages[0]), ("second", "third", stages[1])):
        steps, lr, *penalty = stage.split(":")
        train.main(
            small
            + [
                "--out",
                str(dirs[after]),
                "--prm-init",
                str(dirs[before] / "arith-prm"),
                "--prm-problems",
                finetune_problems,
                "--prm-steps",
                steps,
                "--prm-lr",
                lr,
                "--prm-variance-penalty",
                penalty[0] if penalty else "0",
                "--prm-finetune",
                "none",
            ]
        )
    weights = {n: load_file(dirs[n] / "arith-prm" / "model.safetensors") for n in dirs}
    assert weights["one"].keys() == weights["third"].keys()
    assert all(torch.equal(weights["one"][k], weights["third"][k]) for k in weights["one"])
    for earlier in ("first", "second"):  # each stage changed the PRM
        assert not all(torch.equal(weights["one"][k], weights[earlier][k]) for k in weights["one"])


def test_two_pass_variance_is_the_sample_variance_of_the_two_passes_at_labelled_steps() -> None:
    logits = torch.randn(2 * 3, 5, 2)  # two passes over a batch of 3 sequences of 5 tokens
    labels = torch.full((3, 5), -100)
    labels[0, 1], labels[1, 4], labels[2, 0], labels[2, 3] = 1, 0, 1, 1
    probs = logits.softmax(-1)[..., 1].view(2, 3, 5)
    expected = probs.var(dim=0, unbiased=True)[labels >= 0].mean()
    assert torch.allclose(training_loop.two_pass_variance(logits, labels), expected)


def test_variance_penalty_lowers_the_prms_mc_variance_on_its_training_steps() -> None:
    """The penalty alone (the label loss switched off): its gradient through two dropout passes must bring
    the K=16 MC-dropout variance on the trained steps down. With the label loss on, a few steps on 4 traces
    saturate the PRM's probabilities, which lowers the variance whatever the penalty does."""
    from transformers import AutoModelForTokenClassification

    from uats_core.worlds.arith.modeling import PRM_DIR, PRM_SIDECAR, prm_step_scores

    tok = build_tokenizer()
    problems = world.load_split("train", 4)
    items = [(p.question, solutions.solve(p, "A", 0.3, random.Random(i))[0]) for i, p in enumerate(problems)]
    examples = [train.prm_example(tok, q, s, solutions.label_steps(p, s)) for p, (q, s) in zip(problems, items)]

    def mean_variance(prm) -> float:
        torch.manual_seed(0)
        return float(torch.cat([m.var(0) for m in prm_step_scores(prm, tok, items, k=16, p=0.1)]).mean())

    prm = AutoModelForTokenClassification.from_pretrained(PRM_DIR)
    before = mean_variance(prm)
    no_label_loss = lambda logits, labels: 0.0 * training_loop.cls_loss(logits, labels)  # noqa: E731
    training_loop.train_loop(
        prm,
        lambda epoch: examples,
        steps=30,
        batch_size=4,
        lr=1e-3,
        seed=0,
        pad=tok.pad_token_id,
        desc="PRM",
        loss_fn=no_label_loss,
        dropout_p=PRM_SIDECAR["dropout_p"],
        variance_penalty=100.0,
    )
    assert mean_variance(prm) < 0.5 * before
